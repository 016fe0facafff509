# The in-process report's per-range cost (bench_report.cpp): report off vs on, in one binary.
# With the CUDA runtime available the GPU-timing benchmarks are compiled in too (they skip
# themselves where no device exists).
if(TARGET CUDA::cudart)
  nsightkit_add_benchmark(bench_report SOURCES bench_report.cpp LIBRARIES CUDA::cudart)
  target_compile_definitions(bench_report PRIVATE NSK_BENCH_GPU)
else()
  nsightkit_add_benchmark(bench_report SOURCES bench_report.cpp)
endif()
