// Internal: the calling thread's current stream for the report's GPU timing — what CurrentStream
// and GpuRange set, and what a GPU source reads when a range begins (gpu_source.hpp).
#pragma once

#include <nsightkit/config.hpp>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

struct EventApi;

/// The calling thread's current stream for GPU timing (CurrentStream, GpuRange). `events` are the
/// functions an event-based source times it with; null when no stream is current.
struct GpuContext {
  void* stream{nullptr};
  EventApi const* events{nullptr};
};

/// One per thread; default visibility, so every library embedding nsightkit shares it.
NSIGHTKIT_DETAIL_VISIBLE inline thread_local GpuContext current_gpu{};

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
