// Internal: the write hook — Report::write() and the at-exit write go through it when set, so that
// nsightkit/mpi.hpp gathers every rank's report to rank 0 instead of each rank writing its own.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/output/writing.hpp>

#include <atomic>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Takes over write() when set (nsightkit/mpi.hpp). `at_exit` tells the at-exit handler's call
/// from an explicit Report::write().
using WriteHook = bool (*)(bool at_exit) noexcept;
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<WriteHook> write_hook{nullptr};

/// Report::write(): this process's outputs, or what the write hook does instead.
inline bool write() noexcept {
  if (WriteHook const hook = write_hook.load(std::memory_order_acquire)) return hook(false);
  return write_local();
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
