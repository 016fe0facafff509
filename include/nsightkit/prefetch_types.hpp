/**
 * @file prefetch_types.hpp
 * @brief nsightkit::PrefetchedBatch (what a StreamPrefetcher's loop yields) and
 *        nsightkit::PrefetchStats (its counters) — see prefetch.hpp.
 *
 * Plain types without CUDA dependencies, so that code handling prefetched batches (and the
 * prefetcher's CUDA-free ordering logic) can use them anywhere.
 *
 * @code
 * for (nsightkit::PrefetchedBatch<HostBatch, DeviceBatch>& batch : prefetcher) {
 *   step(batch.device(), batch.host().labels, batch.index());
 * }
 * @endcode
 */
#pragma once

#include <nsightkit/config.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

namespace detail::prefetch {

template <class Backend, class HostBatch, class Slot>
class Core;

/// Only nsightkit's prefetcher makes PrefetchedBatch objects.
class BatchKey {
  template <class, class, class>
  friend class Core;
  BatchKey() noexcept = default;
};

}  // namespace detail::prefetch

/**
 * @brief Counters of a StreamPrefetcher (StreamPrefetcher::stats()).
 *
 * @code
 * auto const s = prefetcher.stats();
 * std::printf("%llu batches, host waited %llu times\n",
 *             (unsigned long long)s.delivered, (unsigned long long)s.host_waits);
 * @endcode
 */
struct PrefetchStats {
  std::uint64_t fetched{0};    ///< batches the source produced
  std::uint64_t delivered{0};  ///< batches handed to the consumer
  /// Times the host blocked on a copy because it was `depth` batches ahead of the GPU.
  std::uint64_t host_waits{0};
  std::uint64_t bytes_copied{0};  ///< bytes enqueued through PrefetchCopier::to_device
  std::uint64_t bytes_staged{0};  ///< of bytes_copied: bytes staged through page-locked memory
};

/**
 * @brief One batch as the consumer of a StreamPrefetcher sees it: the host batch, the device
 *        slot its copy landed in, and its position in the source.
 *
 * Owned by the prefetcher (neither copyable nor movable); valid until the loop advances. The
 * device slot is reused for a later batch once the work the consumer queued on the compute
 * stream during this iteration has completed. Used by the consumer's thread only.
 *
 * @code
 * for (auto& batch : prefetcher) {
 *   forward<<<grid, block, 0, compute>>>(batch.device().images, batch.host().count);
 * }
 * @endcode
 *
 * @tparam HostBatch what the source produces
 * @tparam Slot the device-side slot type made by the slot factory
 */
template <class HostBatch, class Slot>
class PrefetchedBatch {
 public:
  /// Made by the prefetcher only (the key is private to it).
  /// @param slot the device slot, moved in.
  /// @param slot_index which slot it is.
  PrefetchedBatch(detail::prefetch::BatchKey /*key*/, Slot&& slot, std::size_t slot_index)
      : device_{std::move(slot)}, slot_index_{slot_index} {}

  PrefetchedBatch(PrefetchedBatch const&) = delete;
  PrefetchedBatch& operator=(PrefetchedBatch const&) = delete;
  PrefetchedBatch(PrefetchedBatch&&) = delete;
  PrefetchedBatch& operator=(PrefetchedBatch&&) = delete;
  ~PrefetchedBatch() = default;

  /// The batch's position. @return its index in the source: 0, 1, 2, …
  [[nodiscard]] std::size_t index() const noexcept { return index_; }

  /// Which slot holds it. @return index() % depth.
  [[nodiscard]] std::size_t slot_index() const noexcept { return slot_index_; }

  /// The host batch. @return the batch the source produced.
  [[nodiscard]] HostBatch& host() noexcept { return *host_; }
  /// The host batch. @return the batch the source produced.
  [[nodiscard]] HostBatch const& host() const noexcept { return *host_; }

  /// The device-side slot. Work on the compute stream may read it: the copy is complete for that
  /// stream's work (the stream waited for it).
  /// @return the slot the transfer copied the batch into.
  [[nodiscard]] Slot& device() noexcept { return device_; }
  /// The device-side slot. @return the slot the transfer copied the batch into.
  [[nodiscard]] Slot const& device() const noexcept { return device_; }

 private:
  template <class, class, class>
  friend class detail::prefetch::Core;

  std::optional<HostBatch> host_{};
  Slot device_;
  std::size_t index_{0};
  std::size_t slot_index_{0};
};

NSIGHTKIT_DETAIL_END_NAMESPACE
