# Tests of examples/resnet_training. Included by this example's CMakeLists.txt when nsightkit's
# test functions exist (NSIGHTKIT_BUILD_TESTS=ON); it may also be included from
# tests/CMakeLists.txt. Needs the resnet_training targets (defined before the include).
#   test_resnet_gradcheck  every parameter gradient of a tiny ResNet vs finite differences (f64)
#   test_resnet_model      module ranges through the NVTX Recorder, layouts, loader, command line
#   test_resnet_parallel   data-parallel pieces: gradient buckets, launcher variables, batch-norm
#                          groups
#   resnet_training_ci     the program on the CPU for a few steps, checked through its report
#                          JSON and metrics JSON (module paths, capture steps, falling loss)
#   resnet_training_parallel_ci  2 CPU ranks started by mpiexec vs 1 process, the reports merged
#                          on rank 0 and offline, a straggler, a dying and a stalling rank (MPI
#                          builds only: skipped with a message where MPI is missing)
#   resnet_training_cli_cuda_graph_*  --cuda-graph on the CPU: a usage error (status 2) naming
#                          the CUDA backend, with --device cpu and --device auto; --help names it
#   resnet_training_check_graph_selftest  the GPU test's checker (tests/check_graph.py) against
#                          a stand-in program: a good run passes, each fault fails by name
#   test_resnet_cuda       (label gpu) CUDA vs CPU backend; every input pipeline trains the same;
#                          --cuda-graph trains bit for bit the eager run; a capture that allocates
#   resnet_training_cuda_graph  (label gpu) --cuda-graph end to end: losses identical, the same
#                          kernels per path eager and replayed (tests/check_graph.py)
include_guard(GLOBAL)
if(NOT TARGET Catch2::Catch2)
  find_package(Catch2 2 REQUIRED)
endif()
include(Catch)
find_package(Threads REQUIRED)
find_package(Python3 COMPONENTS Interpreter REQUIRED)
if(NOT DEFINED NSIGHTKIT_TEST_ENV_MOD)
  set(NSIGHTKIT_TEST_ENV_MOD "NVTX_INJECTION64_PATH=unset:")
endif()
set(_resnet_dir ${CMAKE_CURRENT_LIST_DIR})

nsightkit_add_test(test_resnet_gradcheck SOURCES ${_resnet_dir}/tests/test_gradcheck.cpp
  NO_RECORDER LIBRARIES resnet_training_lib)
nsightkit_add_test(test_resnet_model SOURCES ${_resnet_dir}/tests/test_model.cpp
  LIBRARIES resnet_training_lib)
nsightkit_add_test(test_resnet_parallel SOURCES ${_resnet_dir}/tests/test_parallel.cpp
  NO_RECORDER LIBRARIES resnet_training_lib)

set(_resnet_ci_flags "")
if(NSIGHTKIT_DISABLE)
  set(_resnet_ci_flags --disabled)
endif()
add_test(NAME resnet_training_ci
  COMMAND Python3::Interpreter ${_resnet_dir}/tests/check_run.py
          --exe $<TARGET_FILE:resnet_training> --workdir ${CMAKE_CURRENT_BINARY_DIR}/ci
          ${_resnet_ci_flags})
set_tests_properties(resnet_training_ci PROPERTIES LABELS cpu TIMEOUT 600
  ENVIRONMENT_MODIFICATION "NVTX_INJECTION64_PATH=unset:;NSIGHTKIT_CAPTURE=unset:;NSIGHTKIT_REPORT=unset:")

# Data-parallel on the CPU: 2 ranks started by mpiexec, reports merged on rank 0 (nsightkit::mpi)
# and by `nsightkit merge` (where the command is built); 1 process vs 2 ranks, a straggler, faults.
if(TARGET nsightkit::mpi AND MPIEXEC_EXECUTABLE)
  # Open MPI's mpiexec refuses more ranks than cores without --oversubscribe (CI has 2 cores).
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _resnet_mpiexec
    ERROR_VARIABLE _resnet_mpiexec RESULT_VARIABLE _resnet_rc)
  set(_resnet_mpi_flags "")
  if(_resnet_mpiexec MATCHES "Open MPI|OpenRTE")
    set(_resnet_mpi_flags --oversubscribe)
  endif()
  if(TARGET nsightkit_command)
    list(APPEND _resnet_mpi_flags --command $<TARGET_FILE:nsightkit_command>)
  endif()
  add_test(NAME resnet_training_parallel_ci
    COMMAND Python3::Interpreter ${_resnet_dir}/tests/check_parallel.py
            --exe $<TARGET_FILE:resnet_training> --mpiexec ${MPIEXEC_EXECUTABLE}
            --np-flag=${MPIEXEC_NUMPROC_FLAG} ${_resnet_mpi_flags} --python ${_resnet_dir}/../../python
            --workdir ${CMAKE_CURRENT_BINARY_DIR}/parallel_ci ${_resnet_ci_flags})
  # Open MPI refuses to start as root unless told (CI runs as root); its allocations left at exit
  # are no leak of this program (AddressSanitizer's leak check off, as in tests/mpi/mpi.cmake).
  # RUN_SERIAL: two ranks on CI's two cores, nothing beside them.
  set_tests_properties(resnet_training_parallel_ci PROPERTIES LABELS cpu TIMEOUT 600 RUN_SERIAL TRUE
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;ASAN_OPTIONS=detect_leaks=0"
    ENVIRONMENT_MODIFICATION "NVTX_INJECTION64_PATH=unset:;NSIGHTKIT_CAPTURE=unset:;NSIGHTKIT_REPORT=unset:")
else()
  message(STATUS "resnet_training: resnet_training_parallel_ci skipped: no MPI (${NSIGHTKIT_MPI_REASON})")
endif()

# --cuda-graph on the CPU: exit status 2 (a usage error) and the message, with nothing trained.
# Under --device auto too (no GPU on the CI machine, and the probe is forced off below for a
# machine that has one), so a graph run never falls back to an eager one silently.
add_test(NAME resnet_training_cli_cuda_graph_cpu
  COMMAND Python3::Interpreter ${_resnet_dir}/tests/check_exit.py --status 2 --empty-stdout
          --stderr "^resnet_training: error: --cuda-graph needs the CUDA backend \\(--device cuda\\): CUDA graphs replay GPU work, the CPU backend runs every step eagerly\n\\(see resnet_training --help\\)"
          -- $<TARGET_FILE:resnet_training> --device cpu --cuda-graph)
add_test(NAME resnet_training_cli_cuda_graph_auto
  COMMAND Python3::Interpreter ${_resnet_dir}/tests/check_exit.py --status 2 --empty-stdout
          --stderr "^resnet_training: error: --cuda-graph needs the CUDA backend \\(--device cuda\\).*\\(no CUDA device: "
          -- $<TARGET_FILE:resnet_training> --device auto --cuda-graph)
set_tests_properties(resnet_training_cli_cuda_graph_cpu resnet_training_cli_cuda_graph_auto
  PROPERTIES LABELS cpu ENVIRONMENT_MODIFICATION "NVTX_INJECTION64_PATH=unset:;NSIGHTKIT_REPORT=unset:")
# CUDA_VISIBLE_DEVICES="" hides any GPU from the auto probe.
set_property(TEST resnet_training_cli_cuda_graph_auto APPEND PROPERTY ENVIRONMENT
  "CUDA_VISIBLE_DEVICES=")
add_test(NAME resnet_training_cli_help COMMAND resnet_training --help)
set_tests_properties(resnet_training_cli_help PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "--cuda-graph +CUDA: train eagerly, then again from the same weights and data")
add_test(NAME resnet_training_check_graph_selftest
  COMMAND Python3::Interpreter ${_resnet_dir}/tests/test_check_graph.py
          --workdir ${CMAKE_CURRENT_BINARY_DIR}/check_graph_selftest)
set_tests_properties(resnet_training_check_graph_selftest PROPERTIES LABELS cpu TIMEOUT 300)

get_property(_resnet_cuda GLOBAL PROPERTY NSIGHTKIT_EXAMPLES_CUDA)
if(_resnet_cuda)
  nsightkit_add_gpu_test(test_resnet_cuda SOURCES ${_resnet_dir}/tests/test_resnet_cuda.cpp
    NO_RECORDER LIBRARIES resnet_training_lib)
  # --cuda-graph end to end; exits 77 (skipped) without a device or where CUPTI cannot run.
  add_test(NAME resnet_training_cuda_graph
    COMMAND Python3::Interpreter ${_resnet_dir}/tests/check_graph.py
            --exe $<TARGET_FILE:resnet_training> --out ${CMAKE_CURRENT_BINARY_DIR}/cuda_graph)
  set_tests_properties(resnet_training_cuda_graph PROPERTIES LABELS gpu SKIP_RETURN_CODE 77
    TIMEOUT 600
    ENVIRONMENT_MODIFICATION "NVTX_INJECTION64_PATH=unset:;NSIGHTKIT_REPORT=unset:;NSIGHTKIT_CAPTURE=unset:")
endif()
