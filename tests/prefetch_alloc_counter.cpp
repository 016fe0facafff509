// Counts the heap allocations of test_prefetch (for "no allocation per batch in the steady
// state"): replaces every non-aligned global operator new/delete. In a translation unit of its own
// so that the compiler never pairs the malloc/free here with new/delete expressions it inlined
// elsewhere (-Wmismatched-new-delete), and so that AddressSanitizer's operator new never meets
// these deletes.
#include <atomic>
#include <cstdlib>
#include <new>

namespace nsk_test {
std::atomic<bool> prefetch_count_allocations{false};
std::atomic<long> prefetch_allocations{0};
}  // namespace nsk_test

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
