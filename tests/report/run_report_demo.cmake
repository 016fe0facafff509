# cmake -P driver for the report's end-to-end test: runs report_demo with NSIGHTKIT_REPORT set
# (the report enables itself from the environment and writes at exit), then checks every file
# with the independent checker (tests/check_trace.py). In a NSIGHTKIT_DISABLE build it checks
# that nothing at all was written.
#   -DDEMO=<exe> -DPYTHON=<python3> -DCHECKER=<check_trace.py> -DDIR=<scratch dir> -DMODE=enabled|disabled
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
set(spec "table=${DIR}/table.txt,json=${DIR}/summary.json,csv=${DIR}/summary.csv,trace=${DIR}/trace.json,threads")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env --unset=OMPI_COMM_WORLD_RANK --unset=PMI_RANK --unset=SLURM_PROCID
          --unset=LOCAL_RANK "NSIGHTKIT_REPORT=${spec}" RANK=3 "${DEMO}"
  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
message("report_demo exited ${rc}; stderr:\n${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "report_demo failed")
endif()
set(files "${DIR}/trace.rank3.json" "${DIR}/summary.rank3.json" "${DIR}/summary.rank3.csv" "${DIR}/table.rank3.txt")
if(MODE STREQUAL "disabled")
  execute_process(COMMAND "${PYTHON}" "${CHECKER}" --absent ${files} "${DIR}/trace.json" "${DIR}/summary.json"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
    message(FATAL_ERROR "a disabled build wrote or printed something")
  endif()
  return()
endif()
if(NOT err MATCHES "nsightkit report: wrote ${DIR}/table.rank3.txt \\(table\\), ${DIR}/summary.rank3.json")
  message(FATAL_ERROR "report_demo did not say which files it wrote")
endif()
execute_process(
  COMMAND "${PYTHON}" "${CHECKER}" "${DIR}/trace.rank3.json" --summary "${DIR}/summary.rank3.json"
          --csv "${DIR}/summary.rank3.csv" --expect-pid 3 --expect-thread-name trainer --expect-thread-name loader
          --expect-path forward/block1/attention --expect-path backward "--expect-path=load batch/decode \"jpeg\""
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the report's files failed the independent check")
endif()
file(READ "${DIR}/table.rank3.txt" table)
message("${table}")
foreach(needle "nsightkit report (rank 3, pid" "\nforward " "\n  block0 " "\n    attention "
               "capture-window steps (every step of every window): 20 steps" "thread " "start/end ranges" "checkpoint: 2")
  string(FIND "${table}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the table lacks '${needle}'")
  endif()
endforeach()
