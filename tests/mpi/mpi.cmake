# nsightkit on MPI (include/nsightkit/mpi.hpp, the component nsightkit::mpi): tests/mpi/
# test_mpi.py starts tests/mpi/mpi_report_demo.cpp as 2 ranks with mpiexec and checks
#   mpi_merge   the merged table / summary / CSV / trace that rank 0 writes against the per-rank
#               files (sum, min, median, max, counts) and against `nsightkit merge` run on those
#               files (the same table text, JSON, CSV and trace), clock offsets, Report::write
#               and MPI_Finalize as the gather points; in a NSIGHTKIT_DISABLE build: nothing written
#               (needs the nsightkit command, NSIGHTKIT_BUILD_TOOLS)
#   mpi_faults  a rank that throws, stalls before the gather, stalls before a collective or dies
#               ends the job with one line naming it and a non-zero status, within seconds
# Skipped (with a message at configure time) where no MPI is found; CI installs Open MPI.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
find_package(Threads REQUIRED)
if(NOT TARGET nsightkit::mpi)
  include(${PROJECT_SOURCE_DIR}/cmake/nsightkitMpi.cmake)
  nsightkit_add_mpi_component(GLOBAL)
endif()

# Every public header is compiled on its own (tests/CMakeLists.txt); mpi.hpp needs <mpi.h>.
foreach(_nsk_mode IN LISTS NSIGHTKIT_STANDALONE_HEADER_MODES)
  if(TARGET nsightkit::mpi)
    target_link_libraries(standalone_headers_${_nsk_mode} PRIVATE MPI::MPI_CXX)
  else()
    set_source_files_properties(${CMAKE_CURRENT_BINARY_DIR}/standalone/${_nsk_mode}/mpi.cpp
      PROPERTIES HEADER_FILE_ONLY ON)
  endif()
endforeach()

if(NOT TARGET nsightkit::mpi OR NOT MPIEXEC_EXECUTABLE)
  message(STATUS "nsightkit tests: the MPI tests (tests/mpi) are skipped: ${NSIGHTKIT_MPI_REASON}")
  return()
endif()

add_executable(mpi_report_demo ${CMAKE_CURRENT_LIST_DIR}/mpi_report_demo.cpp)
target_link_libraries(mpi_report_demo PRIVATE nsightkit::mpi nsightkit_warnings Threads::Threads)

# docs/multi-gpu.md's program on nsightkit::mpi compiles and links exactly as written.
execute_process(
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/../doc_snippets.py MPI_Init_thread
          ${CMAKE_CURRENT_BINARY_DIR}/doc_snippets/mpi ${PROJECT_SOURCE_DIR}/docs/multi-gpu.md
  OUTPUT_VARIABLE _nsk_mpi_snippets ERROR_VARIABLE _nsk_mpi_snippets_error RESULT_VARIABLE _nsk_rc)
if(NOT _nsk_rc EQUAL 0)
  message(FATAL_ERROR "tests/doc_snippets.py failed: ${_nsk_mpi_snippets_error}")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/multi-gpu.md)
add_executable(doc_multi_gpu_mpi ${_nsk_mpi_snippets})
target_link_libraries(doc_multi_gpu_mpi PRIVATE nsightkit::mpi nsightkit_warnings)

# Open MPI's mpiexec refuses more ranks than cores without --oversubscribe (CI has 2 cores).
execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _nsk_mpiexec_version
  ERROR_VARIABLE _nsk_mpiexec_version RESULT_VARIABLE _nsk_rc)
set(_nsk_mpi_flags "")
if(_nsk_mpiexec_version MATCHES "Open MPI|OpenRTE")
  list(APPEND _nsk_mpi_flags --oversubscribe)
endif()
set(_nsk_mpi_mode enabled)
if(NSIGHTKIT_DISABLE)
  set(_nsk_mpi_mode disabled)
endif()

set(_nsk_mpi_cases faults)
if(TARGET nsightkit_command)
  list(PREPEND _nsk_mpi_cases merge)
else()
  message(STATUS "nsightkit tests: mpi_merge needs the nsightkit command (NSIGHTKIT_BUILD_TOOLS=ON)")
endif()
foreach(_nsk_case IN LISTS _nsk_mpi_cases)
  set(_nsk_command_arg "")
  if(_nsk_case STREQUAL "merge")
    set(_nsk_command_arg --command $<TARGET_FILE:nsightkit_command>)
  endif()
  add_test(NAME mpi_${_nsk_case}
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/test_mpi.py --case ${_nsk_case}
            --demo $<TARGET_FILE:mpi_report_demo> --mpiexec ${MPIEXEC_EXECUTABLE}
            --np-flag=${MPIEXEC_NUMPROC_FLAG} ${_nsk_mpi_flags} ${_nsk_command_arg}
            --python ${PROJECT_SOURCE_DIR}/python --checker ${CMAKE_CURRENT_LIST_DIR}/../check_trace.py
            --workdir ${CMAKE_CURRENT_BINARY_DIR}/mpi_${_nsk_case} --mode ${_nsk_mpi_mode})
  # Open MPI refuses to start as root unless told; CI runs as root. TIMEOUT only stops a hang:
  # the faults must end each run within seconds (the script checks how long each took). Under
  # AddressSanitizer, leak checking is off for these processes: Open MPI leaves thousands of
  # allocations at exit, some made by plugins already unloaded (no module to suppress them by);
  # memory errors and UBSan stay on.
  # RUN_SERIAL: both ranks need a core; beside another test on CI's 2 cores a preempted rank reads
  # as a straggler and a fault's exit time stretches.
  set_tests_properties(mpi_${_nsk_case} PROPERTIES LABELS cpu TIMEOUT 240 RUN_SERIAL TRUE
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;ASAN_OPTIONS=detect_leaks=0"
    ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD};NSIGHTKIT_REPORT=unset:;NSIGHTKIT_CAPTURE=unset:")
endforeach()

# A job of 2 ranks sent SIGTERM through mpiexec: each rank writes its own files, no collective
# (docs/long-jobs.md).
if(NOT NSIGHTKIT_DISABLE)
  add_executable(mpi_signals_demo ${CMAKE_CURRENT_LIST_DIR}/mpi_signals_demo.cpp)
  target_link_libraries(mpi_signals_demo PRIVATE nsightkit::mpi nsightkit_warnings)
  add_test(NAME mpi_signals
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/run_mpi_signals.py
            --demo $<TARGET_FILE:mpi_signals_demo> --mpiexec ${MPIEXEC_EXECUTABLE}
            --np-flag=${MPIEXEC_NUMPROC_FLAG} ${_nsk_mpi_flags}
            --checker ${CMAKE_CURRENT_LIST_DIR}/../check_trace.py
            --workdir ${CMAKE_CURRENT_BINARY_DIR}/mpi_signals)
  set_tests_properties(mpi_signals PROPERTIES LABELS cpu TIMEOUT 240 RUN_SERIAL TRUE
    PASS_REGULAR_EXPRESSION "ok mpi_signals" FAIL_REGULAR_EXPRESSION "FAIL|Traceback"
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;ASAN_OPTIONS=detect_leaks=0"
    ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD};NSIGHTKIT_REPORT=unset:;NSIGHTKIT_CAPTURE=unset:")
endif()
