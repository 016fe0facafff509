# Pinned memory (include/nsightkit/pinned.hpp, stream.hpp).
# CPU: the pool's rules through a fake backend, the public types' contracts, and the clear
# CudaError at first use without a driver. GPU (label gpu): real page-locked memory, containers,
# stream-ordered reuse against a long kernel, threads, release.
if(TARGET CUDA::cudart)
  nsightkit_add_test(test_pinned SOURCES pinned/test_pinned.cpp LABELS cuda LIBRARIES CUDA::cudart)
  nsightkit_add_gpu_test(test_pinned_gpu SOURCES pinned/test_pinned_gpu.cu)
endif()
