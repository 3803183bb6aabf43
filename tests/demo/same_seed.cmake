# SPDX-License-Identifier: Apache-2.0
# The demo's workload is a pure function of its options: the same seed
# gives the same messages, byte for byte; another seed gives others.
foreach(run a b)
  execute_process(COMMAND ${DEMO} dump --intents 300 --seed 11
    OUTPUT_VARIABLE out_${run} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "chargeonce-demo dump failed: ${rc}")
  endif()
endforeach()
execute_process(COMMAND ${DEMO} dump --intents 300 --seed 12
  OUTPUT_VARIABLE out_c RESULT_VARIABLE rc)
string(LENGTH "${out_a}" len)
if(len LESS 10000)
  message(FATAL_ERROR "the workload is too short (${len} bytes)")
endif()
if(NOT out_a STREQUAL out_b)
  message(FATAL_ERROR "the same seed gave two different workloads")
endif()
if(out_a STREQUAL out_c)
  message(FATAL_ERROR "two seeds gave the same workload")
endif()
message(STATUS "same seed, same ${len} bytes; another seed, others")
