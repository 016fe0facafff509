// Internal: the report's life — creating the one State of the process (and refusing a second,
// un-unified copy of nsightkit), enable/disable/reset, writing every configured output, the
// at-exit report, and what a child forked from a recording process does.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/cuda_driver.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/counters.hpp>
#include <nsightkit/detail/report/gpu_events.hpp>
#include <nsightkit/detail/report/html.hpp>
#include <nsightkit/detail/report/options.hpp>
#include <nsightkit/detail/report/output_file.hpp>
#include <nsightkit/detail/report/record.hpp>
#include <nsightkit/detail/report/snapshot.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/report/summary.hpp>
#include <nsightkit/detail/report/table.hpp>
#include <nsightkit/detail/report/text_sink.hpp>
#include <nsightkit/detail/report/trace_stream.hpp>
#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/report/nvtx_tool.hpp>
#endif
#include <nsightkit/detail/sinks.hpp>
#include <nsightkit/detail/thread.hpp>
#include <nsightkit/report_types.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#if defined(__linux__)
#include <sys/auxv.h>
#endif
#if !defined(_WIN32)
#include <pthread.h>
#include <unistd.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

NSIGHTKIT_DETAIL_VISIBLE inline std::mutex create_mutex;
/// Set in a copy of nsightkit that found another copy's report in the process.
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<bool> duplicate_copy{false};
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<bool> autostart_done{false};

/// A token that differs between processes and between exec'd images of one process id.
inline std::string process_token() {
  std::string t = std::to_string(process_id());
#if defined(__linux__) && defined(AT_RANDOM)
  if (auto const* r = reinterpret_cast<unsigned char const*>(::getauxval(AT_RANDOM))) {
    char buf[17];
    for (int i = 0; i < 8; ++i) std::snprintf(buf + 2 * i, 3, "%02x", static_cast<unsigned>(r[i]));
    t += '-';
    t += buf;
  }
#endif
  return t;
}

inline constexpr char const owner_variable[] = "NSIGHTKIT_DETAIL_REPORT_OWNER";

/// How the copy of the report that owns the process takes an NVTX module: the NVTX tool library
/// (`nsightkit profile`) hands every module to the program's own report through it.
using NvtxAttach = int (*)(void const* (*)(std::uint32_t));

/// This copy's NVTX entry (null in a disabled build).
inline NvtxAttach own_nvtx_attach() noexcept {
#if NSIGHTKIT_ENABLED
  return [](void const* (*get)(std::uint32_t)) -> int {
    return nvtx_tool::attach(reinterpret_cast<NvtxGetExportTableFunc_t>(get));
  };
#else
  return nullptr;
#endif
}

/// Who owns the process's report, as the owner's claim says: "program" (a copy compiled into the
/// program or its libraries) or "tool" (the NVTX tool library).
#if defined(NSIGHTKIT_DETAIL_NVTX_TOOL)
inline constexpr char const claim_kind[] = "tool";
#else
inline constexpr char const claim_kind[] = "program";
#endif

/// The claim another copy of the report made in this process, read from the environment.
struct Claim {
  bool found{false};
  std::string text;            // the variable's value
  std::string kind;            // "program" or "tool"
  NvtxAttach attach{nullptr};  // its NVTX entry
};

/// The claim on this process (token "pid-random"), if any; a claim of another process (a parent
/// that exec'd this one) is none.
inline Claim read_claim(std::string const& token) {
  Claim c;
  char const* previous = std::getenv(owner_variable);
  if (previous == nullptr) return c;
  std::string_view const p{previous};
  if (p.size() <= token.size() || p.compare(0, token.size(), token) != 0 || p[token.size()] != ':')
    return c;
  c.found = true;
  c.text = std::string{p};
  // token:state:attach:kind
  std::size_t const a = p.find(':', token.size() + 1);
  std::size_t const k = a == std::string_view::npos ? a : p.find(':', a + 1);
  if (k != std::string_view::npos) {
    std::string const address{p.substr(a + 1, k - a - 1)};
    c.kind = std::string{p.substr(k + 1)};
    unsigned long long v = std::strtoull(address.c_str(), nullptr, 16);
    c.attach = reinterpret_cast<NvtxAttach>(static_cast<std::uintptr_t>(v));
  }
  return c;
}

/// This copy's claim text.
inline std::string own_claim(std::string const& token) {
  char self[32], attach[32];
  std::snprintf(self, sizeof self, "%p", static_cast<void const*>(&state_ptr));
  std::snprintf(attach, sizeof attach, "%llx",
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(own_nvtx_attach())));
  return token + ":" + self + ":" + attach + ":" + claim_kind;
}

/// Claims the process for this copy of the report state, through an environment variable (the one
/// thing every copy of nsightkit in a process shares even when their symbols are not unified).
/// False, with one message, when another copy already claimed it.
inline bool claim_process() {
  std::string const token = process_token();
  std::string const mine = own_claim(token);
  Claim const previous = read_claim(token);
  if (previous.found && previous.text != mine) {
    if (!duplicate_copy.exchange(true)) {
      if (previous.kind == "tool") {
        std::fprintf(stderr,
                     "nsightkit report: nsightkit's NVTX tool (nsightkit profile) started this "
                     "process's report before the program's own copy did; the program's copy "
                     "stays off and its ranges reach the report through NVTX\n");
      } else {
        std::fprintf(
            stderr,
            "nsightkit report: this module carries a second copy of nsightkit's report (it embeds "
            "nsightkit and was loaded so that its symbols are not shared, e.g. dlopen(RTLD_LOCAL) "
            "with a compiler that emits no unique symbols); its ranges are not in the process's "
            "report, and this copy stays off. Load it with RTLD_GLOBAL or link it normally.\n");
      }
    }
    return false;
  }
#if defined(_WIN32)
  (void)_putenv_s(owner_variable, mine.c_str());
#else
  (void)::setenv(owner_variable, mine.c_str(), 1);
#endif
  return true;
}

// ---------------------------------------------------------------------------------------------
// Fork: the child gets an empty report of its own.
//
// The handlers take every report lock before fork() (in the documented lock order) and release
// them after, so no lock is left held by a thread that does not exist in the child. The child then
// forgets what the parent recorded (its report starts at the fork), forgets the ranges open at the
// fork (their pops are ignored), makes no CUDA call if the parent had used CUDA (a CUDA context
// does not survive fork), and writes files of its own (".pidN" in their names).

inline void fork_prepare() noexcept {
  State* s = state();
  if (s == nullptr) return;
  if (TraceStream* t = TraceStream::existing()) t->fork_lock();
  s->mutex.lock();
  s->se_mutex.lock();
  for (auto const& t : s->threads) t->lock.lock();
  if (EventsSource* ev = events_source_ptr.load(std::memory_order_acquire)) ev->fork_lock();
  counters.mutex.lock();  // a leaf: held alone by counter_sample()
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
}

/// The State of the process, created (and its fork handlers installed) on first use; null when
/// another copy of nsightkit owns the report, or out of memory.
inline State* state_create() noexcept {
  if (State* s = state()) return s;
  NSIGHTKIT_DETAIL_TRY {
    std::lock_guard<std::mutex> lock{create_mutex};
    if (State* s = state()) return s;
    if (!claim_process()) return nullptr;
    // Registering for membarrier (owner_lock.hpp) waits for an RCU grace period once the process
    // has threads, several milliseconds: here, at enable, not at some thread's first range.
    (void)membarrier_ready();
    auto* s = new State{};  // leaked on purpose: ranges may end during static destruction
#if !defined(_WIN32)
    (void)::pthread_atfork(&fork_prepare, &fork_parent, &fork_child);
#endif
    state_ptr.store(s, std::memory_order_release);
    return s;
  }
  NSIGHTKIT_DETAIL_CATCH(...) { return nullptr; }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Enable, disable, reset

inline void at_exit() noexcept;
inline void on_capture(CaptureEdge edge) noexcept;
inline void reset_data(State& s) noexcept;

/// The GPU source `o` asks for (null: none); `note` says why it is not the one asked for.
inline GpuSource* source_for(ReportOptions const& o, std::string& note) {
  note.clear();
  if (!o.gpu) return nullptr;
  if (o.gpu_source != GpuSourceKind::events) {
    SourceProvider const provider = cupti_provider.load(std::memory_order_acquire);
    if (provider != nullptr) {
      GpuSource* c = provider();
      std::string const why = c != nullptr ? c->unavailable() : std::string{"out of memory"};
      if (why.empty()) return c;
      // gpu=auto on a machine without a GPU: nothing to measure, nothing to say.
      bool const no_gpu = cuda_driver::api().unavailable != nullptr;
      if (o.gpu_source == GpuSourceKind::cupti || !no_gpu)
        note = "CUPTI cannot be used here (" + why + "); GPU times come from CUDA events";
    } else if (o.gpu_source == GpuSourceKind::cupti) {
      note =
          "gpu=cupti needs the nsightkit::cupti component (link it, see docs/gpu-attribution.md); "
          "GPU times come from CUDA events";
    }
  }
  return &events_source();
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
  // In captured mode collection runs only while a capture window is armed or active (on_capture,
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

/// A capture window's edge. In captured mode the GPU source collects from a window's warm-up
/// steps to its end, so CUPTI's start-up falls on warm-up steps; when the last active window
/// stops, the GPU work of its steps is settled (the window has waited for the GPU, unless told
/// not to).
inline void on_capture(CaptureEdge edge) noexcept {
  State* s = state();
  if (s == nullptr) return;
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

/// Makes every thread drop its open frames at its next range event. Under s.mutex.
inline void bump_generations(State& s) noexcept {
  for (auto const& t : s.threads) {
    SpinGuard lock{t->lock};
    ++t->generation;
  }
}

/// The file outputs of `o`: (what, path as given, fallback stem, extension).
struct FileOutput {
  char const* what;
  std::string const* path;
  char const* stem;
  char const* extension;
};

inline std::vector<FileOutput> file_outputs(ReportOptions const& o) {
  std::vector<FileOutput> out;
  if (!o.table.empty() && o.table != "stderr" && o.table != "stdout")
    out.push_back(FileOutput{"table", &o.table, "table", ".txt"});
  if (!o.json.empty()) out.push_back(FileOutput{"summary JSON", &o.json, "summary", ".json"});
  if (!o.csv.empty()) out.push_back(FileOutput{"summary CSV", &o.csv, "summary", ".csv"});
  if (!o.trace.empty()) out.push_back(FileOutput{"trace", &o.trace, "trace", ".json"});
  if (!o.html.empty()) out.push_back(FileOutput{"HTML page", &o.html, "report", ".html"});
  return out;
}

/// Says at once, on stderr, which outputs cannot be written where asked (creating missing
/// directories on the way), instead of finding out at the end of the run.
inline void check_outputs(ReportOptions const& o) {
  for (FileOutput const& f : file_outputs(o)) {
    std::string const path = output_path_here(*f.path);
    std::string const why = check_output_path(path);
    if (f.path == &o.trace) say_if_uncompressed(path);
    if (why.empty()) continue;
    std::fprintf(stderr,
                 "nsightkit report: the %s cannot be written to '%s' (%s); unless that changes, "
                 "it will go to '%s' in the working directory\n",
                 f.what, path.c_str(), why.c_str(), fallback_path(f.stem, f.extension).c_str());
  }
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
    check_outputs(options);
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
    if (!parse_report_spec(value, o, on, why)) {
      std::fprintf(stderr, "nsightkit: NSIGHTKIT_REPORT=%s: %s. The report stays off.\n",
                   quote_value(value).c_str(), why.c_str());
      return false;
    }
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

inline void disable() noexcept {
  State* s = state();
  if (s == nullptr) return;
  std::lock_guard<std::mutex> lock{s->mutex};
  if (!s->enabled) return;
  remove_sink(&s->sink);
  s->enabled = false;
  s->recording.store(false, std::memory_order_release);
  // Collection stops; what was measured stays (the source is kept for snapshots).
  if (GpuSource* src = s->source.load(std::memory_order_acquire)) {
    NSIGHTKIT_DETAIL_TRY { src->activate(false); }
    NSIGHTKIT_DETAIL_CATCH(...) {}
  }
}

inline bool is_enabled() noexcept {
  State* s = state();
  if (s == nullptr) return false;
  std::lock_guard<std::mutex> lock{s->mutex};
  return s->enabled;
}

inline ReportOptions options() {
  State* s = state();
  if (s == nullptr) return ReportOptions{};
  std::lock_guard<std::mutex> lock{s->mutex};
  return s->options;
}

inline void reset() noexcept {
  State* s = state();
  if (s == nullptr) return;
  TraceStream* const stream = TraceStream::existing();
  std::unique_lock<std::mutex> streaming;  // first in the lock order
  if (stream != nullptr) streaming = std::unique_lock<std::mutex>{stream->mutex()};
  reset_data(*s);
  if (stream != nullptr) {
    NSIGHTKIT_DETAIL_TRY { stream->restart_locked(*s); }
    NSIGHTKIT_DETAIL_CATCH(...) {}
  }
}

/// Forgets what was recorded (Report::reset()).
inline void reset_data(State& s) noexcept {
  std::lock_guard<std::mutex> lock{s.mutex};
  s.origin.store(s.now(), std::memory_order_relaxed);
  for (auto const& t : s.threads) {
    SpinGuard tl{t->lock};
    ++t->generation;  // pending GPU work of the old generation is dropped when it resolves
    t->clear_data();
  }
  {
    std::lock_guard<std::mutex> se{s.se_mutex};
    s.se_open.clear();
    s.se_stats.clear();
    s.se_index.clear();
    s.se_trace.clear();
  }
  if (EventsSource* ev = events_source_ptr.load(std::memory_order_acquire)) ev->reset_counters();
  clear_counters();
  if (GpuSource* src = s.source.load(std::memory_order_acquire)) src->reset_counters();
}

// ---------------------------------------------------------------------------------------------
// Writing

/// Takes over write() when set: nsightkit/mpi.hpp gathers every rank's report to rank 0 through
/// it. `at_exit` tells the at-exit handler's call from an explicit Report::write().
using WriteHook = bool (*)(bool at_exit) noexcept;
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<WriteHook> write_hook{nullptr};

/// Writes every output the options configure from `snap`; with `console_table` false a table for
/// stdout or stderr is left out (nsightkit/mpi.hpp prints the merged one instead). False when one
/// did not reach its place.
inline bool write_snapshot(ReportSnapshot const& snap, bool console_table) noexcept {
  NSIGHTKIT_DETAIL_TRY {
    ReportOptions const o = options();
    bool ok = true;
    std::vector<std::string> wrote;
    std::string done;
    if (console_table && (o.table == "stderr" || o.table == "stdout")) {
      // The program's own buffered output comes first, not cut in half by the table.
      std::fflush(stdout);
      std::FILE* f = o.table == "stderr" ? stderr : stdout;
      TextSink sink{f};
      format_table(sink, snap, o.per_thread);
      std::fflush(f);
    }
    for (FileOutput const& f : file_outputs(o)) {
      std::string const path = output_path_here(*f.path);
      std::string_view const what{f.what};
      auto produce = [&](TextSink& sink) {
        if (what == "table") {
          format_table(sink, snap, o.per_thread);
        } else if (what == "summary JSON") {
          summary_json(sink, snap);
        } else if (what == "summary CSV") {
          summary_csv(sink, snap);
        } else if (what == "HTML page") {
          write_html(sink, snap, html_library());
        } else {
          write_trace_from_memory(sink);
        }
      };
      done.clear();
      TraceStream* const stream = TraceStream::existing();
      State* const st = state();
      if (f.path == &o.trace && stream != nullptr && st != nullptr &&
          stream->holds(effective_path(path))) {
        if (!stream->write_file(*st, done)) ok = false;  // it streamed there: it completes it
      } else if (!write_output(path, f.what, f.stem, f.extension, produce, done)) {
        ok = false;
      }
      if (!done.empty()) wrote.push_back(done);
    }
    if (!wrote.empty()) {
      std::string line = "nsightkit report: wrote";
      for (std::size_t i = 0; i < wrote.size(); ++i) line += (i == 0 ? " " : ", ") + wrote[i];
      if (forked_from.load(std::memory_order_relaxed) != 0)
        line += " (files of a forked child carry .pidN in their names)";
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    return ok;
  }
  NSIGHTKIT_DETAIL_CATCH(...) {
    std::fprintf(stderr, "nsightkit report: out of memory while writing the report\n");
  }
  return false;
}

/// Writes every output of this process's report now; false when one did not reach its place.
inline bool write_local() noexcept {
  if (state() == nullptr) return false;
  NSIGHTKIT_DETAIL_TRY { return write_snapshot(snapshot(), true); }
  NSIGHTKIT_DETAIL_CATCH(...) {
    std::fprintf(stderr, "nsightkit report: out of memory while taking the report's snapshot\n");
  }
  return false;
}

/// Report::write(): this process's outputs, or what the write hook does instead.
inline bool write() noexcept {
  if (WriteHook const hook = write_hook.load(std::memory_order_acquire)) return hook(false);
  return write_local();
}

/// Report::write_html(): the page of the data so far, to `path` (through output_path_here()).
inline bool write_html_file(std::string const& path) noexcept {
  if (state() == nullptr) return false;
  NSIGHTKIT_DETAIL_TRY {
    ReportSnapshot const snap = snapshot();
    HtmlLibrary const lib = html_library();
    std::string const target = output_path_here(path);
    auto produce = [&](TextSink& sink) { write_html(sink, snap, lib); };
    std::string done;
    bool const ok = write_output(target, "HTML page", "report", ".html", produce, done);
    if (!done.empty()) std::fprintf(stderr, "nsightkit report: wrote %s\n", done.c_str());
    return ok;
  }
  NSIGHTKIT_DETAIL_CATCH(...) {
    std::fprintf(stderr, "nsightkit report: out of memory while writing the HTML page\n");
  }
  return false;
}

/// Registered with std::atexit by the first enable() with ReportOptions::at_exit.
inline void at_exit() noexcept {
  State* s = state();
  if (s == nullptr) return;
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
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
