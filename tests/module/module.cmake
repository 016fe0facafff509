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

# Built with -fno-exceptions (GNU/Clang): hooks, a range and the report work in a plain main()
# (Catch2 needs exceptions), and bad input to a throwing API prints "nsightkit: <what()>" and
# aborts. expect_abort.cmake fails the death tests if the program returns instead.
if(NSIGHTKIT_TEST_NO_EXCEPTIONS)
  add_executable(test_module_noexcept module/test_module_noexcept.cpp)
  target_link_libraries(test_module_noexcept PRIVATE nsightkit::nsightkit nsightkit_warnings
    Threads::Threads)
  target_compile_options(test_module_noexcept PRIVATE -fno-exceptions)
  add_test(NAME test_module_noexcept COMMAND test_module_noexcept)
  foreach(_nsk_case IN ITEMS
      "empty-hook|nsightkit: nsightkit::add_pre_hook: the hook is empty (null function) (built without exceptions: aborting)"
      "bad-module-name|nsightkit: nsightkit::Hooked: module name \"a/b\" contains '/'")
    string(REPLACE "|" ";" _nsk_case "${_nsk_case}")
    list(GET _nsk_case 0 _nsk_arg)
    list(GET _nsk_case 1 _nsk_expect)
    add_test(NAME test_module_noexcept_aborts_on_${_nsk_arg}
      COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:test_module_noexcept> -DARG=${_nsk_arg}
              "-DEXPECT=${_nsk_expect}" -P ${CMAKE_CURRENT_SOURCE_DIR}/module/expect_abort.cmake)
  endforeach()
  set_tests_properties(test_module_noexcept test_module_noexcept_aborts_on_empty-hook
    test_module_noexcept_aborts_on_bad-module-name PROPERTIES LABELS cpu
    ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")
endif()
