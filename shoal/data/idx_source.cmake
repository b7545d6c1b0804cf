# IDX images (MNIST, Fashion-MNIST) as pipeline records: the reader of an images/labels file pair
# and the parser of its records (the `fashion_mnist` input format). Needs the pipeline group
# (record readers).
list(APPEND DATA_HDRS idx_source.h)
list(APPEND DATA_SRCS idx_source.cc)
list(APPEND DATA_TESTS idx_source_test.cc)
