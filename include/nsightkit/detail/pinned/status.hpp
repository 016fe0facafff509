// Internal: the pinned pool's outcomes and messages, and the range around its page-locked
// allocations: what the pool (pool_core.hpp), its CUDA backend (cuda.hpp) and PinnedMemoryPool
// share, without the pool's containers.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
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

/// Emits the push of a MemoryRange (call only when should_emit): "<label> <size>", the payload the
/// byte count. A template only so that a translation unit that calls memory_range_push() out of
/// line (the compiled mode) instantiates none of the size's formatting.
template <class Size = ByteSize>
inline Emitted memory_range_push_here(char const* label, std::size_t bytes) noexcept {
  Size const size{bytes};
  return emit_formatted<DefaultDomain, Op::push>(Attributes{Payload{bytes}}, "{} {}", label, size);
}

#if NSIGHTKIT_ENABLED && NSIGHTKIT_DETAIL_COMPILED
/// memory_range_push_here(), defined once in src/nsightkit.cpp (detail/compiled.hpp).
NSIGHTKIT_DETAIL_VISIBLE Emitted memory_range_push(char const* label, std::size_t bytes) noexcept;
#else
inline Emitted memory_range_push(char const* label, std::size_t bytes) noexcept {
  return memory_range_push_here(label, bytes);
}
#endif

/// A push/pop range "<label> <size>" ("cudaHostAlloc 1 MiB", "H2D staged 64 MiB") whose payload
/// is the byte count, named only when something listens, as a formatted ScopedRange is: the
/// pinned pool's allocations and frees (they take milliseconds, so the timeline should show them)
/// and the prefetcher's copies. Empty under NSIGHTKIT_DISABLE.
class MemoryRange {
 public:
  MemoryRange(char const* label, std::size_t bytes) noexcept {
#if NSIGHTKIT_ENABLED
    if (should_emit<DefaultDomain>()) emitted_ = memory_range_push(label, bytes);
#else
    (void)label;
    (void)bytes;
#endif
  }
  MemoryRange(MemoryRange const&) = delete;
  MemoryRange& operator=(MemoryRange const&) = delete;
#if NSIGHTKIT_ENABLED
  ~MemoryRange() {
    if (emitted_.nvtx || emitted_.sinks) end_push<DefaultDomain>(emitted_);
  }

 private:
  Emitted emitted_{};
#endif
};

/// Runs `f` inside a MemoryRange.
template <class F>
inline decltype(auto) in_memory_range(char const* label, std::size_t bytes, F&& f) {
  MemoryRange const range{label, bytes};
  return f();
}

}  // namespace detail::pinned
NSIGHTKIT_DETAIL_END_NAMESPACE
