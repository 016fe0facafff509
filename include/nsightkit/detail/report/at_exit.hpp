// Internal: what the report does at exit — the watcher and the trace's streaming worker stop, the
// outputs are written (or the write hook gathers them), and a strict report's status says whether
// each output reached its place.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/control.hpp>
#include <nsightkit/detail/report/output/writing.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/report/strict.hpp>
#include <nsightkit/detail/report/trace/stream.hpp>
#include <nsightkit/detail/report/watcher.hpp>
#include <nsightkit/detail/report/write_hook.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Registered with std::atexit when the watcher first starts (after at_exit(), so it runs first).
inline void watcher_at_exit() noexcept {
#if !defined(_WIN32)
  if (Watcher* w = Watcher::existing()) w->stop();
#endif
}

/// Registered with std::atexit when a trace is first streamed (after at_exit(), so it runs
/// first): the worker stops; the file gets its end unless the at-exit report will write it.
inline void stream_at_exit() noexcept {
  State* s = state();
  TraceStream* t = TraceStream::existing();
  if (s == nullptr || t == nullptr) return;
  bool report_writes = false;
  {
    std::lock_guard<std::mutex> lock{s->mutex};
    report_writes = s->started && s->options.at_exit && !s->exit_written.load();
  }
  NSIGHTKIT_DETAIL_TRY { t->stop(*s, !report_writes); }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

/// Registered with std::atexit by the first enable() with ReportOptions::at_exit.
inline void at_exit() noexcept {
  State* s = state();
  if (s == nullptr) return;
  // A write the watcher is making for a signal finishes first; signals act as before from here.
  watcher_at_exit();
  {
    std::lock_guard<std::mutex> lock{s->mutex};
    if (!s->started || !s->options.at_exit) return;
  }
  if (s->exit_written.exchange(true)) return;
  if (WriteHook const hook = write_hook.load(std::memory_order_acquire)) {
    hook(true);
  } else {
    write_local();
  }
  disable();  // ranges of static destructors after this point go nowhere
  if (strict_mode.load(std::memory_order_relaxed) &&
      outputs_failed.load(std::memory_order_relaxed) != 0) {
    std::fprintf(stderr,
                 "nsightkit report: strict mode: an output was not written where asked (see "
                 "above); exiting with status 3\n");
    std::fflush(nullptr);
    std::_Exit(3);
  }
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
