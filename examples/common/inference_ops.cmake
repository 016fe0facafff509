# nn::InferenceOps (inference_ops.hpp): transformer/CNN inference operations next to the shared
# backends — target nsightkit_examples_inference_ops (static), linking nsightkit_examples_common.
# Include it after examples/common/CMakeLists.txt has been added:
#   if(NOT TARGET nsightkit_examples_inference_ops)
#     include(${CMAKE_CURRENT_SOURCE_DIR}/../common/inference_ops.cmake)
#   endif()
set(_nsk_ops_dir ${CMAKE_CURRENT_LIST_DIR})
add_library(nsightkit_examples_inference_ops STATIC
  ${_nsk_ops_dir}/inference_ops.cpp ${_nsk_ops_dir}/inference_ops_cpu.cpp)
target_link_libraries(nsightkit_examples_inference_ops PUBLIC nsightkit_examples_common)
if(TARGET nsightkit_warnings)
  target_link_libraries(nsightkit_examples_inference_ops PRIVATE nsightkit_warnings)
endif()
get_property(_nsk_ops_cuda GLOBAL PROPERTY NSIGHTKIT_EXAMPLES_CUDA)
if(_nsk_ops_cuda)
  target_sources(nsightkit_examples_inference_ops PRIVATE ${_nsk_ops_dir}/inference_ops_cuda.cu)
  target_link_libraries(nsightkit_examples_inference_ops PUBLIC CUDA::cudart CUDA::cublas)
  set_target_properties(nsightkit_examples_inference_ops PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
else()
  target_sources(nsightkit_examples_inference_ops PRIVATE ${_nsk_ops_dir}/inference_ops_cuda_stub.cpp)
endif()
unset(_nsk_ops_dir)
unset(_nsk_ops_cuda)
