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

  # Compatibility with TensorFlow itself (the PyPI package, in the test virtualenv).
  shoal_pytest(NAME data_example_compat SCRIPT ${CMAKE_CURRENT_LIST_DIR}/example_compat_test.py
               LABELS data ENVIRONMENT "SHOAL_EXAMPLE_TOOL=$<TARGET_FILE:data_example_tool>")
endif()
