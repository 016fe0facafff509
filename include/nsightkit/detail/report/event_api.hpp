// Internal: EventApi — the CUDA event calls the "events" GPU source (events_source.hpp) makes, as a
// table of plain functions over opaque handles: the CUDA driver's by default (loaded at run time,
// so the report links no CUDA library; CurrentStream hands it to the source), a fake in the tests.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/cuda_driver.hpp>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/**
 * The operations event timing needs, as plain functions over opaque handles. Status 0 is success,
 * `not_ready` is "work still pending"; any other value is an error described by error_name and
 * error_string. `names` are the API's call names used in messages, in the order of the members.
 */
struct EventApi {
  int not_ready;
  int (*current_device)(int* device) noexcept;
  int (*event_create)(void** event) noexcept;
  int (*event_record)(void* event, void* stream) noexcept;
  int (*event_query)(void* event) noexcept;
  int (*event_synchronize)(void* event) noexcept;
  int (*elapsed_ns)(void* start, void* end, double* ns) noexcept;
  int (*stream_capturing)(void* stream, bool* capturing) noexcept;
  int (*create_stream)(void** stream) noexcept;  // a non-blocking stream on the current device
  bool (*is_shutdown)(int status) noexcept;      // the API is unloading: stop quietly
  char const* (*error_name)(int status) noexcept;
  char const* (*error_string)(int status) noexcept;
};

/// The status an EventApi returns when the API cannot be used at all (no driver, no device);
/// error_string(unavailable_status) says why.
inline constexpr int unavailable_status = -1;

/// The call each EventApi member stands for, as messages name it.
enum class EventCall {
  current_device,
  event_create,
  event_record,
  event_query,
  event_synchronize,
  elapsed,
  stream_capturing,
  create_stream
};

/// The CUDA driver's name of a call (the default EventApi is the driver's).
inline char const* driver_call_name(EventCall c) noexcept {
  switch (c) {
    case EventCall::current_device: return "cuCtxGetDevice";
    case EventCall::event_create: return "cuEventCreate";
    case EventCall::event_record: return "cuEventRecord";
    case EventCall::event_query: return "cuEventQuery";
    case EventCall::event_synchronize: return "cuEventSynchronize";
    case EventCall::elapsed: return "cuEventElapsedTime";
    case EventCall::stream_capturing: return "cuStreamIsCapturing";
    case EventCall::create_stream: return "cuStreamCreate";
  }
  return "?";
}

/// The CUDA driver behind EventApi (loaded at run time; see detail/cuda_driver.hpp). Events are
/// created with timing enabled; anchor streams are non-blocking, so they never wait for the legacy
/// stream. Without a driver every call fails with a status naming why.
inline EventApi const& driver_event_api() noexcept {
  using cuda_driver::api;
  static constexpr int unavailable = unavailable_status;
  static constexpr EventApi table{
      cuda_driver::not_ready,
      [](int* device) noexcept {
        auto const& a = api();
        if (a.unavailable != nullptr || a.ctx_get_device == nullptr) return unavailable;
        int st = a.ctx_get_device(device);
        if (st == cuda_driver::invalid_context) {
          // No context on this thread yet: take the one the CUDA runtime would (device 0's
          // primary context), as cudaGetDevice would have.
          st = cuda_driver::ensure_context();
          if (st == cuda_driver::success) st = a.ctx_get_device(device);
        }
        return st;
      },
      [](void** event) noexcept {
        auto const& a = api();
        if (a.unavailable != nullptr || a.event_create == nullptr) return unavailable;
        return a.event_create(event, 0u);
      },
      [](void* event, void* stream) noexcept {
        auto const& a = api();
        if (a.unavailable != nullptr || a.event_record == nullptr) return unavailable;
        return a.event_record(event, stream);
      },
      [](void* event) noexcept {
        auto const& a = api();
        if (a.unavailable != nullptr || a.event_query == nullptr) return unavailable;
        return a.event_query(event);
      },
      [](void* event) noexcept {
        auto const& a = api();
        if (a.unavailable != nullptr || a.event_synchronize == nullptr) return unavailable;
        return a.event_synchronize(event);
      },
      [](void* start, void* end, double* ns) noexcept {
        auto const& a = api();
        if (a.unavailable != nullptr || a.event_elapsed_time == nullptr) return unavailable;
        float ms = 0.0f;
        int const st = a.event_elapsed_time(&ms, start, end);
        *ns = static_cast<double>(ms) * 1e6;
        return st;
      },
      [](void* stream, bool* capturing) noexcept {
        auto const& a = api();
        if (a.unavailable != nullptr || a.stream_is_capturing == nullptr) return unavailable;
        int status = 0;  // CU_STREAM_CAPTURE_STATUS_NONE
        int const st = a.stream_is_capturing(stream, &status);
        *capturing = status != 0;
        return st;
      },
      [](void** stream) noexcept {
        auto const& a = api();
        if (a.unavailable != nullptr || a.stream_create == nullptr) return unavailable;
        return a.stream_create(stream, 1u);  // CU_STREAM_NON_BLOCKING
      },
      [](int status) noexcept { return status == cuda_driver::deinitialized; },
      [](int status) noexcept -> char const* {
        auto const& a = api();
        if (a.unavailable != nullptr) return nullptr;
        char const* name = nullptr;
        if (a.get_error_name != nullptr) (void)a.get_error_name(status, &name);
        return name;
      },
      [](int status) noexcept -> char const* {
        auto const& a = api();
        if (a.unavailable != nullptr) return a.unavailable;
        char const* text = nullptr;
        if (a.get_error_string != nullptr) (void)a.get_error_string(status, &text);
        return text;
      },
  };
  return table;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
