# The parallel pipeline: task sources, the reader dispatch, the batcher, the pipeline itself.
# Needs the text_sources and example groups (record_reader.cc opens their readers).
list(APPEND DATA_HDRS batcher.h ctr_features.h pipeline.h record_reader.h task_progress.h
     task_source.h)
list(APPEND DATA_SRCS batcher.cc ctr_features.cc pipeline.cc record_reader.cc task_progress.cc
     task_source.cc)
list(APPEND DATA_TESTS batcher_test.cc task_progress_test.cc task_source_test.cc)
list(APPEND DATA_CONCURRENCY_TESTS ctr_pipeline_test.cc pipeline_test.cc)
