// Which sanitizer a test is built with, for the tests that replace runtime symbols or depend on a
// sanitizer's exit-time check: g++ defines __SANITIZE_*__, clang++ answers __has_feature.
//   NSK_TEST_ASAN          AddressSanitizer (with its LeakSanitizer)
//   NSK_TEST_TSAN_OR_MSAN  ThreadSanitizer or MemorySanitizer (their runtimes define operator new)
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define NSK_TEST_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define NSK_TEST_TSAN_OR_MSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(NSK_TEST_ASAN)
#define NSK_TEST_ASAN 1
#endif
#if (__has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)) &&                        \
    !defined(NSK_TEST_TSAN_OR_MSAN)
#define NSK_TEST_TSAN_OR_MSAN 1
#endif
#endif
