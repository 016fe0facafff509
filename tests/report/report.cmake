# The in-process report (include/nsightkit/report.hpp): unit tests, concurrency (label tsan), one
# report per process across shared libraries, the end-to-end run from NSIGHTKIT_REPORT checked by
# an independent parser, bad environment values, GPU fail-soft without a driver, and GPU timing on
# a device (label gpu).
nsightkit_add_test(test_report SOURCES report/test_report.cpp report/test_report_spellings.cpp NO_RECORDER)
nsightkit_add_test(test_report_threads SOURCES report/test_report_threads.cpp NO_RECORDER LABELS tsan)
nsightkit_add_test(test_report_clock SOURCES report/test_report_clock.cpp NO_RECORDER LABELS tsan)
nsightkit_add_test(test_owner_lock SOURCES report/test_owner_lock.cpp NO_RECORDER LABELS tsan)
# One thread recording 10^8 ranges: memory bounded by its paths (label cpu: kept out of the
# ThreadSanitizer suite, where it would take minutes).
nsightkit_add_test(test_report_memory_bound SOURCES report/test_report_memory_bound.cpp NO_RECORDER)

if(NSIGHTKIT_DISABLE)
  set(_nsk_report_mode disabled)
else()
  set(_nsk_report_mode enabled)
endif()

# ---- end to end: NSIGHTKIT_REPORT at startup, files at exit, checked by tests/check_trace.py ----
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_executable(report_demo report/report_demo.cpp)
target_link_libraries(report_demo PRIVATE nsightkit::nsightkit nsightkit_warnings Threads::Threads)
add_test(NAME report_env_files
  COMMAND ${CMAKE_COMMAND} -DDEMO=$<TARGET_FILE:report_demo> -DPYTHON=${Python3_EXECUTABLE}
          -DCHECKER=${CMAKE_CURRENT_SOURCE_DIR}/check_trace.py -DDIR=${CMAKE_CURRENT_BINARY_DIR}/report_env_files
          -DMODE=${_nsk_report_mode} -P ${CMAKE_CURRENT_SOURCE_DIR}/report/run_report_demo.cmake)
set_tests_properties(report_env_files PROPERTIES LABELS cpu ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")

# scripts/gpu/compare_cupti_ncu.py (the judge of the CUPTI numbers against ncu on the GPU machine)
# on crafted inputs: kernels a library's thread launched, counted for the range that made their
# stream current, against ncu's kernels outside every range.
add_test(NAME compare_cupti_ncu
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/report/test_compare_cupti_ncu.py
          --script ${PROJECT_SOURCE_DIR}/scripts/gpu/compare_cupti_ncu.py)
set_tests_properties(compare_cupti_ncu PROPERTIES LABELS cpu)

# A table on stderr at exit, from the environment alone.
add_test(NAME report_env_table COMMAND ${CMAKE_COMMAND} -E env NSIGHTKIT_REPORT=table $<TARGET_FILE:report_demo>)
# A bad value: one message naming the variable and the bad item; the report stays off.
add_test(NAME report_env_bad COMMAND ${CMAKE_COMMAND} -E env "NSIGHTKIT_REPORT=table, trace=t.json ,tabel"
  $<TARGET_FILE:report_demo>)
if(_nsk_report_mode STREQUAL "enabled")
  set_tests_properties(report_env_table PROPERTIES
    PASS_REGULAR_EXPRESSION "nsightkit report \\(pid [0-9]+\\): .*\nforward .*\n  block0 ")
  set_tests_properties(report_env_bad PROPERTIES
    PASS_REGULAR_EXPRESSION "nsightkit: NSIGHTKIT_REPORT='table, trace=t.json ,tabel': unknown item 'tabel'; expected a comma-separated list of: .* The report stays off\\."
    FAIL_REGULAR_EXPRESSION "nsightkit report \\(|wrote")
else()
  # Disabled: the variable is not even read; nothing is printed.
  set_tests_properties(report_env_table report_env_bad PROPERTIES FAIL_REGULAR_EXPRESSION "nsightkit")
endif()
set_tests_properties(report_env_table report_env_bad PROPERTIES LABELS cpu
  ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")

# ---- one report per process across shared libraries (docs/design.md, global state) ----
if(UNIX AND NOT APPLE)
  foreach(plugin IN ITEMS linked loaded loaded2)
    add_library(nsk_report_plugin_${plugin} SHARED report/report_plugin.cpp)
    target_link_libraries(nsk_report_plugin_${plugin} PRIVATE nsightkit::nsightkit nsightkit_warnings)
    set_target_properties(nsk_report_plugin_${plugin} PROPERTIES CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON)
  endforeach()
  nsightkit_add_test(test_report_dso SOURCES report/test_report_dso.cpp NO_RECORDER
    LIBRARIES nsk_report_plugin_linked ${CMAKE_DL_LIBS})
  target_compile_definitions(test_report_dso PRIVATE
    NSK_REPORT_PLUGIN="$<TARGET_FILE:nsk_report_plugin_loaded>")
  add_dependencies(test_report_dso nsk_report_plugin_loaded)

  # A host without nsightkit loading two RTLD_LOCAL plugins: unified where the compiler emits unique
  # symbols (GCC), otherwise the second copy must detect the first and stay off.
  add_executable(report_plain_host report/report_plain_host.cpp)
  target_link_libraries(report_plain_host PRIVATE nsightkit_warnings ${CMAKE_DL_LIBS})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_definitions(report_plain_host PRIVATE NSK_EXPECT_UNIFIED=1)
  else()
    target_compile_definitions(report_plain_host PRIVATE NSK_EXPECT_UNIFIED=0)
  endif()
  add_dependencies(report_plain_host nsk_report_plugin_loaded nsk_report_plugin_loaded2)
  add_test(NAME report_plain_host COMMAND report_plain_host $<TARGET_FILE:nsk_report_plugin_loaded>
    $<TARGET_FILE:nsk_report_plugin_loaded2>)
  set_tests_properties(report_plain_host PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "\nok\n|^ok\n|disabled build: nothing enabled"
    FAIL_REGULAR_EXPRESSION "FAIL")
endif()

# ---- CUDA: fail-soft without a driver (CPU test), GPU times on a device ----
if(TARGET CUDA::cudart)
  nsightkit_add_test(test_report_cuda SOURCES report/test_report_cuda.cpp NO_RECORDER LABELS cuda
    LIBRARIES CUDA::cudart)
endif()
nsightkit_add_gpu_test(test_report_gpu SOURCES report/test_report_gpu.cu NO_RECORDER)

# ---- a hostile environment: fork, bad output paths, runaway nesting, bad text, messages ----
nsightkit_add_test(test_report_robust SOURCES report/test_report_robust.cpp NO_RECORDER)

# The table at exit comes after the program's own buffered output, and the thread that exits is
# not listed as exited.
add_executable(report_exit report/report_exit.cpp)
target_link_libraries(report_exit PRIVATE nsightkit::nsightkit nsightkit_warnings)
add_test(NAME report_exit_order
  COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:report_exit> -DMODE=${_nsk_report_mode}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/report/run_report_exit.cmake)
set_tests_properties(report_exit_order PROPERTIES LABELS cpu ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")

# ---- GPU work attributed to ranges (the cupti source's attribution, fed synthetic records) ----
nsightkit_add_test(test_gpu_attribution SOURCES report/test_gpu_attribution.cpp NO_RECORDER LABELS tsan)

# ---- the CUPTI component: falls back cleanly without a driver; measures on a device ----
if(TARGET nsightkit::cupti)
  add_executable(report_cupti_demo report/report_cupti_demo.cpp)
  target_link_libraries(report_cupti_demo PRIVATE nsightkit::cupti nsightkit_warnings)
  add_test(NAME report_cupti_auto COMMAND ${CMAKE_COMMAND} -E env NSIGHTKIT_REPORT=table,gpu=auto
    $<TARGET_FILE:report_cupti_demo>)
  add_test(NAME report_cupti_fallback COMMAND ${CMAKE_COMMAND} -E env NSIGHTKIT_REPORT=table,gpu=cupti
    $<TARGET_FILE:report_cupti_demo>)
  add_dependencies(nsightkit_cuda_tests report_cupti_demo)
  set_tests_properties(report_cupti_auto report_cupti_fallback PROPERTIES LABELS cuda TIMEOUT 60
    ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")
  if(_nsk_report_mode STREQUAL "enabled")
    # Without a device CUPTI cannot collect: gpu=auto says nothing about it (nothing to measure),
    # gpu=cupti says why in one line and events take over; the run goes on either way. With a
    # device the table has the CUPTI lines.
    set_tests_properties(report_cupti_auto PROPERTIES
      PASS_REGULAR_EXPRESSION "cupti: no CUDA driver/device|GPU \\(cupti: "
      FAIL_REGULAR_EXPRESSION "CUPTI cannot be used here \\(no CUDA driver")
    set_tests_properties(report_cupti_fallback PROPERTIES
      PASS_REGULAR_EXPRESSION "nsightkit report: CUPTI cannot be used here \\(no CUDA driver/device|GPU \\(cupti: ")
  endif()
  if(TARGET CUDA::cublas)
    nsightkit_add_gpu_test(test_cupti_gpu SOURCES report/test_cupti_gpu.cu NO_RECORDER
      LIBRARIES nsightkit::cupti CUDA::cublas)
  endif()
endif()

# nvcc at -O3 over every report output, warnings as errors (compiled only).
if(NSIGHTKIT_HAVE_CUDA_LANGUAGE)
  add_library(report_nvcc_o3 OBJECT report/report_nvcc_o3.cu)
  target_link_libraries(report_nvcc_o3 PRIVATE nsightkit::nsightkit nsightkit_warnings)
  target_compile_options(report_nvcc_o3 PRIVATE -O3)
endif()

# ---- long jobs: signals, requested captures, snapshots, SIGKILL, strict mode (docs/long-jobs.md) ----
# report_signals_demo records in several threads until a signal ends it; run_long_jobs.py sends the
# signals and checks every output (with tests/check_trace.py), the exit status and the program's
# own handler. One ctest per case.
if(UNIX AND NOT APPLE AND _nsk_report_mode STREQUAL "enabled")
  add_executable(report_signals_demo report/report_signals_demo.cpp)
  target_link_libraries(report_signals_demo PRIVATE nsightkit::nsightkit nsightkit_warnings Threads::Threads)
  target_compile_definitions(report_signals_demo PRIVATE NSIGHTKIT_REPORT_NO_AUTOSTART)
  add_dependencies(nsightkit_tsan_tests report_signals_demo)
  foreach(case IN ITEMS sigterm sigint sigusr1 handler-before handler-after second-signal
                        write-in-progress trigger-signal trigger-file snapshots sigkill fork ignored
                        strict)
    add_test(NAME report_long_jobs_${case}
      COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/report/run_long_jobs.py
              --demo $<TARGET_FILE:report_signals_demo> --checker ${CMAKE_CURRENT_SOURCE_DIR}/check_trace.py
              --dir ${CMAKE_CURRENT_BINARY_DIR}/report_long_jobs ${case})
    # Label tsan: the clang ThreadSanitizer suite runs them too (no race, no hang).
    set_tests_properties(report_long_jobs_${case} PROPERTIES LABELS "cpu;tsan" TIMEOUT 300
      PASS_REGULAR_EXPRESSION "ok ${case}" FAIL_REGULAR_EXPRESSION "FAIL|Traceback"
      ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")
  endforeach()
endif()

# ---- a days-long run's memory (docs/long-jobs.md): flat once warmed up, outputs exact ----
if(UNIX AND NOT APPLE AND _nsk_report_mode STREQUAL "enabled")
  add_executable(report_memory_demo report/report_memory_demo.cpp)
  target_link_libraries(report_memory_demo PRIVATE nsightkit::nsightkit nsightkit_warnings)
  foreach(case IN ITEMS aggregate stream)
    add_test(NAME report_memory_${case}
      COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/report/run_memory.py
              --demo $<TARGET_FILE:report_memory_demo> --dir ${CMAKE_CURRENT_BINARY_DIR}/report_memory ${case})
    set_tests_properties(report_memory_${case} PROPERTIES LABELS cpu TIMEOUT 1500 RUN_SERIAL TRUE
      PASS_REGULAR_EXPRESSION "ok memory ${case}" FAIL_REGULAR_EXPRESSION "FAIL|Traceback"
      ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")
  endforeach()
endif()

# The pieces for long jobs in one process: grammar, rank names, the process claim, start/end names
# capped, GPU busy folding (the signals themselves: run_long_jobs.py above).
nsightkit_add_test(test_report_jobs SOURCES report/test_report_jobs.cpp NO_RECORDER)

# SIGTERM to a CUDA program measured by CUPTI: the records flushed and written, on a device.
if(TARGET nsightkit::cupti AND NSIGHTKIT_HAVE_CUDA_LANGUAGE AND _nsk_report_mode STREQUAL "enabled")
  add_executable(report_signals_gpu_demo report/report_signals_gpu_demo.cu)
  target_link_libraries(report_signals_gpu_demo PRIVATE nsightkit::cupti nsightkit_warnings CUDA::cudart)
  target_include_directories(report_signals_gpu_demo PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  nsightkit_add_gpu_test(test_report_signals_gpu SOURCES report/test_report_signals_gpu.cu NO_RECORDER)
  if(TARGET test_report_signals_gpu)
    target_compile_definitions(test_report_signals_gpu PRIVATE
      NSK_DEMO="$<TARGET_FILE:report_signals_gpu_demo>" NSK_TEST_OUT="${CMAKE_CURRENT_BINARY_DIR}")
    add_dependencies(test_report_signals_gpu report_signals_gpu_demo)
  endif()
endif()

# ---- Kineto's schema (trace-schema=kineto), read by Holistic Trace Analysis (HTA, from PyPI) ----
# report_kineto_demo writes traces of faked GPU work (tests/fake_cupti_source.hpp) at exact times,
# streamed and from memory; run_hta.py checks them, loads them with HTA and checks its temporal and
# idle-time breakdowns. The Python is NSIGHTKIT_TEST_PYTHON_HTA (scripts/run-tests.sh makes one);
# a Python without HTA runs the checks of the file alone and reports the test skipped.
set(NSIGHTKIT_TEST_PYTHON_HTA "" CACHE FILEPATH
  "A Python interpreter with PyPI's HolisticTraceAnalysis, for the Kineto-schema trace test")
if(_nsk_report_mode STREQUAL "enabled")
  add_executable(report_kineto_demo report/report_kineto_demo.cpp)
  # It includes the engine's headers (the fake CUPTI source): {fmt} as the tests get it.
  target_link_libraries(report_kineto_demo PRIVATE nsightkit::nsightkit nsightkit_warnings
    ${NSIGHTKIT_FMT_PROVIDER})
  target_include_directories(report_kineto_demo PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  if(NSIGHTKIT_TEST_PYTHON_HTA)
    set(_nsk_hta_python ${NSIGHTKIT_TEST_PYTHON_HTA})
  else()
    set(_nsk_hta_python ${Python3_EXECUTABLE})
  endif()
  add_test(NAME report_kineto_hta
    COMMAND ${_nsk_hta_python} ${CMAKE_CURRENT_SOURCE_DIR}/report/run_hta.py
            --demo $<TARGET_FILE:report_kineto_demo> --checker ${CMAKE_CURRENT_SOURCE_DIR}/check_trace.py
            --dir ${CMAKE_CURRENT_BINARY_DIR}/report_kineto_hta)
  set_tests_properties(report_kineto_hta PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")
endif()
