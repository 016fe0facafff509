# The merge of per-rank report files (tools/nsightkit_merge.py): unit tests on crafted
# per-rank summaries and traces with known numbers, and a run on the real files of two report_demo
# processes (RANK=0 and RANK=1). Paths are taken from this file's directory so that the file works
# wherever it is include()d.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(_nsk_merge_tool ${CMAKE_CURRENT_LIST_DIR}/../../tools/nsightkit_merge.py)

add_test(NAME merge_unit
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/test_merge.py
          --merge ${_nsk_merge_tool} --checker ${CMAKE_CURRENT_LIST_DIR}/../check_trace.py)

if(NSIGHTKIT_DISABLE)
  set(_nsk_merge_mode disabled)
else()
  set(_nsk_merge_mode enabled)
endif()
add_test(NAME merge_demo_files
  COMMAND ${CMAKE_COMMAND} -DDEMO=$<TARGET_FILE:report_demo> -DPYTHON=${Python3_EXECUTABLE}
          -DMERGE=${_nsk_merge_tool} -DCHECKER=${CMAKE_CURRENT_LIST_DIR}/../check_trace.py
          -DDIR=${CMAKE_CURRENT_BINARY_DIR}/merge_demo_files -DMODE=${_nsk_merge_mode}
          -P ${CMAKE_CURRENT_LIST_DIR}/run_merge_demo.cmake)

# The one reader of the report files (tools/nsightkit_report.py), which the merge, the checkers
# and the examples' scripts use: valid, old and future files, broken ones, the component rule.
add_test(NAME merge_report_reader
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/test_report_reader.py
          --reader ${CMAKE_CURRENT_LIST_DIR}/../../tools/nsightkit_report.py)

set_tests_properties(merge_unit merge_demo_files merge_report_reader PROPERTIES LABELS cpu)
if(DEFINED NSIGHTKIT_TEST_ENV_MOD)
  set_tests_properties(merge_unit merge_demo_files merge_report_reader PROPERTIES
    ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")
endif()
