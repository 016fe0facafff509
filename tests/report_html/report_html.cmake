# The report's HTML page and its small traces (docs/report-html.md): unit tests of the page
# writer, the grammar's html= and trace-size= items, the step series, gzip and the size cap; and
# end-to-end runs checked by check_html.py — the .json.gz trace with its counter track, the size
# cap on a run of 10^6 ranges, the trace streamed during a run (on disk halfway, every range at
# the end under a recording limit of a quarter of them), the page and `nsightkit html`'s pages
# (ranks, compared, written again) loaded in headless Chromium (DOM, charts and console checked,
# screenshots kept in the build tree), and a page of 10^5 paths (its load time is printed; bench/RESULTS.md
# records it). Included from tests/CMakeLists.txt.
find_package(Python3 COMPONENTS Interpreter REQUIRED)

nsightkit_add_test(test_report_html SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_html.cpp
  NO_RECORDER)

add_executable(report_html_demo ${CMAKE_CURRENT_LIST_DIR}/html_demo.cpp)
target_link_libraries(report_html_demo PRIVATE nsightkit::nsightkit nsightkit_warnings)

find_program(NSK_CHROMIUM NAMES chromium chromium-browser google-chrome)
set(_nsk_html ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_html.py)
set(_nsk_html_dir ${CMAKE_CURRENT_BINARY_DIR}/report_html)
if(NSIGHTKIT_DISABLE)
  add_test(NAME report_html_trace COMMAND ${_nsk_html} trace --disabled
    --demo $<TARGET_FILE:report_html_demo> --dir ${_nsk_html_dir}/trace)
  set(_nsk_html_tests report_html_trace)
else()
  add_test(NAME report_html_trace COMMAND ${_nsk_html} trace
    --demo $<TARGET_FILE:report_html_demo> --dir ${_nsk_html_dir}/trace)
  add_test(NAME report_html_cap COMMAND ${_nsk_html} cap
    --demo $<TARGET_FILE:report_html_demo> --dir ${_nsk_html_dir}/cap)
  add_test(NAME report_html_stream COMMAND ${_nsk_html} stream
    --demo $<TARGET_FILE:report_html_demo> --dir ${_nsk_html_dir}/stream)
  set(_nsk_html_tests report_html_trace report_html_cap report_html_stream)
  set(_nsk_html_pages page scale)
  if(TARGET nsightkit_command)
    list(APPEND _nsk_html_pages tool)
  else()
    message(STATUS "nsightkit tests: report_html_tool needs the nsightkit command (NSIGHTKIT_BUILD_TOOLS=ON)")
  endif()
  foreach(what IN LISTS _nsk_html_pages)
    set(_nsk_html_command "")
    if(what STREQUAL "tool")
      set(_nsk_html_command --command $<TARGET_FILE:nsightkit_command>)
    endif()
    add_test(NAME report_html_${what} COMMAND ${_nsk_html} ${what}
      --demo $<TARGET_FILE:report_html_demo> --dir ${_nsk_html_dir}/${what}
      --chromium "${NSK_CHROMIUM}" ${_nsk_html_command})
    list(APPEND _nsk_html_tests report_html_${what})
    set_tests_properties(report_html_${what} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
  set_tests_properties(report_html_cap report_html_scale PROPERTIES TIMEOUT 600)
endif()
set_tests_properties(${_nsk_html_tests} PROPERTIES LABELS cpu FAIL_REGULAR_EXPRESSION "FAIL:"
  ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")

# The trace streamed to its file while the run goes on (its own process: the stream is the
# process's).
nsightkit_add_test(test_trace_stream SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_trace_stream.cpp
  NO_RECORDER LABELS tsan)
