# CaptureWindow tests (included from tests/CMakeLists.txt).
#
# capture.hpp calls the CUDA runtime (cudaProfilerStart/Stop, cudaDeviceSynchronize) when it is
# compiled with the CUDA headers (NSIGHTKIT_HAS_CUDA), so a test that constructs a window links
# cudart where the toolkit exists; without the toolkit the header is built with
# NSIGHTKIT_HAS_CUDA=0 and makes no CUDA call at all.
set(_nsk_capture_libs "")
set(_nsk_capture_no_cuda OFF)
if(NOT TARGET CUDA::cudart)
  find_package(CUDAToolkit QUIET)
endif()
if(TARGET CUDA::cudart)
  set(_nsk_capture_libs CUDA::cudart)
else()
  set(_nsk_capture_no_cuda ON)
endif()

nsightkit_add_test(test_capture SOURCES test_capture.cpp LIBRARIES ${_nsk_capture_libs})
# The same tests compiled with NSIGHTKIT_DISABLE inside an enabled build (the Recorder stays on):
# proves the disabled window silent while it keeps counting steps and phases.
nsightkit_add_test(test_capture_disabled SOURCES test_capture_disabled.cpp DISABLED
  LIBRARIES ${_nsk_capture_libs})
if(_nsk_capture_no_cuda)
  target_compile_definitions(test_capture PRIVATE NSIGHTKIT_HAS_CUDA=0)
  target_compile_definitions(test_capture_disabled PRIVATE NSIGHTKIT_HAS_CUDA=0)
endif()

# On a device: the real CUDA profiler backend (label gpu; skipped without a GPU).
nsightkit_add_gpu_test(test_capture_gpu SOURCES gpu/test_capture_gpu.cu)
