# CUDA-graph recording (include/nsightkit/graph.hpp): the diagnostics and messages on the CPU (the
# CUDA runtime links, no device needed), and recording, diagnostics with CUPTI and per-module replay
# attribution on a device (label gpu).
if(NOT TARGET CUDA::cudart)
  find_package(CUDAToolkit QUIET)
endif()
if(TARGET CUDA::cudart)
  nsightkit_add_test(test_graph SOURCES graph/test_graph.cpp NO_RECORDER LABELS cuda LIBRARIES CUDA::cudart)
endif()
if(TARGET nsightkit::cupti)
  nsightkit_add_gpu_test(test_graph_gpu SOURCES graph/test_graph_gpu.cu NO_RECORDER
    LIBRARIES nsightkit::cupti)
endif()
