/**
 * @file prefetch.hpp
 * @brief nsightkit::StreamPrefetcher — host-to-device copies of the next batches on a side
 *        stream, overlapping the compute on the current one, ordered by CUDA events only.
 *
 * @code
 * #include <nsightkit/prefetch.hpp>
 * namespace nsk = nsightkit;
 *
 * struct HostBatch { std::vector<float> images; std::vector<int> labels; };  // pageable is fine
 * struct DeviceBatch {                                  // one "slot": device buffers for a batch
 *   DeviceBuffer<float> images{batch_size * 3 * 224 * 224};
 *   DeviceBuffer<int> labels{batch_size};
 * };
 *
 * nsk::PrefetchOptions options;
 * options.depth = 2;                                    // double buffering
 * nsk::StreamPrefetcher<HostBatch, DeviceBatch> prefetcher{
 *     [&]() -> std::optional<HostBatch> { return loader.next(); },   // std::nullopt: the end
 *     [](HostBatch& h, DeviceBatch& d, nsk::PrefetchCopier& copy) {  // runs on the copy stream
 *       copy.to_device(d.images.data(), h.images.data(), h.images.size() * sizeof(float));
 *       copy.to_device(d.labels.data(), h.labels.data(), h.labels.size() * sizeof(int));
 *     },
 *     [](std::size_t) { return DeviceBatch{}; },                    // `depth` times, up front
 *     nsk::StreamView{compute},                                     // where the consumer works
 *     options};
 *
 * for (auto& batch : prefetcher) {                      // batch N's copy is complete for `compute`
 *   train_step(batch.device(), batch.host().labels.size(), compute);  // queue work on `compute`
 * }                                                     // meanwhile N+1 … N+depth-1 are copied
 * @endcode
 *
 * While the consumer's work on batch N runs on the compute stream, the copies of batches
 * N+1 … N+depth-1 run on a copy stream. Ordering is by CUDA events only (`cudaEventRecord` /
 * `cudaStreamWaitEvent`, two per slot, created once): the compute stream waits for a batch's
 * copies before the consumer sees it, and a slot is rewritten only after the compute work queued
 * on its previous batch. The host blocks in one case only: when it is `depth` batches ahead of
 * the GPU (an NVTX range "prefetch wait", PrefetchStats::host_waits). Pageable host memory is
 * staged through page-locked blocks of a PinnedMemoryPool; page-locked memory is copied directly.
 *
 * Misuse is std::invalid_argument or std::logic_error; CUDA failures are nsightkit::CudaError
 * naming the call; an exception of the source or the transfer for batch k reaches the consumer at
 * batch k. The destructor waits for the GPU work that still uses the pipeline's memory, then
 * frees it. On the consumer's thread each batch shows NVTX ranges "prefetch source",
 * "prefetch copy" and one "H2D <size>" per copy; the streams are named "prefetch copy" and
 * "compute".
 *
 * Not instrumentation: works the same under `NSIGHTKIT_DISABLE` (minus the NVTX ranges and the
 * stream names). Needs the CUDA runtime headers and cudart. The user guide, with timelines, the
 * ordering rules and measurements: docs/prefetch.md.
 */
#pragma once

#include <nsightkit/config.hpp>

#if !NSIGHTKIT_HAS_CUDA
#error "nsightkit/prefetch.hpp needs the CUDA runtime headers (cuda_runtime_api.h)"
#endif

#include <nsightkit/attributes.hpp>
#include <nsightkit/cuda_check.hpp>
#include <nsightkit/detail/function.hpp>
#include <nsightkit/detail/pinned/size_class.hpp>
#include <nsightkit/detail/pinned/status.hpp>
#include <nsightkit/detail/prefetch/core.hpp>
#include <nsightkit/detail/prefetch/cuda.hpp>
#include <nsightkit/pinned.hpp>
#include <nsightkit/prefetch_types.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

template <class HostBatch, class Slot>
class StreamPrefetcher;

/**
 * @brief When PrefetchCopier::to_device() stages a copy through page-locked memory.
 *
 * @code
 * nsightkit::PrefetchOptions options;
 * options.staging = nsightkit::PrefetchStaging::never;  // the source yields pinned memory only
 * @endcode
 */
enum class PrefetchStaging {
  /// Stage pageable host memory; copy page-locked, managed and device memory directly. Costs one
  /// `cudaPointerGetAttributes` per copy (a lookup, no synchronization).
  automatic,
  /// Always stage (copy into a pool block, then DMA from there).
  always,
  /// Never stage: copy directly. From pageable memory CUDA then stages itself, synchronously
  /// for the host and at pageable speed.
  never,
};

/**
 * @brief Settings of a StreamPrefetcher.
 *
 * @code
 * nsightkit::PrefetchOptions options;
 * options.depth = 3;                                       // triple buffering
 * options.copy_stream = nsightkit::StreamView{my_stream};  // instead of a stream of its own
 * options.staging_pool = &pool;                            // share page-locked staging memory
 * @endcode
 */
struct PrefetchOptions {
  /// Slots in the ring: 1 = no overlap (copy, then compute), 2 = double buffering, 3 … 64.
  std::size_t depth{2};

  /// The stream the copies run on. Empty: the prefetcher creates a non-blocking stream and
  /// destroys it with itself. A given stream must outlive the prefetcher, must not be the compute
  /// stream, and should be non-blocking when the compute stream is the legacy default stream
  /// (otherwise the two synchronize implicitly and nothing overlaps).
  std::optional<StreamView> copy_stream{};

  /// The pool staging blocks come from. Null: the prefetcher owns one. A given pool must outlive
  /// the prefetcher; it may be shared (it is thread-safe).
  PinnedMemoryPool* staging_pool{nullptr};

  /// When to stage copies through page-locked memory.
  PrefetchStaging staging{PrefetchStaging::automatic};

  /// NVTX name given to the copy stream (nullptr: leave its name alone).
  char const* copy_stream_name{"prefetch copy"};

  /// NVTX name given to the compute stream (nullptr: leave its name alone).
  char const* compute_stream_name{"compute"};
};

/**
 * @brief What a StreamPrefetcher's transfer function queues the copies of one batch with.
 *
 * Valid only during the transfer call it was passed to, on that call's thread.
 *
 * @code
 * [](HostBatch& h, DeviceBatch& d, nsightkit::PrefetchCopier& copy) {
 *   copy.to_device(d.pixels, h.pixels.data(), h.pixels.size());
 *   to_float<<<blocks, threads, 0, copy.stream().value()>>>(d.pixels, d.images, h.pixels.size());
 * }
 * @endcode
 */
class PrefetchCopier {
 public:
  PrefetchCopier(PrefetchCopier const&) = delete;
  PrefetchCopier& operator=(PrefetchCopier const&) = delete;
  PrefetchCopier(PrefetchCopier&&) = delete;
  PrefetchCopier& operator=(PrefetchCopier&&) = delete;
  ~PrefetchCopier() = default;

  /// The copy stream. @return the stream the copies run on: work queued on it for this batch is
  /// ordered like the copies.
  [[nodiscard]] StreamView stream() const noexcept { return stream_; }

  /// The batch being transferred. @return its index (0, 1, 2, …).
  [[nodiscard]] std::size_t index() const noexcept { return index_; }

  /// The bytes queued so far. @return the bytes to_device() queued for this batch.
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

  /**
   * @brief Queues a copy of `bytes` bytes from `host` to `device` on the copy stream.
   *
   * Pageable host memory is first copied into a page-locked block of the staging pool (on this
   * thread, now), then copied asynchronously from there; the block returns to the pool naming
   * the copy stream. Page-locked, managed or device memory is copied directly
   * (`cudaMemcpyDefault`) and must stay valid until the copy completed — the prefetcher keeps the
   * HostBatch alive that long. See PrefetchStaging. An NVTX range "H2D <size>" or
   * "H2D staged <size>" with the byte count as payload covers the call.
   *
   * @param device destination (device memory of the slot)
   * @param host source
   * @param bytes byte count; 0 does nothing
   * @throws std::invalid_argument for a null pointer with a non-zero count; CudaError when a CUDA
   *         call fails; std::bad_alloc when no page-locked memory is left for staging
   */
  void to_device(void* device, void const* host, std::size_t bytes) {
    if (bytes == 0) return;
    if (device == nullptr || host == nullptr) {
      char message[160];
      std::snprintf(message, sizeof message,
                    "nsightkit::PrefetchCopier::to_device: null pointer (device=%p, host=%p, "
                    "%zu bytes)",
                    device, host, bytes);
      NSIGHTKIT_DETAIL_THROW(std::invalid_argument{message});
    }
    bool const stage =
        staging_ == PrefetchStaging::always ||
        (staging_ == PrefetchStaging::automatic && detail::prefetch::is_pageable(host));
    if (stage) {
      detail::pinned::MemoryRange const range{"H2D staged", bytes};  // "H2D staged 1 MiB"
      void* block = pool_->allocate(bytes);
      std::memcpy(block, host, bytes);
      cudaError_t const status =
          cudaMemcpyAsync(device, block, bytes, cudaMemcpyDefault, stream_.value());
      pool_->deallocate(block, bytes, stream_);  // reused once the copy stream passed this point
      detail::cuda_check(status,
                         "cudaMemcpyAsync(device, staging, bytes, cudaMemcpyDefault, copy_stream) "
                         "in nsightkit::PrefetchCopier::to_device",
                         __FILE__, __LINE__);
      stats_->bytes_staged += bytes;
    } else {
      detail::pinned::MemoryRange const range{"H2D", bytes};
      detail::cuda_check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyDefault, stream_.value()),
                         "cudaMemcpyAsync(device, host, bytes, cudaMemcpyDefault, copy_stream) in "
                         "nsightkit::PrefetchCopier::to_device",
                         __FILE__, __LINE__);
    }
    bytes_ += bytes;
    stats_->bytes_copied += bytes;
  }

 private:
  template <class, class>
  friend class StreamPrefetcher;

  PrefetchCopier(StreamView stream, std::size_t index, PrefetchStaging staging,
                 PinnedMemoryPool& pool, PrefetchStats& stats) noexcept
      : stream_{stream}, index_{index}, staging_{staging}, pool_{&pool}, stats_{&stats} {}

  StreamView stream_;
  std::size_t index_;
  PrefetchStaging staging_;
  PinnedMemoryPool* pool_;
  PrefetchStats* stats_;
  std::size_t bytes_{0};
};

/**
 * @brief Prefetches batches to the GPU on a copy stream while the consumer computes on another:
 *        `for (auto& batch : prefetcher) { … }` (docs/prefetch.md has the full contract).
 *
 * @tparam HostBatch what the source produces (movable): a struct of host vectors, a view, a
 *         `std::reference_wrapper` to an element of a container, …
 * @tparam Slot the device-side storage of one batch (movable), made `depth` times by the slot
 *         factory; the consumer reads it as `batch.device()`
 *
 * Per iteration the consumer gets a PrefetchedBatch: `index()`, `host()`, `device()`,
 * `slot_index()`. The prefetcher is single-pass (begin() once), movable, not copyable; its
 * iterator refers to state on the heap, so moving the prefetcher does not invalidate it.
 * Construct it with the compute stream's device current; not for a compute stream that is being
 * recorded into a CUDA graph.
 *
 * Thread safety: driven by one thread at a time, the consumer's (the source and the transfer
 * run on it). Several prefetchers may share a PinnedMemoryPool.
 *
 * @code
 * std::vector<HostBatch> batches = load_epoch();
 * nsightkit::StreamPrefetcher<std::reference_wrapper<HostBatch const>, DeviceBatch> prefetcher{
 *     batches.begin(), batches.end(),                               // no copies of the elements
 *     [](HostBatch const& h, DeviceBatch& d, nsightkit::PrefetchCopier& copy) {
 *       copy.to_device(d.data, h.data.data(), h.data.size() * sizeof(float));
 *     },
 *     [&](std::size_t) { return DeviceBatch{batch_bytes}; },
 *     nsightkit::StreamView{compute}};
 * for (auto& batch : prefetcher) step(batch.device(), compute);
 * @endcode
 */
template <class HostBatch, class Slot>
class StreamPrefetcher {
  using Core = detail::prefetch::Core<detail::prefetch::CudaBackend, HostBatch, Slot>;

 public:
  /// What the loop yields: host batch, device slot, index.
  using Batch = PrefetchedBatch<HostBatch, Slot>;
  /// The source: the next host batch, or std::nullopt at the end. Called on the consumer's thread
  /// when the loop advances (`depth` times in begin()); not called again once it ran dry or threw
  /// (the consumer gets the exception at that batch).
  using Source = std::function<std::optional<HostBatch>()>;
  /// The transfer: queues the copies of one host batch into one slot through the copier, and may
  /// queue work of its own on the copy stream only; it must not synchronize. May throw (the
  /// consumer gets the exception at that batch).
  using Transfer = std::function<void(HostBatch&, Slot&, PrefetchCopier&)>;
  /// The slot factory: the device storage of slot `i` (0 … depth-1), called by the constructor.
  /// Work it queues on a default stream is ordered before the first copy; work on other streams
  /// must be complete (or joined into the copy stream) before the loop starts.
  using SlotFactory = std::function<Slot(std::size_t)>;
  /// The input iterator of the loop.
  using iterator = typename Core::iterator;
  /// The end of the loop.
  using sentinel = detail::prefetch::End;

  /**
   * @brief A prefetcher over a generator-like source.
   *
   * Validates the arguments, creates the copy stream (unless given) and two events per slot,
   * calls `make_slot` `depth` times and names the streams. Fetches nothing before begin().
   * @param source returns the next host batch, std::nullopt at the end
   * @param transfer queues the copies of a host batch into a slot (see PrefetchCopier)
   * @param make_slot makes the device storage of slot i
   * @param compute the stream the consumer's work runs on; must outlive the prefetcher
   * @param options depth, copy stream, staging pool and policy, stream names
   * @throws std::invalid_argument for a bad depth, an empty function or the copy stream being
   *         the compute stream (before any CUDA call); CudaError when creating the stream or the
   *         events fails (no driver, no device); whatever make_slot throws
   */
  StreamPrefetcher(Source source, Transfer transfer, SlotFactory make_slot, StreamView compute,
                   PrefetchOptions const& options = PrefetchOptions{})
      : impl_{std::make_unique<Impl>(std::move(source), std::move(transfer), make_slot, compute,
                                     options)} {}

  /**
   * @brief A prefetcher over the iterator range [first, last): each element constructs a
   *        HostBatch (`HostBatch{*it}`). Otherwise as the source constructor.
   *
   * The iterators are copied into the prefetcher; the elements are read when the loop reaches
   * them (`depth` elements ahead of the consumer).
   * @param first the first element (each element is read once)
   * @param last the end of the elements
   * @param transfer queues the copies of a host batch into a slot (see PrefetchCopier)
   * @param make_slot makes the device storage of slot i
   * @param compute the stream the consumer's work runs on; must outlive the prefetcher
   * @param options depth, copy stream, staging pool and policy, stream names
   * @throws as the source constructor
   */
  template <class It, class Sent,
            std::enable_if_t<detail::prefetch::is_batch_iterator<It, Sent, HostBatch>, int> = 0>
  StreamPrefetcher(It first, Sent last, Transfer transfer, SlotFactory make_slot,
                   StreamView compute, PrefetchOptions const& options = PrefetchOptions{})
      : StreamPrefetcher(Source{detail::prefetch::RangeSource<It, Sent, HostBatch>{
                             std::move(first), std::move(last)}},
                         std::move(transfer), std::move(make_slot), compute, options) {}

  /// Takes over `other`'s pipeline (iterators stay valid); `other` becomes empty.
  /// @param other the prefetcher to take over.
  StreamPrefetcher(StreamPrefetcher&& other) noexcept = default;
  /// Ends this pipeline (as the destructor), then takes over `other`'s.
  /// @param other the prefetcher to take over.
  /// @return `*this`.
  StreamPrefetcher& operator=(StreamPrefetcher&& other) noexcept = default;
  StreamPrefetcher(StreamPrefetcher const&) = delete;
  StreamPrefetcher& operator=(StreamPrefetcher const&) = delete;

  /// Waits for the copies in flight and for the compute work queued on batches handed out, then
  /// destroys host batches, slots, events and the owned stream and pool. Never throws.
  ~StreamPrefetcher() = default;

  /**
   * @brief Starts the pipeline: fetches and transfers the first `depth` batches, makes the
   *        compute stream wait for batch 0, and returns an iterator on it (or the end).
   * @return the iterator on batch 0, or one equal to end() for an empty source.
   * @throws std::logic_error when called a second time or on a moved-from prefetcher; the
   *         exception of batch 0 if its source call or transfer threw; CudaError
   */
  [[nodiscard]] iterator begin() { return impl().core_.begin(); }

  /// The end of the loop. @return the sentinel the loop's iterator compares to.
  [[nodiscard]] sentinel end() const noexcept { return {}; }

  /// The number of slots. @return PrefetchOptions::depth.
  /// @throws std::logic_error on a moved-from prefetcher (as the accessors below).
  [[nodiscard]] std::size_t depth() const { return impl().core_.depth(); }

  /// The copy stream. @return the stream the copies run on (owned or given).
  [[nodiscard]] StreamView copy_stream() const { return impl().copy_; }

  /// The compute stream. @return the stream the consumer's work runs on.
  [[nodiscard]] StreamView compute_stream() const { return impl().compute_; }

  /// The counters. @return a copy of the counters so far.
  [[nodiscard]] PrefetchStats stats() const { return impl().core_.stats(); }

  /// The staging pool, e.g. for its statistics.
  /// @return the pool staging blocks come from (owned or given).
  [[nodiscard]] PinnedMemoryPool& staging_pool() const { return *impl().pool_; }

 private:
  struct Impl {
    Impl(Source&& source, Transfer&& transfer, SlotFactory const& make_slot, StreamView compute,
         PrefetchOptions const& options)
        : options_{checked(options, compute, source, transfer, make_slot)},
          owned_pool_{options.staging_pool == nullptr ? std::make_unique<PinnedMemoryPool>()
                                                      : nullptr},
          pool_{options.staging_pool != nullptr ? options.staging_pool : owned_pool_.get()},
          owned_copy_{options.copy_stream ? detail::prefetch::OwnedStream{}
                                          : detail::prefetch::OwnedStream::create()},
          compute_{compute},
          copy_{options.copy_stream ? *options.copy_stream : StreamView{owned_copy_.get()}},
          transfer_{std::move(transfer)},
          core_{std::move(source),
                [this](HostBatch& host, Slot& slot, std::size_t index) {
                  PrefetchCopier copier{copy_, index, options_.staging, *pool_,
                                        core_.mutable_stats()};
                  transfer_(host, slot, copier);
                },
                make_slot,
                options.depth,
                compute.value(),
                copy_.value()} {
      // The slot factory may have initialised the slots on a default stream (cudaMemset).
      detail::prefetch::wait_for_default_streams(copy_.value());
      if (options_.copy_stream_name != nullptr)
        name_stream(copy_.value(), options_.copy_stream_name);
      if (options_.compute_stream_name != nullptr) {
        name_stream(compute_.value(), options_.compute_stream_name);
      }
    }

    Impl(Impl const&) = delete;
    Impl& operator=(Impl const&) = delete;
    ~Impl() = default;

    // Validates everything that can be checked without CUDA, before any CUDA call.
    static PrefetchOptions const& checked(PrefetchOptions const& options, StreamView compute,
                                          Source const& source, Transfer const& transfer,
                                          SlotFactory const& make_slot) {
      detail::prefetch::check_arguments(options.depth, static_cast<bool>(source),
                                        static_cast<bool>(transfer), static_cast<bool>(make_slot));
      if (options.copy_stream && *options.copy_stream == compute) {
        NSIGHTKIT_DETAIL_THROW(std::invalid_argument{
            "nsightkit::StreamPrefetcher: the copy stream is the compute stream, so copies could "
            "never overlap compute; leave PrefetchOptions::copy_stream empty (a stream of its "
            "own) or use depth = 1 for a serial loop"});
      }
      return options;
    }

    // Destroyed in reverse: the core first (it waits for the GPU), then the stream and the pool.
    PrefetchOptions options_;
    std::unique_ptr<PinnedMemoryPool> owned_pool_;
    PinnedMemoryPool* pool_;
    detail::prefetch::OwnedStream owned_copy_;
    StreamView compute_;
    StreamView copy_;
    Transfer transfer_;
    Core core_;
  };

  Impl& impl() const {
    if (!impl_) {
      NSIGHTKIT_DETAIL_THROW(
          std::logic_error{"nsightkit::StreamPrefetcher: used after it was moved from"});
    }
    return *impl_;
  }

  std::unique_ptr<Impl> impl_;
};

NSIGHTKIT_DETAIL_END_NAMESPACE
