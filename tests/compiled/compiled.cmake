# Compiled once per program (docs/compile-cost.md): what nsightkit::nsightkit gives its users —
# translation units in the compiled mode (NSIGHTKIT_COMPILED) and libnsightkit — against the plain
# -I mode (header-only). Checked: a two-TU program with the report in-process (snapshot, every
# output, the grammar's errors), started by NSIGHTKIT_REPORT and written at exit; that its objects
# hold none of the report engine's, {fmt}'s formatting or NVTX's code (while the same translation
# unit header-only does); the start-up linked into a program that calls nothing of nsightkit (raw
# NVTX only), and left out with NSIGHTKIT_REPORT_NO_AUTOSTART or NSIGHTKIT_DISABLE on the target;
# a static library and the executable over it linking libnsightkit once; and the range, module,
# pool and graph tests again header-only (every other test runs in the compiled mode).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
if(NSIGHTKIT_DISABLE)
  set(_nsk_compiled_mode disabled)
else()
  set(_nsk_compiled_mode enabled)
endif()

# The header-only counterparts: every NVTX call and every name made in the test's own translation
# units, the Recorder must see the same calls.
if(NOT NSIGHTKIT_TEST_HEADER_ONLY)
  nsightkit_add_test(test_range_header_only SOURCES range/test_range.cpp HEADER_ONLY)
  nsightkit_add_test(test_module_header_only SOURCES module/test_module.cpp alloc_counter.cpp
    HEADER_ONLY)
  if(TARGET CUDA::cudart)
    nsightkit_add_test(test_pinned_header_only SOURCES pinned/test_pinned.cpp HEADER_ONLY
      LABELS cuda LIBRARIES CUDA::cudart)
    nsightkit_add_test(test_graph_header_only SOURCES graph/test_graph.cpp NO_RECORDER HEADER_ONLY
      LABELS cuda LIBRARIES CUDA::cudart)
    nsightkit_add_gpu_test(test_pinned_gpu_header_only SOURCES pinned/test_pinned_gpu.cu HEADER_ONLY)
  endif()
endif()

add_library(compiled_demo_objects OBJECT compiled/compiled_main.cpp compiled/compiled_work.cpp)
target_link_libraries(compiled_demo_objects PRIVATE nsightkit::nsightkit nsightkit_warnings)
add_executable(compiled_demo $<TARGET_OBJECTS:compiled_demo_objects>)
target_link_libraries(compiled_demo PRIVATE nsightkit::nsightkit)

add_test(NAME compiled_api COMMAND compiled_demo api)
set_tests_properties(compiled_api PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "^ok\n$"
  ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD};NSIGHTKIT_REPORT=unset:")
add_test(NAME compiled_env
  COMMAND ${CMAKE_COMMAND} -DDEMO=$<TARGET_FILE:compiled_demo> -DDIR=${CMAKE_CURRENT_BINARY_DIR}/compiled_env
          -DMODE=${_nsk_compiled_mode} -P ${CMAKE_CURRENT_SOURCE_DIR}/compiled/run_compiled_env.cmake)
set_tests_properties(compiled_env PROPERTIES LABELS cpu ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")

# A static library over nsightkit and the executable that links it and nsightkit::nsightkit.
add_library(compiled_static_lib STATIC compiled/static_lib.cpp)
target_link_libraries(compiled_static_lib PRIVATE nsightkit::nsightkit nsightkit_warnings)
add_executable(compiled_static_main compiled/static_main.cpp)
target_link_libraries(compiled_static_main PRIVATE compiled_static_lib nsightkit::nsightkit
  nsightkit_warnings)
add_test(NAME compiled_static_library COMMAND compiled_static_main)
set_tests_properties(compiled_static_library PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "^ok\n$"
  ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD};NSIGHTKIT_REPORT=unset:")

if(NOT NSIGHTKIT_TEST_HEADER_ONLY)
  # Raw NVTX calls only: the report reads NSIGHTKIT_REPORT all the same (the start-up is linked);
  # not with NSIGHTKIT_REPORT_NO_AUTOSTART on the target, nor in a disabled build.
  add_executable(compiled_raw_nvtx compiled/raw_nvtx_main.cpp)
  add_executable(compiled_raw_nvtx_no_autostart compiled/raw_nvtx_main.cpp)
  target_compile_definitions(compiled_raw_nvtx_no_autostart PRIVATE NSIGHTKIT_REPORT_NO_AUTOSTART)
  foreach(program IN ITEMS compiled_raw_nvtx compiled_raw_nvtx_no_autostart)
    target_link_libraries(${program} PRIVATE nsightkit::nsightkit nsightkit_warnings)
    add_test(NAME ${program} COMMAND ${program})
    set_tests_properties(${program} PROPERTIES LABELS cpu
      ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD};NSIGHTKIT_REPORT=set:table")
  endforeach()
  if(NSIGHTKIT_DISABLE)
    set_tests_properties(compiled_raw_nvtx PROPERTIES FAIL_REGULAR_EXPRESSION "nsightkit")
  else()
    set_tests_properties(compiled_raw_nvtx PROPERTIES PASS_REGULAR_EXPRESSION "\nraw step [^\n]*\n  raw work ")
  endif()
  set_tests_properties(compiled_raw_nvtx_no_autostart PROPERTIES FAIL_REGULAR_EXPRESSION "nsightkit")
endif()

# NSIGHTKIT_DISABLE on the program's own target: nothing of the engine, NVTX or dlopen is linked.
add_executable(compiled_disabled_program compiled/disabled_main.cpp $<TARGET_OBJECTS:disabled_object>)
target_compile_definitions(compiled_disabled_program PRIVATE NSIGHTKIT_DISABLE)
target_link_libraries(compiled_disabled_program PRIVATE nsightkit::nsightkit nsightkit_warnings)
add_test(NAME compiled_disabled_program_links_no_engine
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/check_disabled_object.py
          --program $<TARGET_FILE:compiled_disabled_program>)
set_tests_properties(compiled_disabled_program_links_no_engine PROPERTIES LABELS cpu)

if(NOT NSIGHTKIT_DISABLE AND NOT NSIGHTKIT_TEST_HEADER_ONLY AND CMAKE_NM)
  # The same umbrella translation unit header-only: the check must find the engine there.
  add_library(compiled_header_only_object OBJECT compiled/compiled_main.cpp)
  target_link_libraries(compiled_header_only_object PRIVATE nsightkit_test_header_only nsightkit_warnings)
  add_test(NAME compiled_objects
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/compiled/check_compiled_objects.py
            ${CMAKE_NM} --compiled $<TARGET_OBJECTS:compiled_demo_objects>
    COMMAND_EXPAND_LISTS)
  add_test(NAME compiled_objects_header_only
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/compiled/check_compiled_objects.py
            ${CMAKE_NM} --header-only $<TARGET_OBJECTS:compiled_header_only_object>)
  set_tests_properties(compiled_objects compiled_objects_header_only PROPERTIES LABELS cpu)
endif()
