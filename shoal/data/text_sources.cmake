# Text sources: the line reader (byte-range tasks over text files) and the CSV/TSV, Criteo and
# libsvm record parsers. Included by shoal/data/CMakeLists.txt.
list(APPEND DATA_HDRS line_reader.h csv_parser.h criteo_parser.h libsvm_parser.h number_parse.h)
list(APPEND DATA_SRCS line_reader.cc csv_parser.cc criteo_parser.cc libsvm_parser.cc
     number_parse.cc)
list(APPEND DATA_TESTS line_reader_test.cc csv_parser_test.cc criteo_parser_test.cc
     libsvm_parser_test.cc number_parse_test.cc)
