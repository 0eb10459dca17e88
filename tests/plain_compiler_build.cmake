# Builds SOURCE with nothing but `COMPILER -std=c++17 -pthread -I INCLUDE_DIR` and runs it:
# the include path must be the whole installation.
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${COMPILER} -std=c++17 -pthread -I ${INCLUDE_DIR} ${SOURCE} -o ${WORK_DIR}/app
                RESULT_VARIABLE build_result)
if(NOT build_result EQUAL 0)
  message(FATAL_ERROR "plain build failed: ${build_result}")
endif()
execute_process(COMMAND ${WORK_DIR}/app RESULT_VARIABLE run_result)
if(NOT run_result EQUAL 0)
  message(FATAL_ERROR "plain build runs but fails: ${run_result}")
endif()
