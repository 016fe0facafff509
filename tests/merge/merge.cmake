# The merge of per-rank report files (`nsightkit merge`, the merge the MPI component uses): unit
# tests on crafted per-rank summaries and traces with known numbers, and a run on the real files
# of two report_demo processes (RANK=0 and RANK=1). Paths are taken from this file's directory so
# that the file works wherever it is include()d.
find_package(Python3 COMPONENTS Interpreter REQUIRED)

# The documented reader of the report files for notebooks and scripts (the Python package's
# report_file module, python/nsightkit/report_file.py): valid, old and future files, broken ones,
# the component rule.
add_test(NAME merge_report_reader
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/test_report_reader.py
          --reader ${CMAKE_CURRENT_LIST_DIR}/../../python/nsightkit/report_file.py)
set(_nsk_merge_tests merge_report_reader)

if(TARGET nsightkit_command)
  add_test(NAME merge_unit
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/test_merge.py
            --command $<TARGET_FILE:nsightkit_command> --checker ${CMAKE_CURRENT_LIST_DIR}/../check_trace.py)
  if(NSIGHTKIT_DISABLE)
    set(_nsk_merge_mode disabled)
  else()
    set(_nsk_merge_mode enabled)
  endif()
  add_test(NAME merge_demo_files
    COMMAND ${CMAKE_COMMAND} -DDEMO=$<TARGET_FILE:report_demo> -DPYTHON=${Python3_EXECUTABLE}
            -DCOMMAND=$<TARGET_FILE:nsightkit_command> -DCHECKER=${CMAKE_CURRENT_LIST_DIR}/../check_trace.py
            -DDIR=${CMAKE_CURRENT_BINARY_DIR}/merge_demo_files -DMODE=${_nsk_merge_mode}
            -P ${CMAKE_CURRENT_LIST_DIR}/run_merge_demo.cmake)
  list(APPEND _nsk_merge_tests merge_unit merge_demo_files)
else()
  message(STATUS "nsightkit tests: merge_unit and merge_demo_files need the nsightkit command "
                 "(NSIGHTKIT_BUILD_TOOLS=ON)")
endif()

set_tests_properties(${_nsk_merge_tests} PROPERTIES LABELS cpu)
if(DEFINED NSIGHTKIT_TEST_ENV_MOD)
  set_tests_properties(${_nsk_merge_tests} PROPERTIES ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")
endif()
