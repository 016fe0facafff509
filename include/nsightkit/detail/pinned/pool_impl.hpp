// Internal: the members of PinnedMemoryPool (pinned.hpp) that reach the pool's core. Header-only,
// pinned.hpp includes them; in the compiled mode (detail/compiled.hpp) src/nsightkit_cuda.cpp
// defines them once, so a translation unit that includes pinned.hpp does not instantiate the core.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/pinned/cuda.hpp>
#include <nsightkit/detail/pinned/cuda_impl.hpp>
#include <nsightkit/detail/pinned/pool_core.hpp>
#include <nsightkit/pinned.hpp>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <memory_resource>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

inline PinnedMemoryPool::Core& PinnedMemoryPool::core() noexcept { return *core_; }

inline PinnedMemoryPool::Core const& PinnedMemoryPool::core() const noexcept { return *core_; }

NSIGHTKIT_DETAIL_MEMBER PinnedMemoryPool::PinnedMemoryPool(PinnedPoolOptions const& options)
    : options_{options},
      core_{std::make_unique<Core>(options.max_cached_bytes,
                                   detail::pinned::CudaBackend{options.host_alloc_flags})} {}

NSIGHTKIT_DETAIL_MEMBER PinnedMemoryPool::~PinnedMemoryPool() = default;

NSIGHTKIT_DETAIL_MEMBER void PinnedMemoryPool::deallocate(void* p, std::size_t bytes,
                                                          StreamView stream) noexcept {
  if (bytes == 0 && p == detail::pinned::zero_size_pointer()) return;
  check(core().deallocate(p, bytes, stream.value()), "deallocate", p, bytes);
}

NSIGHTKIT_DETAIL_MEMBER void PinnedMemoryPool::record_stream(void* p, StreamView stream) {
  check(core().record_stream(p, stream.value()), "record_stream", p, 0);
}

NSIGHTKIT_DETAIL_MEMBER std::size_t PinnedMemoryPool::release() { return core().release(); }

NSIGHTKIT_DETAIL_MEMBER PinnedPoolStats PinnedMemoryPool::stats() const { return core().stats(); }

NSIGHTKIT_DETAIL_MEMBER void* PinnedMemoryPool::do_allocate(std::size_t bytes,
                                                            std::size_t alignment) {
  detail::pinned::check_alignment(alignment, "nsightkit::PinnedMemoryPool::allocate");
  if (bytes == 0) return detail::pinned::zero_size_pointer();
  return core().allocate(bytes);
}

NSIGHTKIT_DETAIL_MEMBER void PinnedMemoryPool::do_deallocate(void* p, std::size_t bytes,
                                                             std::size_t /*alignment*/) noexcept {
  if (bytes == 0 && p == detail::pinned::zero_size_pointer()) return;
  check(core().deallocate(p, bytes), "deallocate", p, bytes);
}

NSIGHTKIT_DETAIL_MEMBER bool PinnedMemoryPool::do_is_equal(
    std::pmr::memory_resource const& other) const noexcept {
  return this == &other;
}

NSIGHTKIT_DETAIL_MEMBER void PinnedMemoryPool::check(detail::pinned::PoolResult r, char const* op,
                                                     void const* p,
                                                     std::size_t bytes) const noexcept {
  if (r.status == detail::pinned::PoolStatus::ok) return;
  char message[320];
  if (r.status == detail::pinned::PoolStatus::size_mismatch) {
    std::snprintf(message, sizeof message,
                  "nsightkit::PinnedMemoryPool::%s(%p, %zu): %s (the block holds %zu bytes; "
                  "pass the size given to allocate)",
                  op, p, bytes, detail::pinned::describe(r.status), r.block_size);
  } else {
    std::snprintf(message, sizeof message, "nsightkit::PinnedMemoryPool::%s(%p): %s", op, p,
                  detail::pinned::describe(r.status));
  }
  if (options_.on_misuse != nullptr) {
    options_.on_misuse(message);
    return;
  }
  std::fprintf(stderr, "%s\n", message);
  std::abort();
}

NSIGHTKIT_DETAIL_END_NAMESPACE
