// Counts the heap allocations of test_prefetch (for "no allocation per batch in the steady
// state"): replaces every non-aligned global operator new/delete. In a translation unit of its own
// so that the compiler never pairs the malloc/free here with new/delete expressions it inlined
// elsewhere (-Wmismatched-new-delete), and so that AddressSanitizer's operator new never meets
// these deletes.
// Not under ThreadSanitizer or MemorySanitizer: their static runtimes define the same symbols;
// prefetch_allocation_counting then says the count is unavailable.
#include <atomic>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_THREAD__)
#define NSK_TEST_NO_COUNTING 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define NSK_TEST_NO_COUNTING 1
#endif
#endif

namespace nsk_test {
std::atomic<bool> prefetch_count_allocations{false};
std::atomic<long> prefetch_allocations{0};
#if defined(NSK_TEST_NO_COUNTING)
extern bool const prefetch_allocation_counting = false;
#else
extern bool const prefetch_allocation_counting = true;
#endif
}  // namespace nsk_test

#if !defined(NSK_TEST_NO_COUNTING)

namespace {
void* allocate_counted(std::size_t bytes) noexcept {
  if (nsk_test::prefetch_count_allocations.load(std::memory_order_relaxed)) {
    nsk_test::prefetch_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  return std::malloc(bytes == 0 ? 1 : bytes);
}
void* allocate_or_throw(std::size_t bytes) {
  if (void* p = allocate_counted(bytes)) return p;
  throw std::bad_alloc{};
}
}  // namespace

void* operator new(std::size_t bytes) { return allocate_or_throw(bytes); }
void* operator new[](std::size_t bytes) { return allocate_or_throw(bytes); }
void* operator new(std::size_t bytes, std::nothrow_t const&) noexcept {
  return allocate_counted(bytes);
}
void* operator new[](std::size_t bytes, std::nothrow_t const&) noexcept {
  return allocate_counted(bytes);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::nothrow_t const&) noexcept { std::free(p); }
void operator delete[](void* p, std::nothrow_t const&) noexcept { std::free(p); }

#endif  // !NSK_TEST_NO_COUNTING
