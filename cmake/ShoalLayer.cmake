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

  shoal_layer_tests(NAME ${L_NAME} TESTS ${L_TESTS} DEPS ${L_TEST_DEPS} LABELS ${L_TEST_LABELS})
endfunction()

# shoal_layer_tests(NAME <layer> TESTS <x_test.cc>... [DEPS <target>...] [LABELS <label>...])
#
# More gtest binaries for a layer, e.g. with LABELS concurrency: tests that run threads, which
# scripts/test.sh builds and runs a second time under ThreadSanitizer.
function(shoal_layer_tests)
  cmake_parse_arguments(T "" "NAME" "TESTS;DEPS;LABELS" ${ARGN})
  if(NOT SHOAL_BUILD_TESTS)
    return()
  endif()
  foreach(test_src ${T_TESTS})
    get_filename_component(test_name ${test_src} NAME_WE)
    set(test_target ${T_NAME}_${test_name})
    add_executable(${test_target} ${test_src})
    target_link_libraries(${test_target} PRIVATE shoal_${T_NAME} ${T_DEPS}
                          GTest::gtest GTest::gmock GTest::gtest_main)
    add_test(NAME ${test_target} COMMAND ${test_target})
    set_tests_properties(${test_target} PROPERTIES
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} LABELS "${T_NAME};${T_LABELS}")
  endforeach()
endfunction()

# shoal_pytest(NAME <test> SCRIPT <file.py> [LABELS <label>...] [ENVIRONMENT <VAR=value>...]
#              [VENV <name> REQUIREMENTS <requirements.txt>])
#
# A ctest running a pytest file with the test virtualenv's python (scripts/python-env.sh creates
# or updates it from scripts/requirements-test.txt; the first run installs it, hence the long
# timeout). VENV and REQUIREMENTS give the test a virtualenv of its own instead,
# ~/.cache/shoal/<name> built from that file (e.g. the Spark tests' pyspark: VENV venv-spark
# REQUIREMENTS scripts/requirements-spark.txt). Labelled "python" as well, so `ctest -LE python`
# skips these.
function(shoal_pytest)
  cmake_parse_arguments(P "" "NAME;SCRIPT;VENV;REQUIREMENTS" "LABELS;ENVIRONMENT" ${ARGN})
  if(NOT SHOAL_BUILD_TESTS)
    return()
  endif()
  set(venv_setup "")
  if(P_VENV)
    if(NOT P_REQUIREMENTS)
      message(FATAL_ERROR "shoal_pytest(${P_NAME}): VENV needs REQUIREMENTS")
    endif()
    # Set here, not inherited: a SHOAL_VENV exported for the main virtualenv must not receive
    # these requirements.
    set(venv_setup "export SHOAL_VENV=\"\${HOME:-/tmp}/.cache/shoal/${P_VENV}\" \
SHOAL_REQUIREMENTS=\"${P_REQUIREMENTS}\" && ")
  endif()
  add_test(NAME ${P_NAME}
           COMMAND bash -c "${venv_setup}py=$(\"$0\") && exec \"$py\" -m pytest -q -p no:cacheprovider \"$1\""
                   ${PROJECT_SOURCE_DIR}/scripts/python-env.sh ${P_SCRIPT})
  set_tests_properties(${P_NAME} PROPERTIES
    ENVIRONMENT "${P_ENVIRONMENT}"
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    LABELS "${P_LABELS};python"
    TIMEOUT 1200)
endfunction()
