# tf.train.Example and TFRecord input (docs/formats.md, "tf.train.Example").
#
# example.proto is compiled by protoc into <build>/gen/shoal/data/example.pb.{h,cc}, so code
# includes "shoal/data/example.pb.h" like any other header of the layer. (<build>/shoal is the CLI
# binary, hence the gen/ root.) The generated code is its own small library, shoal_example_proto,
# which shoal_data links PUBLIC through DATA_DEPS: that carries the include directory and
# protobuf::libprotobuf to everything that links shoal_data.
shoal_proto_library(shoal_example_proto shoal/data/example.proto)

list(APPEND DATA_HDRS example_codec.h example_encoder.h example_parser.h tfrecord_source.h)
list(APPEND DATA_SRCS example_codec.cc example_encoder.cc example_parser.cc tfrecord_source.cc)
list(APPEND DATA_TESTS example_codec_test.cc example_encoder_test.cc example_parser_test.cc
     tfrecord_source_test.cc)
list(APPEND DATA_DEPS shoal_example_proto protobuf::libprotobuf absl::flat_hash_map)

if(SHOAL_BUILD_TESTS)
  # Test-only helper for example_compat_test.py: decodes/writes TFRecords of Examples as JSON.
  add_executable(data_example_tool ${CMAKE_CURRENT_LIST_DIR}/example_tool.cc)
  target_link_libraries(data_example_tool PRIVATE shoal_data)
  set_target_properties(data_example_tool PROPERTIES OUTPUT_NAME example_tool)

  # Compatibility with TensorFlow itself (the PyPI package, in a virtualenv that
  # scripts/python-env.sh keeps up to date). The first run installs it, hence the long timeout.
  add_test(NAME data_example_compat
           COMMAND bash -c "py=$(\"$0\") && exec \"$py\" -m pytest -q -p no:cacheprovider \"$1\""
                   ${PROJECT_SOURCE_DIR}/scripts/python-env.sh
                   ${CMAKE_CURRENT_LIST_DIR}/example_compat_test.py)
  set_tests_properties(data_example_compat PROPERTIES
    ENVIRONMENT "SHOAL_EXAMPLE_TOOL=$<TARGET_FILE:data_example_tool>"
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    LABELS "data;python"
    TIMEOUT 1200)
endif()
