# cmake -DPROGRAM=<dsconv_bench> -DEXPECTED=<n> -P count_listed.cmake
# Fails unless `PROGRAM --benchmark_list_tests` lists exactly EXPECTED benchmarks.
execute_process(COMMAND ${PROGRAM} --benchmark_list_tests OUTPUT_VARIABLE listed RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --benchmark_list_tests exited with ${rc}")
endif()
string(REGEX MATCHALL "[^\n]+" names "${listed}")
list(LENGTH names count)
if(NOT count EQUAL EXPECTED)
  message(FATAL_ERROR "${PROGRAM} lists ${count} benchmarks, expected ${EXPECTED}")
endif()
message(STATUS "${count} benchmarks listed")
