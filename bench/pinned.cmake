# Pinned memory: pool reuse vs cudaHostAlloc+cudaFreeHost, H2D bandwidth from a pool block vs a
# fresh cudaHostAlloc buffer vs pageable memory. Needs a GPU to measure; exits 0 with a message
# where none exists.
if(TARGET CUDA::cudart)
  nsightkit_add_benchmark(bench_pinned SOURCES bench_pinned.cpp LIBRARIES CUDA::cudart)
endif()
