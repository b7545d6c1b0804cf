# shoal_layer(NAME <layer>
#             SRCS <file.cc>...          sources of the library (omit for header-only)
#             HDRS <file.h>...           public headers (installed as shoal/<layer>/...)
#             DEPS <target>...           libraries this layer links (other layers by name)
#             TESTS <x_test.cc>...       one gtest binary per file, each registered with ctest
#             TEST_DEPS <target>...      extra libraries for the tests only
#             TEST_LABELS <label>...)    ctest labels, e.g. "slow"
#
# Declares the CMake target shoal_<layer>. Includes are rooted at the repository top, so code
# writes #include "shoal/<layer>/<file>.h". scripts/check_layers.py enforces which layer may
# include which; DEPS here must agree with it.
function(shoal_layer)
  cmake_parse_arguments(L "" "NAME" "SRCS;HDRS;DEPS;TESTS;TEST_DEPS;TEST_LABELS" ${ARGN})
  set(target shoal_${L_NAME})
  if(L_SRCS)
    add_library(${target} STATIC ${L_SRCS} ${L_HDRS})
    target_include_directories(${target} PUBLIC
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<INSTALL_INTERFACE:include>)
    target_link_libraries(${target} PUBLIC ${L_DEPS})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<INSTALL_INTERFACE:include>)
    target_link_libraries(${target} INTERFACE ${L_DEPS})
  endif()
  add_library(shoal::${L_NAME} ALIAS ${target})
  install(FILES ${L_HDRS} DESTINATION include/shoal/${L_NAME})

  if(SHOAL_BUILD_TESTS)
    foreach(test_src ${L_TESTS})
      get_filename_component(test_name ${test_src} NAME_WE)
      set(test_target ${L_NAME}_${test_name})
      add_executable(${test_target} ${test_src})
      target_link_libraries(${test_target} PRIVATE ${target} ${L_TEST_DEPS}
                            GTest::gtest GTest::gmock GTest::gtest_main)
      add_test(NAME ${test_target} COMMAND ${test_target})
      set_tests_properties(${test_target} PROPERTIES
        WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} LABELS "${L_NAME};${L_TEST_LABELS}")
    endforeach()
  endif()
endfunction()
