// Internal: the CUDA profiler backend of capture windows (capture.hpp's cuda_profiler_backend()):
// cuProfilerStart / cuCtxSynchronize / cuProfilerStop of the CUDA driver, loaded at run time
// (detail/cuda_driver.hpp), so the program links no CUDA library for it. Its messages are built
// from cuda_driver::describe, the one formatter of driver statuses. Compiled and enabled, only
// src/nsightkit.cpp includes it.
#pragma once

#include <nsightkit/capture_types.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture/entry.hpp>
#include <nsightkit/detail/capture/registry.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/cuda_driver.hpp>

#include <mutex>
#include <string>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::capture {

/// "no CUDA driver/device (the NVIDIA driver library libcuda.so.1 could not be loaded)".
inline std::string describe_no_driver() {
  std::string m = "no CUDA driver/device (";
  cuda_driver::describe_unavailable(m);
  m += ')';
  return m;
}

/// "cuProfilerStart() returned CUDA_ERROR_UNKNOWN (999): unknown error".
inline std::string describe_failure(char const* call, int status) {
  std::string m = call;
  m += " returned ";
  cuda_driver::describe(m, status);
  return m;
}

/// The CUDA profiler API through the driver (cuProfilerStart / cuCtxSynchronize /
/// cuProfilerStop), loaded at run time: the program links no CUDA library for it. Shared by the
/// whole process (reference-counted starts, as the profiler state is per process).
class DriverProfiler final : public ProfilerBackend {
 public:
  std::string start() override {
    std::lock_guard<std::mutex> lock{registry.profiler_mutex};
    if (registry.profiler_starts > 0) {
      ++registry.profiler_starts;  // already running for another window
      return {};
    }
    cuda_driver::Api const& a = cuda_driver::api();
    if (a.unavailable != nullptr) return describe_no_driver();
    if (a.profiler_start == nullptr) return "the CUDA driver has no cuProfilerStart()";
    // cudaProfilerStart would initialise the thread's context first; so does this.
    char const* call = "";
    int st = cuda_driver::ensure_context(call);
    if (st != cuda_driver::success) return describe_failure(call, st);
    st = a.profiler_start();
    if (st != cuda_driver::success) return describe_failure("cuProfilerStart()", st);
    registry.profiler_starts = 1;
    return {};
  }

  std::string synchronize() override {
    cuda_driver::Api const& a = cuda_driver::api();
    if (a.unavailable != nullptr) return describe_no_driver();
    if (a.ctx_synchronize == nullptr) return "the CUDA driver has no cuCtxSynchronize()";
    char const* call = "";
    int st = cuda_driver::ensure_context(call);
    if (st == cuda_driver::success) {
      call = "cuCtxSynchronize()";
      st = a.ctx_synchronize();
    }
    if (st == cuda_driver::success || st == cuda_driver::deinitialized) return {};  // shutting down
    return describe_failure(call, st);
  }

  std::string stop() override {
    std::lock_guard<std::mutex> lock{registry.profiler_mutex};
    if (registry.profiler_starts <= 0) {
      return "cuProfilerStop() skipped: no cuProfilerStart() to match";
    }
    if (--registry.profiler_starts > 0) return {};   // another window still captures
    cuda_driver::Api const& a = cuda_driver::api();  // usable: a start succeeded
    if (a.profiler_stop == nullptr) return "the CUDA driver has no cuProfilerStop()";
    char const* call = "";
    int st = cuda_driver::ensure_context(call);
    if (st == cuda_driver::success) {
      call = "cuProfilerStop()";
      st = a.profiler_stop();
    }
    if (st == cuda_driver::success || st == cuda_driver::deinitialized) return {};
    return describe_failure(call, st);
  }
};

// Leaked on purpose: usable during static destruction. Defined once in src/nsightkit.cpp when
// compiled and enabled (detail/capture/entry.hpp), inline otherwise.
#if NSIGHTKIT_DETAIL_COMPILED && NSIGHTKIT_ENABLED
NSIGHTKIT_DETAIL_ENTRY
#else
inline
#endif
ProfilerBackend& driver_profiler() {
  static ProfilerBackend* const backend = new DriverProfiler{};
  return *backend;
}

}  // namespace detail::capture
NSIGHTKIT_DETAIL_END_NAMESPACE
