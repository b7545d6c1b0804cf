# Content-based record splits: HoldoutFilter, a RecordReader keeping one side of a seeded
# holdout (e.g. an 80/20 train/eval split of one CSV).
list(APPEND DATA_HDRS split_reader.h)
list(APPEND DATA_SRCS split_reader.cc)
list(APPEND DATA_TESTS split_reader_test.cc)
