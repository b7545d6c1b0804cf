# tf.train.Example and TFRecord input (docs/formats.md, "tf.train.Example").
#
# example.proto is compiled by protoc into <build>/gen/shoal/data/example.pb.{h,cc}, so code
# includes "shoal/data/example.pb.h" like any other header of the layer. (<build>/shoal is the CLI
# binary, hence the gen/ root.) The generated code is its own small library, shoal_example_proto,
# which shoal_data links PUBLIC through DATA_DEPS: that carries the include directory and
# protobuf::libprotobuf to everything that links shoal_data.
find_package(Protobuf REQUIRED)

set(EXAMPLE_PROTO_GEN_DIR ${PROJECT_BINARY_DIR}/gen)
set(EXAMPLE_PROTO_PB_H ${EXAMPLE_PROTO_GEN_DIR}/shoal/data/example.pb.h)
set(EXAMPLE_PROTO_PB_CC ${EXAMPLE_PROTO_GEN_DIR}/shoal/data/example.pb.cc)
add_custom_command(
  OUTPUT ${EXAMPLE_PROTO_PB_H} ${EXAMPLE_PROTO_PB_CC}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${EXAMPLE_PROTO_GEN_DIR}
  COMMAND protobuf::protoc --cpp_out=${EXAMPLE_PROTO_GEN_DIR} -I ${PROJECT_SOURCE_DIR}
          ${PROJECT_SOURCE_DIR}/shoal/data/example.proto
  DEPENDS ${PROJECT_SOURCE_DIR}/shoal/data/example.proto protobuf::protoc
  COMMENT "protoc shoal/data/example.proto"
  VERBATIM)

add_library(shoal_example_proto STATIC ${EXAMPLE_PROTO_PB_CC} ${EXAMPLE_PROTO_PB_H})
# SYSTEM: compilers and clang-tidy judge our code, not protoc's output (its headers would trip
# bugprone-reserved-identifier and -Wextra).
target_include_directories(shoal_example_proto SYSTEM PUBLIC
                           $<BUILD_INTERFACE:${EXAMPLE_PROTO_GEN_DIR}>)
target_link_libraries(shoal_example_proto PUBLIC protobuf::libprotobuf)
# Generated code: its warnings are protoc's business, not ours.
target_compile_options(shoal_example_proto PRIVATE -w)

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
