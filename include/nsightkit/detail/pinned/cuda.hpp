// Internal: page-locked memory and events from the CUDA runtime, for PinnedMemoryResource and
// PinnedMemoryPool (the Backend of detail::pinned::PoolCore).
//
// Error policy: out of page-locked memory (cudaErrorMemoryAllocation) is std::bad_alloc; every
// other failure is nsightkit::CudaError naming the call (no driver: cudaErrorInsufficientDriver,
// no device: cudaErrorNoDevice) — thrown at first use, since constructing a pool or resource
// makes no CUDA call. Calls that cannot throw (frees, event records) report on stderr.
#pragma once

#include <nsightkit/config.hpp>

#if !NSIGHTKIT_HAS_CUDA
#error "nsightkit's pinned memory needs the CUDA runtime headers (cuda_runtime_api.h)"
#endif

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/detail/pinned/size_class.hpp>
#include <nsightkit/detail/pinned/status.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::pinned {

/// The alignment every page-locked block is guaranteed to have. CUDA documents no alignment for
/// cudaHostAlloc; measured on an H100 host (driver 580), blocks below about 1 MiB come back only
/// 512-byte aligned (the driver sub-allocates), so nsightkit promises what cudaMalloc promises:
/// 256 bytes, and checks it.
inline constexpr std::size_t max_alignment = 256;

/// What nsightkit's std::pmr resources return for zero bytes: a non-null, suitably aligned address
/// that owns no memory. (libstdc++ declares memory_resource::allocate `returns_nonnull`, so null
/// is not an option there.) Deallocating it with zero bytes does nothing.
struct alignas(max_alignment) ZeroSizeBlock {
  char unused;  ///< never read or written
};

/// The one zero-size block of the process (default visibility: one per process).
NSIGHTKIT_DETAIL_VISIBLE inline ZeroSizeBlock zero_size_block{};

/// The address returned for zero-byte requests through std::pmr.
inline void* zero_size_pointer() noexcept { return &zero_size_block; }

/// Throws std::invalid_argument unless `alignment` is a power of two no larger than a page.
inline void check_alignment(std::size_t alignment, char const* who) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    NSIGHTKIT_DETAIL_THROW(std::invalid_argument{
        std::string{who} + ": alignment " + std::to_string(alignment) + " is not a power of two"});
  }
  if (alignment > max_alignment) {
    NSIGHTKIT_DETAIL_THROW(std::invalid_argument{
        std::string{who} + ": alignment " + std::to_string(alignment) + " exceeds the " +
        std::to_string(max_alignment) + " bytes page-locked memory is aligned to"});
  }
}

/// cudaHostAlloc: std::bad_alloc when out of page-locked memory, CudaError for other failures.
inline void* host_alloc(std::size_t bytes, unsigned int flags) {
  void* p = nullptr;
  cudaError_t const e = cudaHostAlloc(&p, bytes, flags);
  if (e == cudaSuccess) {
    // nsightkit promises max_alignment; CUDA does not document it, so check every block.
    if (reinterpret_cast<std::uintptr_t>(p) % max_alignment != 0) {
      (void)cudaFreeHost(p);
      NSIGHTKIT_DETAIL_THROW(std::runtime_error{
          "nsightkit: cudaHostAlloc(" + std::to_string(bytes) +
          ") returned memory aligned to less than " + std::to_string(max_alignment) + " bytes"});
    }
    return p;
  }
  (void)cudaGetLastError();
  if (e == cudaErrorMemoryAllocation) NSIGHTKIT_DETAIL_THROW(std::bad_alloc{});
  std::string const call = "cudaHostAlloc(&p, " + std::to_string(bytes) + ", " +
                           std::to_string(flags) + ") for nsightkit's pinned memory";
  NSIGHTKIT_DETAIL_THROW(CudaError{e, call.c_str(), __FILE__, __LINE__});
}

/// cudaFreeHost, reporting (not throwing) a failure.
inline void free_host(void* p) noexcept { (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFreeHost(p)); }

/// True for the stream handles that stand for "the current device's default stream".
inline bool is_special_stream(cudaStream_t s) noexcept {
  return s == cudaStream_t{} || s == legacy_stream_handle() || s == per_thread_stream_handle();
}

/// The CUDA backend of PoolCore: cudaHostAlloc/cudaFreeHost, events without timing.
struct CudaBackend {
  using Stream = cudaStream_t;  ///< a CUDA stream handle
  /// A CUDA event handle.
  struct Event {
    cudaEvent_t handle{nullptr};  ///< the event
  };

  static constexpr char const* allocate_label = "cudaHostAlloc";  ///< NVTX range name
  static constexpr char const* free_label = "cudaFreeHost";       ///< NVTX range name

  unsigned int flags{cudaHostAllocDefault};  ///< cudaHostAlloc flags

  /// New page-locked memory.
  [[nodiscard]] void* allocate(std::size_t bytes) const { return host_alloc(bytes, flags); }

  /// Returns page-locked memory to the system.
  void deallocate(void* p, std::size_t /*bytes*/) const noexcept { free_host(p); }

  /// The device whose events can be recorded on `s`.
  [[nodiscard]] int device_of(cudaStream_t s) const {
    int device = 0;
#if CUDART_VERSION >= 12080
    if (!is_special_stream(s)) {
      NSIGHTKIT_CUDA_CHECK(cudaStreamGetDevice(s, &device));
      return device;
    }
#else
    (void)s;
#endif
    NSIGHTKIT_CUDA_CHECK(cudaGetDevice(&device));
    return device;
  }

  /// A new event on `device` (made current for the call, then restored).
  [[nodiscard]] Event create_event(int device) const {
    int current = 0;
    NSIGHTKIT_CUDA_CHECK(cudaGetDevice(&current));
    if (current != device) NSIGHTKIT_CUDA_CHECK(cudaSetDevice(device));
    Event e{};
    cudaError_t const status = cudaEventCreateWithFlags(&e.handle, cudaEventDisableTiming);
    if (current != device) (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaSetDevice(current));
    NSIGHTKIT_CUDA_CHECK(status);
    return e;
  }

  /// Destroys an event.
  void destroy_event(Event e) const noexcept {
    (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaEventDestroy(e.handle));
  }

  /// Records `e` on `s`, unless `s` is capturing a graph (an event recorded during capture says
  /// nothing about when the graph's replays read the memory).
  [[nodiscard]] RecordStatus record(Event e, cudaStream_t s) const noexcept {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamIsCapturing(s, &capture)) != cudaSuccess) {
      return RecordStatus::failed;
    }
    if (capture != cudaStreamCaptureStatusNone) return RecordStatus::capturing;
    if (NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaEventRecord(e.handle, s)) != cudaSuccess) {
      return RecordStatus::failed;
    }
    return RecordStatus::recorded;
  }

  /// True when everything before `e` on its stream has completed. Never blocks.
  /// @throws CudaError for errors other than cudaErrorNotReady (e.g. a kernel fault).
  [[nodiscard]] bool completed(Event e) const {
    cudaError_t const status = cudaEventQuery(e.handle);
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();  // "not ready" is an answer, not an error: leave none behind
      return false;
    }
    NSIGHTKIT_CUDA_CHECK(status);
    return true;
  }

  /// Blocks until `e` completed (pool destruction only).
  void wait(Event e) const noexcept {
    (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaEventSynchronize(e.handle));
  }

  /// Blocks until `s` is idle: the fallback when an event could not be recorded.
  [[nodiscard]] bool synchronize(cudaStream_t s) const noexcept {
    return NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(s)) == cudaSuccess;
  }
};

/// cudaHostAlloc inside an NVTX range ("cudaHostAlloc 1 MiB", payload = bytes): memory that
/// bypasses the pool (PinnedMemoryResource, oversized PinnedBlocks).
inline void* direct_allocate(std::size_t bytes, unsigned int flags) {
  return in_memory_range(CudaBackend::allocate_label, bytes,
                         [&] { return host_alloc(bytes, flags); });
}

/// cudaFreeHost inside an NVTX range; failures are reported on stderr.
inline void direct_free(void* p, std::size_t bytes) noexcept {
  in_memory_range(CudaBackend::free_label, bytes, [&] { free_host(p); });
}

}  // namespace detail::pinned
NSIGHTKIT_DETAIL_END_NAMESPACE
