# Ranges, marks and naming (range.hpp, attributes.hpp): Recorder tests, formatted names in C++20,
# no tool attached, NVTX's first use on many threads (label tsan: CI runs them in a
# -fsanitize=thread build), a .cu translation unit, and ranges around kernels on a device.
nsightkit_add_test(test_attributes SOURCES range/test_attributes.cpp)
nsightkit_add_test(test_range SOURCES range/test_range.cpp LABELS tsan)
# Formatted names in C++20, where {fmt} checks format strings in a consteval constructor.
nsightkit_add_test(test_range_cxx20 SOURCES range/test_range_cxx20.cpp)
set_target_properties(test_range_cxx20 PROPERTIES CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON)
nsightkit_add_test(test_no_tool SOURCES range/test_no_tool.cpp NO_RECORDER)
nsightkit_add_test(test_first_use_threads SOURCES range/test_first_use_threads.cpp LABELS tsan)
nsightkit_add_test(test_first_use_threads_no_tool SOURCES range/test_first_use_threads.cpp
  NO_RECORDER LABELS tsan)

# A .cu translation unit compiled by nvcc: ranges are host code, so it runs without a GPU.
if(NSIGHTKIT_HAVE_CUDA_LANGUAGE)
  nsightkit_add_test(test_range_cu SOURCES range/test_range_cu.cu LABELS cuda)
endif()

# On a device (label gpu; skipped without one): ranges around kernels, named streams.
nsightkit_add_gpu_test(test_range_gpu SOURCES range/test_range_gpu.cu)
