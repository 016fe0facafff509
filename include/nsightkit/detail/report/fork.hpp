// Internal: what a child forked from a recording process does — it gets an empty report of its
// own.
//
// The handlers take every report lock before fork() (in the documented lock order) and release
// them after, so no lock is left held by a thread that does not exist in the child. The child then
// forgets what the parent recorded (its report starts at the fork), forgets the ranges open at the
// fork (their pops are ignored), makes no CUDA call if the parent had used CUDA (a CUDA context
// does not survive fork) and writes files of its own (".pidN" in their names) at exit; it starts
// no thread (the parent's watcher and streaming worker do not exist in it), so its signals act as
// they did before the report.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/counters.hpp>
#include <nsightkit/detail/report/events_source.hpp>
#include <nsightkit/detail/report/output/writing.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/report/trace/stream.hpp>
#include <nsightkit/detail/report/watcher.hpp>
#include <nsightkit/detail/thread.hpp>

#include <atomic>
#include <cstdint>

#if !defined(_WIN32)
#include <unistd.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

inline void fork_prepare() noexcept {
  State* s = state();
  if (s == nullptr) return;
#if !defined(_WIN32)
  if (Watcher* w = Watcher::existing()) w->fork_lock();
#endif
  write_mutex.lock();  // a write in progress finishes first: the child must not inherit it held
  if (TraceStream* t = TraceStream::existing()) t->fork_lock();
  s->mutex.lock();
  s->se_mutex.lock();
  for (auto const& t : s->threads) t->lock.lock();
  if (EventsSource* ev = events_source_ptr.load(std::memory_order_acquire)) ev->fork_lock();
  counters.mutex.lock();         // a leaf: held alone by counter_sample()
  s->stream_names_mutex.lock();  // a leaf
}

inline void fork_parent() noexcept {
  State* s = state();
  if (s == nullptr) return;
  s->stream_names_mutex.unlock();
  counters.mutex.unlock();
  if (EventsSource* ev = events_source_ptr.load(std::memory_order_acquire)) ev->fork_unlock();
  for (auto it = s->threads.rbegin(); it != s->threads.rend(); ++it) (*it)->lock.unlock();
  s->se_mutex.unlock();
  s->mutex.unlock();
  if (TraceStream* t = TraceStream::existing()) t->fork_unlock();
  write_mutex.unlock();
#if !defined(_WIN32)
  if (Watcher* w = Watcher::existing()) w->fork_unlock();
#endif
}

inline void fork_child() noexcept {
  State* s = state();
#if !defined(_WIN32)
  forked_from.store(static_cast<long>(::getppid()), std::memory_order_relaxed);
#endif
  std::uint32_t const parent_tid = os_thread_id();  // this thread's id in the parent
  refresh_os_thread_id();
  if (s == nullptr) return;
  std::uint32_t const self = os_thread_id();
  if (EventsSource* ev = events_source_ptr.load(std::memory_order_acquire)) {
    if (ev->used_cuda()) ev->shutdown(*s);
    ev->forget_after_fork(*s);
    ev->fork_unlock();
  }
  for (auto const& t : s->threads) {
    t->clear_data();
    ++t->generation;
    if (t->tid == parent_tid) {
      t->tid = self;
    } else {
      t->exited.store(true, std::memory_order_relaxed);  // threads do not survive fork
    }
  }
  s->se_open.clear();
  s->se_stats.clear();
  s->se_index.clear();
  s->se_trace.clear();
  s->se_over_limit = 0;
  counters.samples.clear();
  counters.dropped = 0;
  counters.mutex.unlock();
  s->stream_names_mutex.unlock();
  s->origin.store(s->now(), std::memory_order_relaxed);
  s->exit_written.store(false, std::memory_order_relaxed);
  for (auto it = s->threads.rbegin(); it != s->threads.rend(); ++it) (*it)->lock.unlock();
  s->se_mutex.unlock();
  s->mutex.unlock();
  if (TraceStream* t = TraceStream::existing()) {
    t->forget_after_fork(*s);
    t->fork_unlock();
  }
  write_mutex.unlock();
#if !defined(_WIN32)
  if (Watcher* w = Watcher::existing()) {
    w->after_fork_child();
    w->fork_unlock();
  }
#endif
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
