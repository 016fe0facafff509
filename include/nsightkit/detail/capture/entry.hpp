// Internal: what capture.hpp needs of the capture internals in every mode — a window's node in
// the list of open captures, request_capture()'s twins, and the CUDA profiler backend's entry.
// Compiled and enabled, src/nsightkit.cpp defines the backend (detail/capture/cuda.hpp), so a
// translation unit that includes capture.hpp parses neither the driver loader nor the registry's
// locks. Disabled it stays inline: the archive's disabled object must not reference dlopen
// (compiled_disabled_program).
#pragma once

#include <nsightkit/capture_types.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/compiled.hpp>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::capture {

/// A window's node in the list of open captures (detail/capture/registry.hpp).
struct Link {
  Link* prev{nullptr};
  Link* next{nullptr};
  bool linked{false};
  void* owner{nullptr};                                    ///< the CaptureWindow
  void (*close_for_exit)(void* owner) noexcept {nullptr};  ///< closes it (takes the mutex itself)
};

/// request_capture(): counted for the windows' next steps; nothing under NSIGHTKIT_DISABLE.
inline void request() noexcept {
#if NSIGHTKIT_ENABLED
  request_capture();
#endif
}

#if NSIGHTKIT_DETAIL_COMPILED && NSIGHTKIT_ENABLED
/// The one CUDA profiler backend (cuda_profiler_backend()), defined by src/nsightkit.cpp.
NSIGHTKIT_DETAIL_ENTRY ProfilerBackend& driver_profiler();
#endif

}  // namespace detail::capture
NSIGHTKIT_DETAIL_END_NAMESPACE
