# Module hooks' cost against plain ranges, in one process per configuration (see bench_module.cpp).
nsightkit_add_benchmark(bench_module SOURCES bench_module.cpp)
nsightkit_add_benchmark(bench_module_recorder SOURCES bench_module.cpp RECORDER)
nsightkit_add_benchmark(bench_module_disabled SOURCES bench_module.cpp DISABLED)
