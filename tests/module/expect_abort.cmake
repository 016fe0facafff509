# Runs PROGRAM with ARG and passes only when it ended abnormally (not exit status 0, and not the
# program's own failure statuses 1 and 2) and its stderr holds EXPECT: an API given bad input in a
# -fno-exceptions build names the error and aborts instead of throwing.
execute_process(COMMAND ${PROGRAM} ${ARG} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc STREQUAL "0" OR rc STREQUAL "1" OR rc STREQUAL "2")
  message(FATAL_ERROR "'${ARG}' exited with status ${rc} instead of aborting:\n${out}${err}")
endif()
string(FIND "${err}" "${EXPECT}" at)
if(at LESS 0)
  message(FATAL_ERROR "'${ARG}' ended with '${rc}' but stderr lacks \"${EXPECT}\":\n${err}")
endif()
message(STATUS "'${ARG}' aborted (${rc}) with: ${err}")
