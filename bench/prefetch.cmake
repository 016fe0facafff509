# Stream prefetcher: step time of a copy + kernel loop with StreamPrefetcher at depths 1-3 against
# max(C, K) and the serial loop C + K, copy-bound / compute-bound / balanced, all measured in one
# run. A .cu program (the spin kernel) with its own main; needs a GPU to measure and exits 0 with
# a message where none exists.
if(TARGET CUDA::cudart AND NSIGHTKIT_HAVE_CUDA_LANGUAGE)
  nsightkit_add_benchmark(bench_prefetch SOURCES bench_prefetch.cu LIBRARIES CUDA::cudart)
endif()
