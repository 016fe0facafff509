/**
 * @file pinned.hpp
 * @brief Page-locked (pinned) host memory: PinnedMemoryResource, PinnedMemoryPool, PinnedBlock
 *        and PinnedAllocator<T>.
 *
 * Copies to the GPU from page-locked memory run several times faster than from pageable memory
 * and can overlap with kernels, but `cudaHostAlloc` itself takes milliseconds (1.5 ms for 1 MiB,
 * 56 ms for 64 MiB measured on an H100 host). So: allocate page-locked memory rarely, keep it,
 * reuse it — PinnedMemoryPool does that, and it respects copies still in flight:
 *
 * @code
 * nsightkit::PinnedMemoryPool pool;                      // no CUDA call yet
 * void* staging = pool.allocate(batch_bytes);            // cudaHostAlloc the first time only
 * fill(staging);
 * cudaMemcpyAsync(dev, staging, batch_bytes, cudaMemcpyHostToDevice, copy_stream);
 * pool.deallocate(staging, batch_bytes, nsightkit::StreamView{copy_stream});
 * // Not handed out again before the copy has finished; the host does not wait for it either.
 *
 * nsightkit::PinnedAllocator<float> alloc{pool};         // standard containers on the pool
 * std::vector<float, nsightkit::PinnedAllocator<float>> v(n, 0.f, alloc);
 * std::pmr::vector<float> w{&pool};                      // the pool is a std::pmr::memory_resource
 * @endcode
 *
 * Which one to use (numbers in docs/pinned-memory.md):
 * - PinnedMemoryPool: buffers allocated and freed repeatedly (staging, per-batch buffers).
 * - PinnedAllocator<T>: a standard container in page-locked memory, on a pool (recommended) or,
 *   default-constructed, straight on cudaHostAlloc (each growth then costs milliseconds).
 * - PinnedMemoryResource: std::pmr containers straight on cudaHostAlloc/cudaFreeHost, for
 *   long-lived buffers allocated once.
 *
 * Errors. Out of page-locked memory is `std::bad_alloc`; any other CUDA failure is
 * nsightkit::CudaError naming the call — with no driver or no GPU, at the first allocation
 * (constructing a pool or resource makes no CUDA call). Misuse of a pool (double free, a pointer
 * the pool did not allocate, a size that does not match) is always detected — the check is the
 * lookup the pool makes anyway — and goes to PinnedPoolOptions::on_misuse, which by default
 * prints the problem and aborts.
 *
 * Visible in the tools: every cudaHostAlloc/cudaFreeHost made here is an NVTX range in the
 * "nsightkit" domain, e.g. "cudaHostAlloc 64 MiB" with the byte count as payload.
 *
 * Not instrumentation: everything here works the same under `NSIGHTKIT_DISABLE` (minus the NVTX
 * ranges). Needs the CUDA runtime headers and cudart.
 */
#pragma once

#include <nsightkit/config.hpp>

#if !NSIGHTKIT_HAS_CUDA
#error "nsightkit/pinned.hpp needs the CUDA runtime headers (cuda_runtime_api.h)"
#endif

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/pinned/cuda.hpp>
#include <nsightkit/detail/pinned/size_class.hpp>
#include <nsightkit/detail/pinned/status.hpp>
#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/pinned/pool_core.hpp>
#endif
#include <nsightkit/pinned_types.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <memory_resource>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

namespace detail::pinned {
template <class Backend>
class PoolCore;
}  // namespace detail::pinned

/**
 * @brief A `std::pmr::memory_resource` handing out page-locked memory straight from
 *        `cudaHostAlloc` and returning it with `cudaFreeHost`. No caching.
 *
 * - allocate(0) returns a non-null, 256-byte aligned address that owns no memory (no CUDA call);
 *   deallocating it does nothing. (Not nullptr: libstdc++ declares memory_resource::allocate
 *   `returns_nonnull`.)
 * - Alignment: every block is aligned to 256 bytes (CUDA documents no alignment for
 *   cudaHostAlloc; an H100 host returned 512-byte aligned blocks below 1 MiB); larger or
 *   non-power-of-two alignments throw std::invalid_argument.
 * - allocate throws std::bad_alloc when out of page-locked memory, CudaError on other CUDA
 *   failures; deallocate never throws (a failing cudaFreeHost, e.g. for a pointer that is not
 *   page-locked memory, is reported on stderr).
 * - Any two PinnedMemoryResource objects compare equal: each can free the other's memory.
 *   (Built without RTTI, only a resource and itself compare equal.)
 *
 * Every call costs a `cudaHostAlloc` (milliseconds): use it for buffers allocated once; use
 * PinnedMemoryPool for buffers allocated repeatedly. Thread safety: it holds only its flags, so
 * any number of threads may allocate and deallocate through one resource at once.
 *
 * @code
 * nsightkit::PinnedMemoryResource pinned;
 * std::pmr::vector<float> host_batch{n, &pinned};  // page-locked: fast, async H2D copies
 * @endcode
 */
class PinnedMemoryResource final : public std::pmr::memory_resource {
 public:
  /// The largest alignment served (256 bytes).
  static constexpr std::size_t max_alignment = detail::pinned::max_alignment;

  /// A resource for page-locked memory allocated with `flags`. Makes no CUDA call.
  /// @param flags passed to cudaHostAlloc (cudaHostAllocDefault, cudaHostAllocPortable,
  ///        cudaHostAllocMapped, cudaHostAllocWriteCombined).
  explicit PinnedMemoryResource(unsigned int flags = cudaHostAllocDefault) noexcept
      : flags_{flags} {}

  /// The allocation flags. @return the flags passed to cudaHostAlloc.
  [[nodiscard]] unsigned int flags() const noexcept { return flags_; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    detail::pinned::check_alignment(alignment, "nsightkit::PinnedMemoryResource::allocate");
    if (bytes == 0) return detail::pinned::zero_size_pointer();
    return detail::pinned::direct_allocate(bytes, flags_);
  }

  void do_deallocate(void* p, std::size_t bytes, std::size_t /*alignment*/) noexcept override {
    if (p != nullptr && p != detail::pinned::zero_size_pointer())
      detail::pinned::direct_free(p, bytes);
  }

  [[nodiscard]] bool do_is_equal(std::pmr::memory_resource const& other) const noexcept override {
#if defined(__cpp_rtti) || defined(__GXX_RTTI) || defined(_CPPRTTI)
    return dynamic_cast<PinnedMemoryResource const*>(&other) != nullptr;
#else
    return this == &other;  // without RTTI, only identity can be established
#endif
  }

  unsigned int flags_;
};

/**
 * @brief Called with a message when a PinnedMemoryPool detects misuse (double free, foreign
 *        pointer, wrong size). Must not throw. If it returns, the offending call does nothing.
 */
using PinnedPoolMisuseHandler = void (*)(char const* message);

/**
 * @brief Settings of a PinnedMemoryPool.
 *
 * @code
 * nsightkit::PinnedPoolOptions options;
 * options.max_cached_bytes = std::size_t{1} << 30;  // keep at most 1 GiB of idle blocks
 * nsightkit::PinnedMemoryPool pool{options};
 * @endcode
 */
struct PinnedPoolOptions {
  /// Upper bound on cached (freed, kept) bytes. Past it, completed cached blocks are returned
  /// with cudaFreeHost, oldest freed first. Blocks whose copies may still be in flight are never
  /// freed early, so the cache can exceed the bound until their events complete; the next
  /// allocate, deallocate or release() that finds them complete trims them. 0 disables caching.
  std::size_t max_cached_bytes{std::numeric_limits<std::size_t>::max()};

  /// Flags for cudaHostAlloc (cudaHostAllocDefault, cudaHostAllocPortable, …).
  unsigned int host_alloc_flags{cudaHostAllocDefault};

  /// Receives misuse reports; null means: print the message on stderr and abort.
  PinnedPoolMisuseHandler on_misuse{nullptr};
};

class PinnedBlock;

/**
 * @brief A thread-safe caching pool of page-locked host memory with stream-ordered reuse.
 *
 * **Size classes.** Requests are rounded up to a block size: one 4 KiB page at least, then four
 * classes per power of two (…, 1 MiB, 1.25 MiB, 1.5 MiB, 1.75 MiB, 2 MiB, …), so a block wastes
 * at most 25% of its size; powers of two are exact. A freed block serves later requests of the
 * same class only.
 *
 * **Stream-ordered reuse.** `deallocate(p, bytes, stream)` records an event on `stream`; the block
 * is handed out again only when that event (and one per stream named with record_stream()) has
 * completed. allocate() never waits for it: when every cached block of the class is still in
 * flight it allocates a new block (counted in PinnedPoolStats::pending_misses). The pool thus
 * grows to the number of blocks in flight at once — the depth of the copy pipeline — and then
 * serves everything from the cache. `deallocate(p, bytes)` (and the std::pmr interface) mean
 * "no GPU work uses this block any more": it is reusable at once.
 * Events are created without timing, kept per device and reused.
 *
 * **CUDA graphs.** A block freed on a stream that is being recorded into a graph is retired: the
 * graph may read it at any replay, so it is never handed out again; it is returned when the pool
 * is destroyed (PinnedPoolStats::bytes_retired). If recording an event fails, the pool
 * synchronizes that stream instead, and retires the block if that fails too.
 *
 * **Cap.** PinnedPoolOptions::max_cached_bytes bounds the idle blocks kept; see there. Nothing
 * bounds the bytes in use: allocation never waits for a block to come back, so the system's
 * page-locked memory is the limit (std::bad_alloc).
 * release() returns every completed cached block now. When cudaHostAlloc runs out of memory, the
 * pool releases its completed cached blocks and tries once more before throwing std::bad_alloc.
 *
 * **Errors.** allocate: std::bad_alloc (out of page-locked memory), CudaError (no driver, no
 * device, a CUDA error reported by an event query), std::invalid_argument (alignment above 256
 * or not a power of two). deallocate never throws. Misuse (double free, foreign pointer, a size
 * of another class) always goes to PinnedPoolOptions::on_misuse (default: message and abort).
 *
 * **Lifetime.** The destructor waits for blocks still in flight and frees everything cached;
 * blocks still handed out are leaked and reported on stderr. The pool is not copyable or
 * movable (containers refer to it by address).
 *
 * **Thread safety.** Every member may be called from any thread: one mutex guards the pool's
 * bookkeeping, and CUDA allocation and freeing run outside it.
 *
 * @code
 * nsightkit::PinnedMemoryPool pool;
 * for (auto& batch : batches) {
 *   void* h = pool.allocate(batch.bytes);        // a cache hit after the first few batches
 *   batch.serialize_to(h);
 *   cudaMemcpyAsync(d, h, batch.bytes, cudaMemcpyHostToDevice, stream);
 *   pool.deallocate(h, batch.bytes, nsightkit::StreamView{stream});
 * }
 * auto const s = pool.stats();                   // s.cache_hits, s.host_alloc_calls, ...
 * @endcode
 */
class PinnedMemoryPool final : public std::pmr::memory_resource {
 public:
  /// A pool with default options. Makes no CUDA call.
  PinnedMemoryPool() : PinnedMemoryPool(PinnedPoolOptions{}) {}

  /// A pool with `options`. Makes no CUDA call.
  /// @param options the cache bound, the cudaHostAlloc flags and the misuse handler.
  explicit PinnedMemoryPool(PinnedPoolOptions const& options);

  PinnedMemoryPool(PinnedMemoryPool const&) = delete;
  PinnedMemoryPool& operator=(PinnedMemoryPool const&) = delete;

  /// Waits for blocks in flight, frees every cached block; blocks in use are leaked (reported).
  NSIGHTKIT_DETAIL_MEMBER ~PinnedMemoryPool() override;

  /// `allocate(bytes, alignment = alignof(std::max_align_t))` from std::pmr::memory_resource:
  /// a block of at least `bytes` bytes, reused from the cache when possible. Zero bytes gives a
  /// non-null address owning no memory (as PinnedMemoryResource), not counted in the statistics.
  /// @throws std::bad_alloc, CudaError, std::invalid_argument (see the class description).
  using std::pmr::memory_resource::allocate;

  /// `deallocate(p, bytes, alignment = …)` from std::pmr::memory_resource: gives the block back,
  /// reusable at once (after streams named with record_stream(), if any). Never throws.
  using std::pmr::memory_resource::deallocate;

  /**
   * @brief Gives a block back that work queued on `stream` may still use.
   *
   * Records an event on `stream` (and on each stream named with record_stream()); the block is
   * handed out again only after they completed. Never throws; does not wait for the GPU, unless
   * recording an event fails (then it synchronizes that stream instead).
   * @param p a pointer from allocate() of this pool (nullptr or the zero-byte address: nothing
   *          happens)
   * @param bytes the size passed to allocate()
   * @param stream the stream whose queued work may still read or write the block
   */
  void deallocate(void* p, std::size_t bytes, StreamView stream) noexcept;

  /**
   * @brief Notes that block `p`, still in use, is also used on `stream`.
   *
   * When the block is given back (by any deallocate), it also waits for `stream`. Like
   * PyTorch's `Tensor.record_stream`. Call it for every stream but the one passed to deallocate.
   * @param p a block of this pool, currently handed out
   * @param stream a stream that reads or writes the block
   * @throws std::bad_alloc if the note cannot be stored. Misuse (a pointer not in use) goes to
   *         PinnedPoolOptions::on_misuse.
   */
  void record_stream(void* p, StreamView stream);

  /**
   * @brief A block of at least `bytes` bytes owned by a PinnedBlock handle, which gives it back
   *        (waiting for the streams recorded on it) when destroyed.
   * @param bytes the size wanted.
   * @return the handle; empty for 0 bytes.
   * @throws as allocate()
   */
  [[nodiscard]] PinnedBlock acquire(std::size_t bytes);

  /**
   * @brief Returns every cached block whose copies completed to the system (cudaFreeHost).
   * @return the bytes returned
   * @throws CudaError if an event query reports a CUDA error
   */
  std::size_t release();

  /// The pool's counters. @return a consistent snapshot (taken under the pool's lock).
  [[nodiscard]] PinnedPoolStats stats() const;

  /// The pool's settings. @return the options the pool was built with.
  [[nodiscard]] PinnedPoolOptions const& options() const noexcept { return options_; }

  /// The block size a request gets. @param bytes the request.
  /// @return its size class; 0 for 0 bytes and for requests too large to serve.
  [[nodiscard]] static constexpr std::size_t block_size(std::size_t bytes) noexcept {
    return bytes > detail::pinned::max_request ? 0 : detail::pinned::size_class(bytes);
  }

 private:
  // Virtual members are declared inline where they are defined inline (header-only), so that no
  // translation unit becomes the class's key function home and emits its vtable unasked.
  NSIGHTKIT_DETAIL_MEMBER void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  NSIGHTKIT_DETAIL_MEMBER void do_deallocate(void* p, std::size_t bytes,
                                             std::size_t alignment) noexcept override;
  [[nodiscard]] NSIGHTKIT_DETAIL_MEMBER bool do_is_equal(
      std::pmr::memory_resource const& other) const noexcept override;
  void check(detail::pinned::PoolResult r, char const* op, void const* p,
             std::size_t bytes) const noexcept;

  PinnedPoolOptions options_;
  using Core = detail::pinned::PoolCore<detail::pinned::CudaBackend>;
  // Behind a pointer, in both modes (one layout): the compiled mode's headers then need neither
  // the core's definition nor its containers.
  std::unique_ptr<Core> core_;
  // Defined with the members that use them (detail/pinned/pool_impl.hpp), where Core is complete.
  Core& core() noexcept;
  Core const& core() const noexcept;
};

/**
 * @brief An owning handle to one block of a PinnedMemoryPool (move-only).
 *
 * Destruction or reset() gives the block back; it then waits for every stream named with
 * record_stream() (or passed to reset()) before the pool hands it out again. The pool must
 * outlive the handle. Handles may live on different threads; one handle must not be used by two
 * threads at once.
 *
 * @code
 * nsightkit::PinnedBlock staging = pool.acquire(bytes);
 * std::memcpy(staging.data(), src, bytes);
 * cudaMemcpyAsync(dev, staging.data(), bytes, cudaMemcpyHostToDevice, stream);
 * staging.record_stream(nsightkit::StreamView{stream});
 * // leaving the scope gives it back without waiting for the copy
 * @endcode
 */
class PinnedBlock {
 public:
  /// An empty handle.
  PinnedBlock() noexcept = default;

  /// Takes over `other`'s block; `other` becomes empty.
  /// @param other the handle to take over.
  PinnedBlock(PinnedBlock&& other) noexcept
      : pool_{std::exchange(other.pool_, nullptr)},
        data_{std::exchange(other.data_, nullptr)},
        size_{std::exchange(other.size_, 0)} {}

  /// Gives this block back, then takes over `other`'s.
  /// @param other the handle to take over.
  /// @return `*this`.
  PinnedBlock& operator=(PinnedBlock&& other) noexcept {
    if (this != &other) {
      reset();
      pool_ = std::exchange(other.pool_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  PinnedBlock(PinnedBlock const&) = delete;
  PinnedBlock& operator=(PinnedBlock const&) = delete;

  /// Gives the block back (see reset()).
  ~PinnedBlock() { reset(); }

  /// The memory. @return its address, aligned to 256 bytes (nullptr when empty).
  [[nodiscard]] void* data() const noexcept { return data_; }

  /// The memory as an array of T. @tparam T an element type aligned to at most 256 bytes.
  /// @return the address as `T*` (nullptr when empty).
  template <class T>
  [[nodiscard]] T* data_as() const noexcept {
    static_assert(alignof(T) <= detail::pinned::max_alignment, "over-aligned type");
    return static_cast<T*>(data_);
  }

  /// The size asked for. @return the bytes requested (the block may be larger:
  /// PinnedMemoryPool::block_size()); 0 when empty.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// Whether the handle owns a block. @return true when it does.
  explicit operator bool() const noexcept { return data_ != nullptr; }

  /// The block's pool. @return the pool it belongs to (nullptr when empty).
  [[nodiscard]] PinnedMemoryPool* pool() const noexcept { return pool_; }

  /// Notes that the block is used on `stream`: giving it back waits for that stream.
  /// @param stream a stream that reads or writes the block.
  /// @throws std::logic_error when the handle is empty; std::bad_alloc if the note cannot be stored
  void record_stream(StreamView stream) {
    if (pool_ == nullptr) {
      NSIGHTKIT_DETAIL_THROW(
          std::logic_error{"nsightkit::PinnedBlock::record_stream: the handle is empty"});
    }
    pool_->record_stream(data_, stream);
  }

  /// Gives the block back now (waiting for recorded streams); the handle becomes empty.
  void reset() noexcept {
    if (pool_ != nullptr) pool_->deallocate(data_, size_);
    pool_ = nullptr;
    data_ = nullptr;
    size_ = 0;
  }

  /// Gives the block back now; it is reused only after the work queued on `last_use` (and on the
  /// recorded streams) has completed. The handle becomes empty.
  /// @param last_use the stream whose queued work may still use the block.
  void reset(StreamView last_use) noexcept {
    if (pool_ != nullptr) pool_->deallocate(data_, size_, last_use);
    pool_ = nullptr;
    data_ = nullptr;
    size_ = 0;
  }

 private:
  friend class PinnedMemoryPool;
  PinnedBlock(PinnedMemoryPool* pool, void* data, std::size_t size) noexcept
      : pool_{data == nullptr ? nullptr : pool}, data_{data}, size_{data == nullptr ? 0 : size} {}

  PinnedMemoryPool* pool_{nullptr};
  void* data_{nullptr};
  std::size_t size_{0};
};

inline PinnedBlock PinnedMemoryPool::acquire(std::size_t bytes) {
  if (bytes == 0) return PinnedBlock{};
  return PinnedBlock{this, allocate(bytes), bytes};
}

/**
 * @brief A standard allocator of page-locked memory, on a PinnedMemoryPool or straight on
 *        cudaHostAlloc.
 *
 * - Default-constructed: every allocation is a cudaHostAlloc, every deallocation a cudaFreeHost
 *   (milliseconds each; fine for a buffer sized once, slow for a growing container).
 * - `PinnedAllocator<T>{pool}`: allocations come from the pool; freed memory is reusable at once.
 * - `PinnedAllocator<T>{pool, stream}`: freed memory is reused only after the work queued on
 *   `stream` at the time of the free has completed — for containers whose data is copied
 *   asynchronously on that stream (also when a growing vector frees its old buffer).
 *
 * Allocators are equal when they use the same pool and the same stream (or both go straight to
 * cudaHostAlloc); memory must be freed through an equal allocator. All three propagate_on_*
 * traits are true: the allocator travels with the memory it allocated, so move assignment and
 * swap are constant-time and never mix memory of different pools. is_always_equal is false.
 * Thread safety: as the pool's (any thread); the allocator itself holds two plain values.
 *
 * @code
 * nsightkit::PinnedMemoryPool pool;
 * using PinnedFloats = std::vector<float, nsightkit::PinnedAllocator<float>>;
 * PinnedFloats batch(n, 0.f, nsightkit::PinnedAllocator<float>{pool, nsightkit::StreamView{copy}});
 * cudaMemcpyAsync(dev, batch.data(), n * sizeof(float), cudaMemcpyHostToDevice, copy);
 * @endcode
 *
 * @tparam T the element type (alignment at most 256)
 */
template <class T>
class PinnedAllocator {
  static_assert(alignof(T) <= detail::pinned::max_alignment,
                "nsightkit::PinnedAllocator: page-locked blocks are aligned to 256 bytes");

 public:
  using value_type = T;                                           ///< element type
  using size_type = std::size_t;                                  ///< size type
  using difference_type = std::ptrdiff_t;                         ///< difference type
  using propagate_on_container_copy_assignment = std::true_type;  ///< travels with its memory
  using propagate_on_container_move_assignment = std::true_type;  ///< travels with its memory
  using propagate_on_container_swap = std::true_type;             ///< travels with its memory
  using is_always_equal = std::false_type;                        ///< pools differ

  /// The same allocator for another element type.
  template <class U>
  struct rebind {
    using other = PinnedAllocator<U>;  ///< the rebound allocator type
  };

  /// Straight on cudaHostAlloc/cudaFreeHost.
  PinnedAllocator() noexcept = default;

  /// On `pool`; freed memory is reusable at once.
  /// @param pool the pool; it must outlive the allocator and every copy of it.
  explicit PinnedAllocator(PinnedMemoryPool& pool) noexcept : pool_{&pool} {}

  /// On `pool`; freed memory waits for the work queued on `stream` at the time of the free.
  /// @param pool the pool; it must outlive the allocator and every copy of it.
  /// @param stream the stream that copies from or to the memory.
  PinnedAllocator(PinnedMemoryPool& pool, StreamView stream) noexcept
      : pool_{&pool}, stream_{stream} {}

  /// The same pool and stream, for another element type.
  /// @param other the allocator to copy the pool and stream from.
  template <class U>
  PinnedAllocator(PinnedAllocator<U> const& other) noexcept  // NOLINT: implicit, as allocators are
      : pool_{other.pool()}, stream_{other.stream()} {}

  /**
   * @brief Page-locked memory for `n` objects of type T.
   * @param n the number of objects.
   * @return the memory, aligned for T; nullptr for 0.
   * @throws std::bad_array_new_length when n * sizeof(T) overflows; std::bad_alloc when out of
   *         page-locked memory; CudaError for other CUDA failures (no driver, no device).
   */
  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) {
      NSIGHTKIT_DETAIL_THROW(std::bad_array_new_length{});
    }
    if (n == 0) return nullptr;
    std::size_t const bytes = n * sizeof(T);
    void* p = pool_ != nullptr ? pool_->allocate(bytes, alignof(T))
                               : detail::pinned::direct_allocate(bytes, cudaHostAllocDefault);
    return static_cast<T*>(p);
  }

  /// Frees memory from allocate() of an equal allocator. Never throws.
  /// @param p the memory (nullptr: nothing happens).
  /// @param n the count given to allocate().
  void deallocate(T* p, std::size_t n) noexcept {
    if (p == nullptr) return;
    std::size_t const bytes = n * sizeof(T);
    if (pool_ == nullptr) {
      detail::pinned::direct_free(p, bytes);
    } else if (stream_) {
      pool_->deallocate(p, bytes, *stream_);
    } else {
      pool_->deallocate(p, bytes, alignof(T));
    }
  }

  /// The allocator's pool. @return the pool, or nullptr when allocating straight from
  /// cudaHostAlloc.
  [[nodiscard]] PinnedMemoryPool* pool() const noexcept { return pool_; }

  /// The allocator's stream. @return the stream frees wait for, if any.
  [[nodiscard]] std::optional<StreamView> stream() const noexcept { return stream_; }

 private:
  PinnedMemoryPool* pool_{nullptr};
  std::optional<StreamView> stream_{};
};

/// Allocators are equal when memory from one can be freed by the other: same pool and stream.
/// @param a the first allocator. @param b the second.
/// @return true when both use the same pool and stream, or both go straight to cudaHostAlloc.
template <class T, class U>
bool operator==(PinnedAllocator<T> const& a, PinnedAllocator<U> const& b) noexcept {
  return a.pool() == b.pool() && (a.pool() == nullptr || a.stream() == b.stream());
}

/// The negation of operator==. @param a the first allocator. @param b the second.
/// @return `!(a == b)`.
template <class T, class U>
bool operator!=(PinnedAllocator<T> const& a, PinnedAllocator<U> const& b) noexcept {
  return !(a == b);
}

NSIGHTKIT_DETAIL_END_NAMESPACE

#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/pinned/pool_impl.hpp>
#endif
