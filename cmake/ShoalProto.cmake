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

# shoal_grpc_library(<target> <path/to/file.proto> MESSAGES <shoal_proto_library target>)
#
# The gRPC service code of a .proto whose messages <MESSAGES> already builds (shoal_proto_library):
# grpc_cpp_plugin writes <build>/gen/<same path>.grpc.pb.{h,cc}, built as <target>, which links
# the messages and gRPC::grpc++. gRPC headers may appear only under shoal/rpc/grpc/
# (scripts/check_layers.py), so only that folder calls this; the messages stay transport-neutral.
# gRPC comes from Debian's CMake config (libgrpc++-dev ships one); found here, at the top-level
# scope, so its imported targets are visible to every directory that links a gRPC target.
find_package(gRPC CONFIG)

function(shoal_grpc_library target proto)
  cmake_parse_arguments(G "" "MESSAGES" "" ${ARGN})
  if(NOT gRPC_FOUND)
    message(FATAL_ERROR "shoal_grpc_library(${target}): gRPC not found (scripts/install-deps.sh "
                        "installs libgrpc++-dev and protobuf-compiler-grpc)")
  endif()
  set(gen_dir ${PROJECT_BINARY_DIR}/gen)
  string(REGEX REPLACE "\\.proto$" "" stem ${proto})
  set(grpc_h ${gen_dir}/${stem}.grpc.pb.h)
  set(grpc_cc ${gen_dir}/${stem}.grpc.pb.cc)
  add_custom_command(
    OUTPUT ${grpc_h} ${grpc_cc}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen_dir}
    COMMAND protobuf::protoc --grpc_out=${gen_dir}
            --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin> -I ${PROJECT_SOURCE_DIR}
            ${PROJECT_SOURCE_DIR}/${proto}
    DEPENDS ${PROJECT_SOURCE_DIR}/${proto} protobuf::protoc gRPC::grpc_cpp_plugin
    COMMENT "grpc_cpp_plugin ${proto}"
    VERBATIM)
  add_library(${target} STATIC ${grpc_cc} ${grpc_h})
  target_link_libraries(${target} PUBLIC ${G_MESSAGES} gRPC::grpc++)
  target_compile_options(${target} PRIVATE -w)
endfunction()
