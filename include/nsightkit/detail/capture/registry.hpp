// Internal: process-wide bookkeeping of capture windows (capture.hpp).
//
// - `mutex` serialises every window edge (profiler start/stop, the NVTX window range,
//   capture_state) of every window, so a window closed by the exit handler on one thread and by
//   its own last step on another stops exactly once. Edges are rare (two per captured window),
//   so one lock for all windows costs nothing measurable.
// - Windows whose capture is open are linked into `head`. The first capture that opens installs
//   one std::atexit handler that closes whatever is still open when the program calls exit() or
//   returns from main, also windows that leaked or live on the stack of a thread that never
//   unwinds. It is installed when the first capture opens, normally long after the program's
//   first CUDA runtime call registered the runtime's teardown, so it runs before that teardown
//   (atexit order is LIFO); a driver call made after it returns CUDA_ERROR_DEINITIALIZED, which
//   the CUDA profiler backend accepts as "shutting down".
// - `profiler_starts` counts cuProfilerStart calls that are not yet matched by a stop, so
//   overlapping windows keep the profiler running until the last one ends (the CUDA profiler
//   state is per process, not per window). It has its own mutex because users may call the
//   CUDA backend directly, outside a window edge.
// Constant-initialised with trivial destruction, so it is usable during static destruction.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture/entry.hpp>

#include <cstdlib>
#include <mutex>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::capture {

/// The registry: one per process (default visibility, see NSIGHTKIT_DETAIL_VISIBLE).
struct Registry {
  std::mutex mutex;
  Link* head{nullptr};
  bool exit_handler_installed{false};
  std::mutex profiler_mutex;
  int profiler_starts{0};
};

NSIGHTKIT_DETAIL_VISIBLE inline Registry registry{};

/// Links `l` (caller holds registry.mutex).
inline void link(Link& l) noexcept {
  if (l.linked) return;
  l.prev = nullptr;
  l.next = registry.head;
  if (l.next != nullptr) l.next->prev = &l;
  registry.head = &l;
  l.linked = true;
}

/// Unlinks `l` (caller holds registry.mutex).
inline void unlink(Link& l) noexcept {
  if (!l.linked) return;
  if (l.prev != nullptr)
    l.prev->next = l.next;
  else
    registry.head = l.next;
  if (l.next != nullptr) l.next->prev = l.prev;
  l.prev = l.next = nullptr;
  l.linked = false;
}

/// The exit handler: closes every capture still open.
inline void exit_handler() noexcept {
  while (true) {
    Link* l = nullptr;
    void* owner = nullptr;
    void (*close)(void*) noexcept = nullptr;
    {
      std::lock_guard<std::mutex> lock{registry.mutex};
      l = registry.head;
      if (l == nullptr) return;
      owner = l->owner;
      close = l->close_for_exit;
    }
    if (close != nullptr) close(owner);  // unlinks l; never run under the lock (callbacks)
    std::lock_guard<std::mutex> lock{registry.mutex};
    if (registry.head == l && l->linked) unlink(*l);  // a close that failed
  }
}

/// Installs the exit handler once (caller holds registry.mutex).
inline void install_exit_handler() noexcept {
  if (registry.exit_handler_installed) return;
  registry.exit_handler_installed = std::atexit(&exit_handler) == 0;
}

}  // namespace detail::capture
NSIGHTKIT_DETAIL_END_NAMESPACE
