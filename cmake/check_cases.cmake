# SPDX-License-Identifier: Apache-2.0
# cmake -DBIN=test-binary -DWANT=a,b,c -P check_cases.cmake
# Fails unless `BIN --list` prints exactly the cases WANT names (in any
# order): the ctest tests registered for a binary of named cases
# (co_case_check in chargeonce.cmake).
cmake_policy(SET CMP0007 NEW)
execute_process(COMMAND ${BIN} --list OUTPUT_VARIABLE _out
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${BIN} --list failed (${_rc})")
endif()
string(REPLACE "\n" ";" _have "${_out}")
list(REMOVE_ITEM _have "")
string(REPLACE "," ";" _want "${WANT}")
list(REMOVE_DUPLICATES _want)
set(_missing ${_have})
if(_want)
  list(REMOVE_ITEM _missing ${_want})
endif()
set(_unknown ${_want})
if(_have)
  list(REMOVE_ITEM _unknown ${_have})
endif()
if(_missing OR _unknown)
  message(FATAL_ERROR "${BIN}: cases with no ctest test: ${_missing}; "
    "ctest tests of no case: ${_unknown}")
endif()
list(LENGTH _have _n)
message("${_n} cases, each registered")
