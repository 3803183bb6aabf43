# SPDX-License-Identifier: Apache-2.0
# Helpers shared by every CMakeLists.txt of the project.

# co_unit_test(NAME SOURCES a.c b.c LIBS x y)
#   a cmocka test binary, registered with ctest under the label `unit`.
function(co_unit_test name)
  cmake_parse_arguments(A "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_LIBS} PkgConfig::CMOCKA)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 120)
endfunction()

# co_integration_test(NAME [SOURCES ...] [LIBS ...] [COMMAND ...] [LABEL l]
#                     [TIMEOUT s])
#   a test that needs the real services started by tests/harness/with-services
#   (it reads CHARGEONCE_TEST_PG / CHARGEONCE_TEST_KAFKA). Without them it
#   exits 77, which ctest reports as skipped, and scripts/test.sh refuses a
#   run with skipped tests. With SOURCES a binary is built; COMMAND overrides
#   what runs (e.g. a shell script).
function(co_integration_test name)
  cmake_parse_arguments(A "" "LABEL;TIMEOUT" "SOURCES;LIBS;COMMAND" ${ARGN})
  if(NOT A_LABEL)
    set(A_LABEL integration)
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  if(A_SOURCES)
    add_executable(${name} ${A_SOURCES})
    target_link_libraries(${name} PRIVATE ${A_LIBS} co_testenv)
  endif()
  if(NOT A_COMMAND)
    set(A_COMMAND ${name})
  endif()
  set(_env "CHARGEONCE_BIN=$<TARGET_FILE:chargeonce>"
    "CHARGEONCE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  if(TARGET chargeonce-gatewaysim)
    list(APPEND _env "CHARGEONCE_SIM_BIN=$<TARGET_FILE:chargeonce-gatewaysim>")
  endif()
  add_test(NAME ${name} COMMAND ${A_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS ${A_LABEL}
    TIMEOUT ${A_TIMEOUT} SKIP_RETURN_CODE 77 ENVIRONMENT "${_env}")
endfunction()

# Add every immediate subdirectory of `dir` that has a CMakeLists.txt, so a
# new module or test folder needs no edit of a shared file.
function(co_add_subdirs dir)
  file(GLOB _children RELATIVE ${dir} ${dir}/*)
  list(SORT _children)
  foreach(c ${_children})
    if(IS_DIRECTORY ${dir}/${c} AND EXISTS ${dir}/${c}/CMakeLists.txt)
      add_subdirectory(${dir}/${c})
    endif()
  endforeach()
endfunction()

# co_case_tests(BINARY PREFIX CASES a b ... [ARGS x ...] [LABEL l]
#               [TIMEOUT s])
#   a test binary built on tests/common/cases.h (a table of named cases):
#   one ctest test PREFIX<case> per case, running `BINARY <case> ARGS...`
#   with co_integration_test's label, timeout and environment.
#   Properties of one case (RUN_SERIAL...) are set on its test afterwards.
function(co_case_tests binary prefix)
  cmake_parse_arguments(A "" "LABEL;TIMEOUT" "CASES;ARGS" ${ARGN})
  set(_opts)
  if(A_LABEL)
    list(APPEND _opts LABEL ${A_LABEL})
  endif()
  if(A_TIMEOUT)
    list(APPEND _opts TIMEOUT ${A_TIMEOUT})
  endif()
  foreach(c ${A_CASES})
    co_integration_test(${prefix}${c} COMMAND ${binary} ${c} ${A_ARGS}
      ${_opts})
  endforeach()
  co_case_registered(${binary} ${A_CASES})
endfunction()

# co_compact_tests(BINARY PREFIX CASES a b ... [TIMEOUT s])
#   cases of BINARY run again as PREFIX<case>_compact with the payments'
#   own results stored compact (migration 0028): the environment variable
#   CHARGEONCE_TEST_COMPACT_RESULTS=1, read by tests/common/scenario.c.
function(co_compact_tests binary prefix)
  cmake_parse_arguments(A "" "TIMEOUT" "CASES" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  foreach(c ${A_CASES})
    co_integration_test(${prefix}${c}_compact COMMAND ${binary} ${c}
      TIMEOUT ${A_TIMEOUT})
    set_property(TEST ${prefix}${c}_compact APPEND PROPERTY ENVIRONMENT
      CHARGEONCE_TEST_COMPACT_RESULTS=1)
  endforeach()
endfunction()

# co_case_registered(BINARY CASE...)
#   cases of BINARY registered by hand (a command line of their own) or
#   left out of this build on purpose: known to co_case_check.
function(co_case_registered binary)
  set_property(GLOBAL APPEND PROPERTY CO_CASES_${binary} ${ARGN})
endfunction()

# co_case_check(BINARY)
#   a unit test, cases_registered_BINARY: `BINARY --list` names exactly the
#   cases registered for it, so that a case added to the C table and not to
#   CMake (or the other way round) fails instead of never running.
function(co_case_check binary)
  get_property(_cases GLOBAL PROPERTY CO_CASES_${binary})
  string(REPLACE ";" "," _want "${_cases}")
  add_test(NAME cases_registered_${binary}
    COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:${binary}> -DWANT=${_want}
      -P ${PROJECT_SOURCE_DIR}/cmake/check_cases.cmake)
  set_tests_properties(cases_registered_${binary} PROPERTIES LABELS unit
    TIMEOUT 60)
endfunction()
