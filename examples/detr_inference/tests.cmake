# Tests of examples/detr_inference. Included by this example's CMakeLists.txt when nsightkit's test
# functions exist (nsightkit_add_test / nsightkit_add_gpu_test from tests/CMakeLists.txt):
#   detr_unit            CPU unit tests: InferenceOps against naive references (attention, layer
#                        norm, softmax, ...), post-processing, options, model paths and determinism
#   detr_cpu_report      the program on the CPU, briefly, with a JSON report; check_report.py checks
#                        every module path of the architecture and the captured-iteration counts
#   detr_cli_*           bad options fail with a message naming the problem
#   detr_ncu_*           ncu/detr_ncu.py (the ncu per-module summary) on fixed inputs
#   detr_gpu             GPU/CPU agreement of every op and of the whole model (label gpu)
#   detr_cuda_graph      --cuda-graph on the GPU: outputs identical to the eager forward, and
#                        the same kernels per module path eager and replayed (label gpu)
# Imported targets are directory-scoped: find what nsightkit_add_test links here too.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
find_package(Threads REQUIRED)
if(NOT TARGET Catch2::Catch2)
  find_package(Catch2 2 REQUIRED)
  include(Catch)
endif()
set(_detr_dir ${CMAKE_CURRENT_LIST_DIR})

nsightkit_add_test(detr_unit SOURCES ${_detr_dir}/tests/test_detr_unit.cpp
  LIBRARIES detr_inference_lib)

if(NSIGHTKIT_DISABLE)
  set(_detr_mode disabled)
else()
  set(_detr_mode enabled)
endif()
add_test(NAME detr_cpu_report
  COMMAND Python3::Interpreter ${_detr_dir}/tests/check_report.py
          --program $<TARGET_FILE:detr_inference> --out ${CMAKE_CURRENT_BINARY_DIR}/detr_cpu_report
          --mode ${_detr_mode})
set_tests_properties(detr_cpu_report PROPERTIES LABELS cpu TIMEOUT 300
  ENVIRONMENT_MODIFICATION "NVTX_INJECTION64_PATH=unset:;NSIGHTKIT_REPORT=unset:;NSIGHTKIT_CAPTURE=unset:")

add_test(NAME detr_cli_half_precision
  COMMAND detr_inference --device cpu --precision fp16 --iterations 1)
set_tests_properties(detr_cli_half_precision PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "detr_inference: --precision fp16: not supported: .*use fp32")
add_test(NAME detr_cli_bad_size COMMAND detr_inference --device cpu --image-size 100)
set_tests_properties(detr_cli_bad_size PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "detr_inference: --image-size: 100 is not a multiple of 32")
add_test(NAME detr_cli_help COMMAND detr_inference --help)
set_tests_properties(detr_cli_help PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "--enc-layers.*--dec-layers.*--queries.*--cuda-graph +run the iterations eagerly, then again as a CUDA graph")
add_test(NAME detr_cli_cuda_graph_cpu COMMAND detr_inference --device cpu --cuda-graph)
set_tests_properties(detr_cli_cuda_graph_cpu PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "^detr_inference: --cuda-graph needs the GPU \\(--device cuda\\)")
# Exit status 2 (a usage error), not a crash: WILL_FAIL on the status, the message checked above.
add_test(NAME detr_cli_cuda_graph_cpu_status COMMAND detr_inference --device cpu --cuda-graph)
set_tests_properties(detr_cli_cuda_graph_cpu_status PROPERTIES LABELS cpu WILL_FAIL TRUE)

# ncu/detr_ncu.py (run by scripts/gpu/detr.sh on the GPU machine) on fixed inputs: the module
# pick prefers GPU time and skips the loop's rows and ranges outside nsightkit's domain; the sums
# convert ncu's units and skip the program's own output lines.
set(_detr_ncu ${_detr_dir}/ncu/detr_ncu.py)
add_test(NAME detr_ncu_pick COMMAND Python3::Interpreter ${_detr_ncu} pick
  --report ${_detr_dir}/ncu/fixtures/report_sample.json)
set_tests_properties(detr_ncu_pick PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "^backbone\ndecoder\nencoder\n$")
add_test(NAME detr_ncu_summarize COMMAND Python3::Interpreter ${_detr_ncu} summarize
  --report ${_detr_dir}/ncu/fixtures/report_sample.json
  --module backbone=${_detr_dir}/ncu/fixtures/ncu_sample.csv)
set_tests_properties(detr_ncu_summarize PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "\\| `backbone` \\| 3 \\| 4\\.0 \\| 2\\.0 \\| 6\\.0 \\| 5\\.0 \\| 1200 \\| 0\\.83 \\| 4\\.5 \\|.*bias_act_kernel x2, cudnn_conv_kernel x1")

get_property(_detr_gpu GLOBAL PROPERTY NSIGHTKIT_EXAMPLES_CUDA)
if(_detr_gpu)
  nsightkit_add_gpu_test(detr_gpu SOURCES ${_detr_dir}/tests/test_detr_gpu.cpp
    LIBRARIES detr_inference_lib)
  # --cuda-graph end to end; exits 77 (skipped) without a device or where CUPTI cannot run.
  add_test(NAME detr_cuda_graph
    COMMAND Python3::Interpreter ${_detr_dir}/tests/check_graph.py
            --program $<TARGET_FILE:detr_inference> --out ${CMAKE_CURRENT_BINARY_DIR}/detr_cuda_graph)
  set_tests_properties(detr_cuda_graph PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT_MODIFICATION "NVTX_INJECTION64_PATH=unset:;NSIGHTKIT_REPORT=unset:;NSIGHTKIT_CAPTURE=unset:")
endif()
unset(_detr_ncu)
unset(_detr_dir)
unset(_detr_mode)
unset(_detr_gpu)
