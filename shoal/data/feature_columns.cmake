# Feature columns (numeric, hashed, vocabulary, identity, bucketized, crossed, embedding, wide,
# indicator), MurmurHash3 for feature ids, and the synthetic Criteo-like CTR data generator.
list(APPEND DATA_HDRS murmur3.h feature_column.h categorical_column.h feature_set.h
     ctr_generator.h)
list(APPEND DATA_SRCS murmur3.cc feature_column.cc categorical_column.cc feature_set.cc
     ctr_generator.cc)
list(APPEND DATA_TESTS murmur3_test.cc categorical_column_test.cc
     ctr_generator_test.cc)
list(APPEND DATA_CONCURRENCY_TESTS feature_set_test.cc)  # has a threaded test: runs under TSan too
