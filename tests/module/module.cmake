# Module hooks (module.hpp): Recorder tests, the same tests compiled with NSIGHTKIT_DISABLE, the
# concurrency tests (label tsan: CI runs them in a -fsanitize=thread build) and the GPU test; the
# shared-library test is in process/.
# alloc_counter.cpp replaces operator new (counts allocations); it uses no nsightkit, so the
# DISABLED definition it receives as a source of test_module_disabled changes nothing.
nsightkit_add_test(test_module SOURCES module/test_module.cpp alloc_counter.cpp)
nsightkit_add_test(test_module_disabled SOURCES module/test_module_disabled.cpp alloc_counter.cpp DISABLED)
nsightkit_add_test(test_module_threads SOURCES module/test_module_threads.cpp LABELS tsan)
# Formatted module names in C++20, where {fmt} checks format strings in a consteval constructor.
nsightkit_add_test(test_module_cxx20 SOURCES module/test_module_cxx20.cpp)
set_target_properties(test_module_cxx20 PROPERTIES CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON)
# Paths at scale: 10^5-deep stacks (beyond max_module_depth), 10^5 distinct names, lazily built
# paths against the full paths written out. POSIX: the deep recursion runs on a thread with a
# large stack. A counting sink observes the ranges (no Recorder: nothing is kept per range).
if(UNIX)
  nsightkit_add_test(test_module_scale SOURCES module/test_module_scale.cpp NO_RECORDER)
  # Out of memory: the executable replaces operator new to fail nothrow allocations on demand.
  nsightkit_add_test(test_module_oom SOURCES module/test_module_oom.cpp NO_RECORDER)
endif()
nsightkit_add_gpu_test(test_module_gpu SOURCES module/test_module_gpu.cu)

# No NVTX tool in the binary: a scope nobody observes keeps no state; tracking starts with the
# first observer.
nsightkit_add_test(test_module_no_tool SOURCES module/test_module_no_tool.cpp NO_RECORDER)
