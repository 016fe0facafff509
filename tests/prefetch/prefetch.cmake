# Stream prefetcher (include/nsightkit/prefetch.hpp, detail/prefetch/*.hpp).
# CPU: the ordering rules of detail::prefetch::Core against a fake GPU (exact operations per batch
# for depths 1-4, no host wait in the steady state, ends, faults, no allocation per batch, NVTX
# through the Recorder), the public type's argument checks and its CudaError without a driver.
# GPU (label gpu): real batches verified by a kernel on the compute stream, random source delays,
# long kernels, depths 1-4, pageable/pinned/always-staged sources, break, exceptions.
if(TARGET CUDA::cudart)
  nsightkit_add_test(test_prefetch SOURCES prefetch/test_prefetch.cpp alloc_counter.cpp
    LABELS cuda LIBRARIES CUDA::cudart)
  nsightkit_add_gpu_test(test_prefetch_gpu SOURCES prefetch/test_prefetch_gpu.cu)
endif()
