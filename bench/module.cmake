# Module hooks' cost against plain ranges, in one process per configuration (see bench_module.cpp).
nsightkit_add_benchmark(bench_module SOURCES bench_module.cpp)
nsightkit_add_benchmark(bench_module_recorder SOURCES bench_module.cpp RECORDER)
nsightkit_add_benchmark(bench_module_disabled SOURCES bench_module.cpp DISABLED)
# Module paths at scale (deep stacks, many distinct names): time and memory per scenario, one
# process each (POSIX: fork, getrusage). A plain program, not Google Benchmark (see the file).
if(UNIX)
  nsightkit_add_benchmark(bench_module_scale SOURCES bench_module_scale.cpp)
endif()
