# shoal_proto_library(<target> <path/to/file.proto relative to the repo root>)
#
# Compiles one .proto with protoc into <build>/gen/<same path>.pb.{h,cc}, so code includes
# "shoal/<layer>/<name>.pb.h" like any other header of its layer (<build>/shoal is the CLI binary,
# hence the gen/ root), and builds it as a small static library <target> that links
# protobuf::libprotobuf. The include directory is SYSTEM and the code is built with -w: compilers
# and clang-tidy judge our code, not protoc's output. gRPC services are not generated here.
find_package(Protobuf REQUIRED)

function(shoal_proto_library target proto)
  set(gen_dir ${PROJECT_BINARY_DIR}/gen)
  string(REGEX REPLACE "\\.proto$" "" stem ${proto})
  set(pb_h ${gen_dir}/${stem}.pb.h)
  set(pb_cc ${gen_dir}/${stem}.pb.cc)
  add_custom_command(
    OUTPUT ${pb_h} ${pb_cc}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen_dir}
    COMMAND protobuf::protoc --cpp_out=${gen_dir} -I ${PROJECT_SOURCE_DIR}
            ${PROJECT_SOURCE_DIR}/${proto}
    DEPENDS ${PROJECT_SOURCE_DIR}/${proto} protobuf::protoc
    COMMENT "protoc ${proto}"
    VERBATIM)
  add_library(${target} STATIC ${pb_cc} ${pb_h})
  target_include_directories(${target} SYSTEM PUBLIC $<BUILD_INTERFACE:${gen_dir}>)
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf)
  target_compile_options(${target} PRIVATE -w)
endfunction()
