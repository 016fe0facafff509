# cmake -P driver for compiled_env (compiled.cmake): runs compiled_demo with NSIGHTKIT_REPORT set
# and nothing else — the compiled report starts from the environment and writes at exit — then
# checks the table and the summary name the paths of both translation units. In a NSIGHTKIT_DISABLE
# build it checks that nothing was written or printed.
#   -DDEMO=<exe> -DDIR=<scratch dir> -DMODE=enabled|disabled
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env --unset=OMPI_COMM_WORLD_RANK --unset=PMI_RANK --unset=SLURM_PROCID
          --unset=RANK --unset=LOCAL_RANK "NSIGHTKIT_REPORT=table=${DIR}/table.txt,json=${DIR}/summary.json"
          "${DEMO}"
  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
message("compiled_demo exited ${rc}; stderr:\n${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiled_demo failed")
endif()
if(MODE STREQUAL "disabled")
  if(EXISTS "${DIR}/table.txt" OR EXISTS "${DIR}/summary.json" OR NOT err STREQUAL "")
    message(FATAL_ERROR "a disabled build wrote or printed something")
  endif()
  return()
endif()
if(NOT err MATCHES "nsightkit report: wrote ${DIR}/table.txt \\(table\\), ${DIR}/summary.json")
  message(FATAL_ERROR "compiled_demo did not say it wrote the table and the summary at exit")
endif()
file(READ "${DIR}/table.txt" table)
message("${table}")
foreach(needle "\nstep 0 " "\n  forward " "\n    layer1 " "\n      attention 1:heads " "\n  backward 0.0 ")
  string(FIND "${table}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the table lacks '${needle}'")
  endif()
endforeach()
file(READ "${DIR}/summary.json" summary)
foreach(path "step 2/forward/layer0/attention 0:heads" "step 2/backward 1.0")
  string(FIND "${summary}" "\"${path}\"" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the summary lacks the path '${path}'")
  endif()
endforeach()
