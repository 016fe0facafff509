// Internal: the CUDA side of nsightkit::StreamPrefetcher — the Backend of detail::prefetch::Core
// (events, cudaStreamWaitEvent), the owned copy stream, and the page-locked test that decides
// whether a copy is staged.
//
// Error policy: every failure is nsightkit::CudaError naming the call and what it was for; calls
// made by destructors report on stderr instead (NSIGHTKIT_CUDA_CHECK_NOTHROW).
#pragma once

#include <nsightkit/config.hpp>

#if !NSIGHTKIT_HAS_CUDA
#error "nsightkit's stream prefetcher needs the CUDA runtime headers (cuda_runtime_api.h)"
#endif

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::prefetch {

/// The CUDA backend of Core: events without timing, cudaStreamWaitEvent.
struct CudaBackend {
  using Stream = cudaStream_t;  ///< a CUDA stream handle
  using Event = cudaEvent_t;    ///< a CUDA event handle

  /// A new event on the current device (timing disabled: cheaper to record and wait on).
  [[nodiscard]] Event create_event(char const* /*role*/, std::size_t /*slot*/) const {
    cudaEvent_t e = nullptr;
    cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
               "cudaEventCreateWithFlags(&event, cudaEventDisableTiming) for "
               "nsightkit::StreamPrefetcher",
               __FILE__, __LINE__);
    return e;
  }

  /// Destroys an event.
  void destroy_event(Event e) const noexcept {
    (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaEventDestroy(e));
  }

  /// Records `e` on `s`.
  void record(Event e, Stream s) const { NSIGHTKIT_CUDA_CHECK(cudaEventRecord(e, s)); }

  /// Records `e` on `s`; false (reported on stderr) on failure.
  [[nodiscard]] bool record_nothrow(Event e, Stream s) const noexcept {
    return NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaEventRecord(e, s)) == cudaSuccess;
  }

  /// Makes the work queued on `s` from now on wait for the last record of `e`.
  void wait(Stream s, Event e) const { NSIGHTKIT_CUDA_CHECK(cudaStreamWaitEvent(s, e, 0)); }

  /// True when the work before the last record of `e` completed. Never blocks.
  /// @throws CudaError for errors other than cudaErrorNotReady (e.g. a kernel fault)
  [[nodiscard]] bool query(Event e) const {
    cudaError_t const status = cudaEventQuery(e);
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();  // "not ready" is an answer, not an error
      return false;
    }
    NSIGHTKIT_CUDA_CHECK(status);
    return true;
  }

  /// Blocks the host until `e` completed.
  void synchronize(Event e) const { NSIGHTKIT_CUDA_CHECK(cudaEventSynchronize(e)); }

  /// Blocks the host until `e` completed; failures are reported on stderr.
  void synchronize_nothrow(Event e) const noexcept {
    (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaEventSynchronize(e));
  }

  /// Blocks the host until `s` is idle; failures are reported on stderr.
  void synchronize_stream_nothrow(Stream s) const noexcept {
    (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(s));
  }
};

/// A stream the prefetcher creates (non-blocking: it never synchronizes implicitly with the
/// legacy default stream) and destroys. Move-only; empty when default-constructed.
class OwnedStream {
 public:
  /// No stream.
  OwnedStream() noexcept = default;

  /// A new non-blocking stream on the current device. @throws CudaError
  static OwnedStream create() {
    cudaStream_t s = nullptr;
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) for "
               "nsightkit::StreamPrefetcher's copy stream",
               __FILE__, __LINE__);
    return OwnedStream{s};
  }

  /// Takes over `other`'s stream.
  OwnedStream(OwnedStream&& other) noexcept : stream_{std::exchange(other.stream_, nullptr)} {}
  /// Destroys this stream, then takes over `other`'s.
  OwnedStream& operator=(OwnedStream&& other) noexcept {
    if (this != &other) {
      reset();
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  OwnedStream(OwnedStream const&) = delete;
  OwnedStream& operator=(OwnedStream const&) = delete;
  ~OwnedStream() { reset(); }

  /// The stream handle (null when empty).
  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }

 private:
  explicit OwnedStream(cudaStream_t s) noexcept : stream_{s} {}
  void reset() noexcept {
    if (stream_ != nullptr) (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
    stream_ = nullptr;
  }
  cudaStream_t stream_{nullptr};
};

/// Makes `stream` wait (on the GPU, not the host) for the work queued so far on the legacy and the
/// per-thread default streams: the prefetcher's streams do not synchronize with them implicitly,
/// so without this a `cudaMemset` a slot factory queued there could land after the first copy.
/// @throws CudaError
inline void wait_for_default_streams(cudaStream_t stream) {
  cudaEvent_t e = nullptr;
  cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
             "cudaEventCreateWithFlags(&event, cudaEventDisableTiming) for "
             "nsightkit::StreamPrefetcher",
             __FILE__, __LINE__);
  cudaError_t status = cudaEventRecord(e, legacy_stream_handle());
  if (status == cudaSuccess) status = cudaStreamWaitEvent(stream, e, 0);
  if (status == cudaSuccess) status = cudaEventRecord(e, per_thread_stream_handle());
  if (status == cudaSuccess) status = cudaStreamWaitEvent(stream, e, 0);
  (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaEventDestroy(e));  // released once the waits are done
  cuda_check(status,
             "cudaEventRecord/cudaStreamWaitEvent ordering nsightkit::StreamPrefetcher's copy "
             "stream after the default streams",
             __FILE__, __LINE__);
}

/// True when `p` is ordinary pageable host memory (not page-locked, registered, managed or
/// device memory), which a copy then stages through page-locked memory.
/// @throws CudaError when the runtime cannot tell (no driver, no device)
inline bool is_pageable(void const* p) {
  cudaPointerAttributes attributes{};
  cudaError_t const status = cudaPointerGetAttributes(&attributes, p);
  if (status == cudaErrorInvalidValue) {
    (void)cudaGetLastError();  // runtimes before CUDA 11 answered this for unregistered memory
    return true;
  }
  cuda_check(status,
             "cudaPointerGetAttributes(&attributes, host) in nsightkit::PrefetchCopier::to_device",
             __FILE__, __LINE__);
  return attributes.type == cudaMemoryTypeUnregistered;
}

}  // namespace detail::prefetch
NSIGHTKIT_DETAIL_END_NAMESPACE
