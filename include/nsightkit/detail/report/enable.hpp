// Internal: turning the report on — from ReportOptions or NSIGHTKIT_REPORT: the hot-path switches
// and the GPU source applied, the sink registered, the trace streamed, the watcher configured,
// the at-exit write registered, and the report offered as the module's NVTX tool.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/at_exit.hpp>
#include <nsightkit/detail/report/control.hpp>
#include <nsightkit/detail/report/counters.hpp>
#include <nsightkit/detail/report/create.hpp>
#include <nsightkit/detail/report/gpu_source_choice.hpp>
#include <nsightkit/detail/report/options.hpp>
#include <nsightkit/detail/report/output/file.hpp>
#include <nsightkit/detail/report/output/writing.hpp>
#include <nsightkit/detail/report/record.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/report/strict.hpp>
#include <nsightkit/detail/report/trace/stream.hpp>
#include <nsightkit/detail/report/watcher.hpp>
#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/report/nvtx_tool.hpp>
#endif
#include <nsightkit/detail/sinks.hpp>
#include <nsightkit/detail/text.hpp>
#include <nsightkit/report_types.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Whether this copy has read NSIGHTKIT_REPORT (autostart()).
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<bool> autostart_done{false};

/// A capture window's edge. Under window-only the GPU source collects from a window's warm-up
/// steps to its end, so CUPTI's start-up falls on warm-up steps; when the last active window
/// stops, the GPU work of its steps is settled (the window has waited for the GPU, unless told
/// not to).
inline void on_capture(CaptureEdge edge) noexcept {
  State* s = state();
  if (s == nullptr) return;
#if !defined(_WIN32)
  if (edge == CaptureEdge::stopped) {
    // A requested capture ended: its outputs are written by the watcher, not by this thread.
    static std::atomic<std::uint64_t> seen{0};
    std::uint64_t const stops = capture_state.requested_stops.load(std::memory_order_acquire);
    if (seen.exchange(stops, std::memory_order_acq_rel) != stops) {
      if (Watcher* w = Watcher::existing()) w->capture_ended();
    }
  }
#endif
  GpuSource* src = s->source.load(std::memory_order_acquire);
  if (src == nullptr) return;
  NSIGHTKIT_DETAIL_TRY {
    if (edge == CaptureEdge::stopped) src->flush(*s);
    // Decided from the windows' counts under the lock apply() and disable() hold: the last
    // decision sees every edge, and a disabled report stays off.
    std::lock_guard<std::mutex> lock{s->mutex};
    if (s->enabled && s->captured_only.load(std::memory_order_relaxed) &&
        s->source.load(std::memory_order_acquire) == src) {
      src->activate(capture_wanted());
    }
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

/// Copies the hot-path switches out of `o` and picks the GPU source. Under s.mutex.
inline void apply(State& s, ReportOptions const& o) {
  ReportClock const old = s.clock.exchange(o.clock, std::memory_order_relaxed);
  if (!s.started || old != o.clock) s.origin.store(s.now(), std::memory_order_relaxed);
  s.started = true;
  s.captured_only.store(o.captured_only, std::memory_order_relaxed);
  s.trace.store(!o.trace.empty() || o.record_trace, std::memory_order_relaxed);
  std::string note;
  GpuSource* const next = source_for(o, note);
  if (note != s.gpu_note && !note.empty())
    std::fprintf(stderr, "nsightkit report: %s\n", note.c_str());
  s.gpu_note = std::move(note);
  GpuSource* const previous = s.source.exchange(next, std::memory_order_acq_rel);
  if (previous != nullptr && previous != next) previous->activate(false);
  // Under window-only collection runs only while a capture window is armed or active (on_capture,
  // which decides under s.mutex too). The listener first: an edge after the read is not lost.
  capture_state.listener.store(&on_capture, std::memory_order_release);
  if (next != nullptr) next->activate(!o.captured_only || capture_wanted());
  if (o.domains.empty()) {
    s.domains.store(nullptr, std::memory_order_release);
  } else {
    std::vector<std::string> const* now = s.domains.load(std::memory_order_relaxed);
    if (now == nullptr || *now != o.domains) {
      s.domain_lists.push_back(std::make_unique<std::vector<std::string> const>(o.domains));
      s.domains.store(s.domain_lists.back().get(), std::memory_order_release);
    }
  }
  s.gpu_depth.store(o.gpu_depth, std::memory_order_relaxed);
  s.exact_samples.store(o.exact_samples, std::memory_order_relaxed);
  s.max_trace_events.store(o.max_trace_events, std::memory_order_relaxed);
  s.max_paths.store(o.max_paths == 0 ? 1 : o.max_paths, std::memory_order_relaxed);
  s.max_depth.store(o.max_depth == 0 ? 1 : o.max_depth, std::memory_order_relaxed);
}

/// A GPU source provider registered after the report was enabled (static initialisation order
/// between translation units is unspecified): picks the source again.
inline void provider_arrived() noexcept {
  State* s = state();
  if (s == nullptr) return;
  NSIGHTKIT_DETAIL_TRY {
    std::lock_guard<std::mutex> lock{s->mutex};
    if (s->started) apply(*s, s->options);
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

/// Streams the trace of `o` to its file while the run goes on (trace_stream.hpp), where it can.
inline void stream_trace(State& s, ReportOptions const& o) {
  if (o.trace.empty()) {
    if (TraceStream* t = TraceStream::existing()) t->finish(s);
    return;
  }
  std::string const path = effective_path(output_path_here(o.trace));
  if (!check_output_path(path).empty()) {
    if (TraceStream* t = TraceStream::existing()) t->finish(s);
    return;  // said by check_outputs(); written from memory, or to the fallback, at the end
  }
  if (TraceStream::get().start(s, path)) {
    static std::atomic<bool> registered{false};
    if (!registered.exchange(true)) std::atexit(stream_at_exit);
  }
}

/// True when `path` names nsightkit's own NVTX tool library (nsightkit profile).
inline bool is_nsightkit_tool(std::string_view path) noexcept {
  std::size_t const slash = path.find_last_of('/');
  std::string_view const base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return base.compare(0, 17, "libnsightkit-nvtx") == 0;
}

/// Makes the report the NVTX tool of the module this copy is linked into, through NVTX's static
/// injection, so ranges of any code in that module reach it (NVTX asks at its first call in the
/// module: a range before the report starts leaves the module without it). A tool named by
/// NVTX_INJECTION64_PATH takes precedence (NVTX's order): with another tool than nsightkit's, one
/// line says the report hears only nsightkit's own ranges. The NVTX tool library itself is
/// loaded through that variable and never offers this.
inline void offer_static_injection() noexcept {
#if NSIGHTKIT_ENABLED && !defined(NSIGHTKIT_DETAIL_NVTX_TOOL)
  static std::atomic<bool> offered{false};
  if (offered.exchange(true)) return;
  char const* named = std::getenv("NVTX_INJECTION64_PATH");
  if (named != nullptr) {
    if (*named != '\0' && !is_nsightkit_tool(named)) {
      std::fprintf(stderr,
                   "nsightkit report: another NVTX tool is attached (NVTX_INJECTION64_PATH=%s); "
                   "the report hears only nsightkit's own ranges\n",
                   quote_value(named).c_str());
    }
    return;
  }
  if (::InitializeInjectionNvtx2_fnptr == nullptr) {
    ::InitializeInjectionNvtx2_fnptr = &nvtx_tool::attach;
  }
#endif
}

inline bool enable(ReportOptions const& options) noexcept {
  State* s = state_create();
  if (s == nullptr) return false;
  offer_static_injection();
  NSIGHTKIT_DETAIL_TRY {
    bool const strict = options.strict || strict_from_environment();
    strict_mode.store(strict, std::memory_order_relaxed);
    if (check_outputs(options) != 0 && strict) strict_exit("an output cannot be written");
    {
      std::lock_guard<std::mutex> lock{s->mutex};
      s->options = options;
      apply(*s, options);
      if (!s->enabled) {
        // Frames left open by an earlier disable() never see their pop: forget them.
        bump_generations(*s);
        if (!add_sink(&s->sink)) {
          std::fprintf(stderr,
                       "nsightkit report: cannot enable: nsightkit's table of %d in-process "
                       "consumers is full\n",
                       SinkRegistry::capacity);
          return false;
        }
        s->enabled = true;
        s->recording.store(true, std::memory_order_release);
        // Counters of other features (pinned pools, prefetchers) reach the trace from now on.
        counter_sink.store(&counter_sample, std::memory_order_release);
      }
      if (options.at_exit && !s->atexit_registered) {
        s->atexit_registered = true;
        std::atexit(at_exit);
      }
      s->exit_written.store(false, std::memory_order_relaxed);
    }
    stream_trace(*s, options);
#if !defined(_WIN32)
    Watcher::get().configure(options);
    static std::atomic<bool> registered{false};
    if (Watcher::existing() != nullptr && !registered.exchange(true)) std::atexit(watcher_at_exit);
#endif
    return true;
  }
  NSIGHTKIT_DETAIL_CATCH(...) { return false; }
  return false;
}

inline bool enable_from_environment() noexcept {
  check_environment_once();
  char const* value = std::getenv("NSIGHTKIT_REPORT");
  if (value == nullptr) return false;
  NSIGHTKIT_DETAIL_TRY {
    ReportOptions o;
    bool on = false;
    std::string why;
    bool const strict = strict_from_environment() || spec_asks_strict(value);
    if (!parse_report_spec(value, o, on, why)) {
      std::fprintf(stderr, "nsightkit: NSIGHTKIT_REPORT=%s: %s. The report stays off.\n",
                   quote_value(value).c_str(), why.c_str());
      if (strict) strict_exit("NSIGHTKIT_REPORT is not valid");
      return false;
    }
    if (strict && unknown_variables.load(std::memory_order_relaxed) != 0)
      strict_exit("an NSIGHTKIT_* variable is not known (see above)");
    if (!on) return false;
    return enable(o);
  }
  NSIGHTKIT_DETAIL_CATCH(...) { return false; }
  return false;
}

/// Reads NSIGHTKIT_REPORT once per process (per copy of nsightkit, see claim_process).
inline bool autostart() noexcept {
  if (autostart_done.exchange(true)) return false;
  return enable_from_environment();
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
