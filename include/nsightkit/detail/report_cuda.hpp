// Internal: the CUDA runtime as the report's GPU backend (GpuApi). Part of <nsightkit/report.hpp>
// (enabled builds with the CUDA runtime headers). Only CurrentStream refers to cuda_gpu_api(), so a
// program links the CUDA runtime for the report only where it uses CurrentStream or GpuRange.
#pragma once

#if !defined(NSIGHTKIT_DETAIL_REPORT_TYPES)
#error "internal header: include <nsightkit/report.hpp>"
#endif

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report_state.hpp>

#include <cuda_runtime_api.h>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

inline int cuda_status(cudaError_t e) noexcept { return static_cast<int>(e); }

/// The CUDA runtime's functions behind GpuApi. Events are created with timing enabled (the
/// default flags); anchor streams are non-blocking, so they never wait for the legacy stream.
inline GpuApi const& cuda_gpu_api() noexcept {
  static constexpr GpuApi api{
      static_cast<int>(cudaErrorNotReady),
      [](int* device) noexcept { return cuda_status(cudaGetDevice(device)); },
      [](void** event) noexcept {
        cudaEvent_t e{};
        cudaError_t const st = cudaEventCreateWithFlags(&e, cudaEventDefault);
        *event = static_cast<void*>(e);
        return cuda_status(st);
      },
      [](void* event, void* stream) noexcept {
        return cuda_status(
            cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)));
      },
      [](void* event) noexcept {
        return cuda_status(cudaEventQuery(static_cast<cudaEvent_t>(event)));
      },
      [](void* event) noexcept {
        return cuda_status(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
      },
      [](void* start, void* end, double* ns) noexcept {
        float ms = 0.0f;
        cudaError_t const st = cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start),
                                                    static_cast<cudaEvent_t>(end));
        *ns = static_cast<double>(ms) * 1e6;
        return cuda_status(st);
      },
      [](void* stream, bool* capturing) noexcept {
        cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
        cudaError_t const st = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status);
        *capturing = status != cudaStreamCaptureStatusNone;
        return cuda_status(st);
      },
      [](void** stream) noexcept {
        cudaStream_t s{};
        cudaError_t const st = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        *stream = static_cast<void*>(s);
        return cuda_status(st);
      },
      [](int status) noexcept { return status == static_cast<int>(cudaErrorCudartUnloading); },
      [](int status) noexcept { return cudaGetErrorName(static_cast<cudaError_t>(status)); },
      [](int status) noexcept { return cudaGetErrorString(static_cast<cudaError_t>(status)); },
  };
  return api;
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
