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

# A format string that does not fit its arguments is a compile error (C++17, header-only and
# compiled mode), checked by compiling snippets with the project's compiler (GNU-style flags).
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" AND NOT NSIGHTKIT_DISABLE)
  add_test(NAME range_format_checked
    COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DSTD=17 -DDIR=${CMAKE_CURRENT_BINARY_DIR}/format_check
            "-DINCLUDES=$<TARGET_PROPERTY:nsightkit::nsightkit,INTERFACE_INCLUDE_DIRECTORIES>"
            "-DDEFINES=$<TARGET_PROPERTY:nsightkit::nsightkit,INTERFACE_COMPILE_DEFINITIONS>"
            -P ${CMAKE_CURRENT_SOURCE_DIR}/range/format_check.cmake)
  set_tests_properties(range_format_checked PROPERTIES LABELS cpu)
endif()
