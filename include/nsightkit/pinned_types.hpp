/**
 * @file pinned_types.hpp
 * @brief nsightkit::PinnedPoolStats — the counters of a PinnedMemoryPool (see pinned.hpp).
 *
 * A plain value without CUDA dependencies, so that code reporting on pools (and the pool's
 * CUDA-free bookkeeping) can use it anywhere.
 */
#pragma once

#include <nsightkit/config.hpp>

#include <cstddef>
#include <cstdint>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/**
 * @brief A snapshot of a PinnedMemoryPool's counters (PinnedMemoryPool::stats()).
 *
 * Sizes are block sizes (requests rounded up to their size class). The counters satisfy
 * `allocations == cache_hits + host_alloc_calls` and, after release() with nothing in flight,
 * `host_alloc_calls == free_host_calls +` the blocks the pool still holds.
 *
 * @code
 * auto const s = pool.stats();
 * std::printf("%zu bytes pinned, %.0f%% hits\n", s.bytes_reserved(),
 *             100.0 * double(s.cache_hits) / double(s.allocations));
 * @endcode
 */
struct PinnedPoolStats {
  /// Bytes of blocks handed out and not yet freed.
  std::size_t bytes_in_use{0};
  /// Of bytes_in_use: the bytes actually requested.
  std::size_t bytes_requested{0};
  /// Bytes of freed blocks kept for reuse (also those still in flight).
  std::size_t bytes_cached{0};
  /// Bytes taken out of circulation (freed on a capturing stream or after a failed event record);
  /// returned at destruction.
  std::size_t bytes_retired{0};
  std::size_t peak_bytes_in_use{0};    ///< the largest bytes_in_use seen
  std::size_t peak_bytes_reserved{0};  ///< the largest bytes_reserved() seen
  std::size_t blocks_in_use{0};        ///< number of blocks handed out
  std::size_t blocks_cached{0};        ///< number of blocks kept for reuse
  std::uint64_t allocations{0};        ///< allocations served (zero-byte requests not counted)
  std::uint64_t deallocations{0};      ///< blocks given back
  std::uint64_t cache_hits{0};         ///< allocations served by a cached block
  /// Allocations that found blocks of their size only still in flight, and allocated anew instead
  /// of waiting.
  std::uint64_t pending_misses{0};
  /// Successful calls to the upstream allocator (cudaHostAlloc).
  std::uint64_t host_alloc_calls{0};
  std::uint64_t free_host_calls{0};  ///< calls to the upstream free (cudaFreeHost)
  std::uint64_t events_created{0};   ///< events created (they are pooled and reused)

  /// All page-locked memory the pool holds. @return bytes_in_use + bytes_cached + bytes_retired.
  [[nodiscard]] constexpr std::size_t bytes_reserved() const noexcept {
    return bytes_in_use + bytes_cached + bytes_retired;
  }
};

NSIGHTKIT_DETAIL_END_NAMESPACE
