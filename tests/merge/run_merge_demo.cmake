# cmake -P driver: runs report_demo as two ranks (RANK=0, RANK=1) with a summary and a trace each,
# merges the four files with `nsightkit merge` and checks the result: both ranks in the
# table, the merged trace valid (tests/check_trace.py) with one process per rank on one time line,
# and the merged JSON's per-rank totals equal to each rank's own summary. In a NSIGHTKIT_DISABLE
# build the demo writes nothing, and the merge must say so clearly (exit 2).
#   -DDEMO=<exe> -DPYTHON=<python3> -DCOMMAND=<nsightkit> -DCHECKER=<check_trace.py>
#   -DDIR=<scratch dir> -DMODE=enabled|disabled
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}/ranks" "${DIR}/merged")
foreach(rank 0 1)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env --unset=OMPI_COMM_WORLD_RANK --unset=PMI_RANK --unset=SLURM_PROCID
            --unset=LOCAL_RANK --unset=NVTX_INJECTION64_PATH
            "NSIGHTKIT_REPORT=json=${DIR}/ranks/summary.json,trace=${DIR}/ranks/trace.json" RANK=${rank} "${DEMO}"
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  message("report_demo as rank ${rank} exited ${rc}; stderr:\n${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "report_demo failed as rank ${rank}")
  endif()
endforeach()

set(merge_cmd "${COMMAND}" merge "${DIR}/ranks" --trace "${DIR}/merged/trace.json"
    --json "${DIR}/merged/summary.json" --csv "${DIR}/merged/summary.csv" --per-rank)
execute_process(COMMAND ${merge_cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE err)
message("nsightkit merge exited ${rc}; stdout:\n${table}\nstderr:\n${err}")

if(MODE STREQUAL "disabled")
  file(GLOB written "${DIR}/ranks/*" "${DIR}/merged/*")
  if(written)
    message(FATAL_ERROR "a disabled build wrote ${written}")
  endif()
  if(NOT rc EQUAL 2 OR NOT err MATCHES "^nsightkit merge: error: no nsightkit summary or trace among the inputs")
    message(FATAL_ERROR "merging an empty directory must fail with one clear message and exit 2")
  endif()
  return()
endif()

if(NOT rc EQUAL 0 OR err MATCHES "warning")
  message(FATAL_ERROR "the merge of two real rank files failed or warned")
endif()
foreach(needle "nsightkit merged report: 2 ranks (0, 1)" "rank 0" "rank 1" "\nforward " "\n  block0 "
               "\n    attention " "capture-window steps" "marks:\n  checkpoint: 2 on every rank" "stragglers (CPU time)")
  string(FIND "${table}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the merged table lacks '${needle}'")
  endif()
endforeach()
if(NOT table MATCHES "\nforward +2/2 +20 ")
  message(FATAL_ERROR "the merged table does not show forward on both ranks with 20 calls")
endif()
if(NOT err MATCHES "merged/trace.json \\(trace of rank\\(s\\) 0, 1, aligned\\)")
  message(FATAL_ERROR "the two ranks' traces (one host, steady clock) were not aligned")
endif()

execute_process(COMMAND "${PYTHON}" "${CHECKER}" "${DIR}/merged/trace.json" --expect-thread-name trainer
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the merged trace failed the independent check")
endif()
file(READ "${DIR}/merged/trace.json" trace)
string(JSON ranks GET "${trace}" otherData ranks)
if(NOT ranks MATCHES "^\\[ *0 *, *1 *\\]$")
  message(FATAL_ERROR "the merged trace has ranks ${ranks}, expected [0, 1]")
endif()
foreach(rank 0 1)
  string(FIND "${trace}" "\"name\":\"process_sort_index\",\"pid\":${rank},\"tid\":0,\"ts\":0,\"args\":{\"sort_index\":${rank}}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the merged trace has no process_sort_index for rank ${rank}")
  endif()
endforeach()

# The merged per-rank totals of "backward" are each rank's own.
function(row_total doc path out)
  string(JSON n LENGTH "${doc}" paths)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON p GET "${doc}" paths ${i} path)
    if(p STREQUAL path)
      string(JSON t GET "${doc}" paths ${i} total_ns)
      set(${out} "${t}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "no path ${path}")
endfunction()
file(READ "${DIR}/merged/summary.json" merged)
string(JSON n LENGTH "${merged}" paths)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON p GET "${merged}" paths ${i} path)
  if(p STREQUAL "backward")
    foreach(rank 0 1)
      string(JSON got GET "${merged}" paths ${i} cpu per_rank ${rank} total_ns)
      file(READ "${DIR}/ranks/summary.rank${rank}.json" own)
      row_total("${own}" backward want)
      if(NOT got STREQUAL want)
        message(FATAL_ERROR "merged backward total of rank ${rank} is ${got}, the rank's summary says ${want}")
      endif()
    endforeach()
    return()
  endif()
endforeach()
message(FATAL_ERROR "no backward row in the merged summary")
