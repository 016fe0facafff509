// Internal: the pinned pool's outcomes and messages, and the range around its page-locked
// allocations: what the pool (pool_core.hpp), its CUDA backend (cuda.hpp) and PinnedMemoryPool
// share, without the pool's containers.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/emit.hpp>
#include <nsightkit/detail/pinned/size_class.hpp>

#include <cstddef>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

namespace detail::pinned {

/// Outcome of recording an event on a stream.
enum class RecordStatus { recorded, capturing, failed };

/// Outcome of a pool call that names a block.
enum class PoolStatus { ok, foreign_pointer, double_free, size_mismatch };

/// A PoolStatus and, when the block was found, its size.
struct PoolResult {
  PoolStatus status{PoolStatus::ok};  ///< what happened
  std::size_t block_size{0};          ///< size of the block named (0 if unknown)
};

/// A short description of a misuse, for messages.
inline char const* describe(PoolStatus s) noexcept {
  switch (s) {
    case PoolStatus::ok: return "ok";
    case PoolStatus::foreign_pointer:
      return "the pointer was not allocated by this pool (foreign pointer)";
    case PoolStatus::double_free: return "the block is not in use (double free, or use after free)";
    case PoolStatus::size_mismatch: return "the size does not match the allocation";
  }
  return "?";
}

/// Runs `f` inside an NVTX range "<label> <size>" whose payload is the byte count: allocating and
/// freeing page-locked memory take milliseconds, so the timeline should show them.
template <class F>
inline decltype(auto) in_memory_range(char const* label, std::size_t bytes, F&& f) {
  ScopedEmit<DefaultDomain> const range{Attributes{Payload{bytes}}, "{} {}", label,
                                        ByteSize{bytes}};
  return f();
}

}  // namespace detail::pinned
NSIGHTKIT_DETAIL_END_NAMESPACE
