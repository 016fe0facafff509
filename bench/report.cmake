# The in-process report's per-range cost (bench_report.cpp): report off vs on, in one binary.
# With the CUDA runtime available the GPU-timing benchmarks are compiled in too (they skip
# themselves where no device exists). It drives the engine's internals itself, so it formats with
# {fmt} in its own code and links the {fmt} the engine uses.
if(TARGET CUDA::cudart)
  nsightkit_add_benchmark(bench_report SOURCES bench_report.cpp
                          LIBRARIES CUDA::cudart ${NSIGHTKIT_FMT_PROVIDER})
  target_compile_definitions(bench_report PRIVATE NSK_BENCH_GPU)
else()
  nsightkit_add_benchmark(bench_report SOURCES bench_report.cpp LIBRARIES ${NSIGHTKIT_FMT_PROVIDER})
endif()

# What CUPTI attribution costs per launch, against CUPTI's own floors (bench_cupti.cu;
# bench/run_cupti_benchmarks.sh runs the modes). Needs nvcc and the cupti component.
if(NSIGHTKIT_HAVE_CUDA_LANGUAGE AND TARGET nsightkit::cupti)
  nsightkit_add_benchmark(bench_cupti SOURCES bench_cupti.cu LIBRARIES nsightkit::cupti CUDA::cudart)
endif()

# CUPTI's own collection cost on an unmodified program: a CUDA injection library that enables
# the activity kinds the report collects and nothing else (cupti_floor.cpp; cupti.sh's floor mode).
if(TARGET nsightkit::cupti AND TARGET CUDA::cupti)
  add_library(nsightkit_cupti_floor MODULE cupti_floor.cpp)
  target_include_directories(nsightkit_cupti_floor PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(nsightkit_cupti_floor PRIVATE CUDA::cupti nsightkit_warnings)
endif()
