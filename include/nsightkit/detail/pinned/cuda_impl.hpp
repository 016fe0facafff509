// Internal: PoolCore's CUDA backend (detail/pinned/cuda.hpp): cudaHostAlloc/cudaFreeHost and
// events. Only PinnedMemoryPool's members use it: header-only, cuda.hpp includes it; in the
// compiled mode (detail/compiled.hpp) only src/nsightkit_cuda.cpp does (through
// detail/pinned/pool_impl.hpp), where those members are defined.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/cuda_check.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/pinned/cuda.hpp>
#include <nsightkit/detail/pinned/status.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::pinned {

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

  static constexpr char const* allocate_label = host_alloc_label;  ///< NVTX range name
  static constexpr char const* free_label = free_host_label;       ///< NVTX range name

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

}  // namespace detail::pinned
NSIGHTKIT_DETAIL_END_NAMESPACE
