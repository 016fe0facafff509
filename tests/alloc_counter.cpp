// Replaces the global operator new/delete of a test executable (test_module, test_prefetch) so
// a test can count the heap allocations of a code region. Every non-aligned form is replaced, so
// that under AddressSanitizer no allocation made by the sanitizer's own operator new reaches
// these deletes. In its own translation unit so the compiler cannot pair the malloc/free inside
// with inlined new/delete expressions elsewhere. Not under ThreadSanitizer or MemorySanitizer:
// their runtimes define the same symbols (allocation_counting is then false).
#include <atomic>
#include <cstdlib>
#include <new>

#include "sanitizers.hpp"

namespace nsk_test {
std::atomic<bool> count_allocations{false};
std::atomic<long> allocations{0};
#if defined(NSK_TEST_TSAN_OR_MSAN)
extern bool const allocation_counting = false;
#else
extern bool const allocation_counting = true;
#endif
}  // namespace nsk_test

#if !defined(NSK_TEST_TSAN_OR_MSAN)

namespace {
void* counted_malloc(std::size_t n) noexcept {
  if (nsk_test::count_allocations.load(std::memory_order_relaxed))
    nsk_test::allocations.fetch_add(1);
  return std::malloc(n == 0 ? 1 : n);
}
void* counted_or_throw(std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc{};
}
}  // namespace

void* operator new(std::size_t n) { return counted_or_throw(n); }
void* operator new[](std::size_t n) { return counted_or_throw(n); }
void* operator new(std::size_t n, std::nothrow_t const&) noexcept { return counted_malloc(n); }
void* operator new[](std::size_t n, std::nothrow_t const&) noexcept { return counted_malloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::nothrow_t const&) noexcept { std::free(p); }
void operator delete[](void* p, std::nothrow_t const&) noexcept { std::free(p); }
#endif
