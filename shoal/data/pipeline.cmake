# The parallel pipeline: task sources, the batcher, the pipeline itself.
list(APPEND DATA_HDRS batcher.h pipeline.h task_source.h)
list(APPEND DATA_SRCS batcher.cc pipeline.cc task_source.cc)
list(APPEND DATA_TESTS task_source_test.cc)
list(APPEND DATA_CONCURRENCY_TESTS pipeline_test.cc)
