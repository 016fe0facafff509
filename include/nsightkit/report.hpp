/**
 * @file report.hpp
 * @brief The in-process report: where the time goes, per range path, with no external tool.
 *
 * Off by default and free when off: nothing is registered with nsightkit's range machinery, so a
 * range costs what it costs without the report. Turned on by Report::enable() or by the
 * environment variable `NSIGHTKIT_REPORT`:
 *
 * @code
 * NSIGHTKIT_REPORT=table ./train                 # table on stderr at exit
 * NSIGHTKIT_REPORT=table=t.txt,json=s.json,trace=trace.json,csv=s.csv ./train
 * NSIGHTKIT_REPORT=captured,trace=trace.json ./train   # only steps a CaptureWindow captures
 * @endcode
 *
 * Grammar: a comma-separated list of `table[=stderr|stdout|PATH]`, `json=PATH`, `csv=PATH`,
 * `trace=PATH`, `captured[=on|off]`, `threads[=on|off]`, `gpu=on|off`, `samples=N`,
 * `trace-events=N`, `paths=N`; or `0`/`off`/`none` (off). Modifiers without an output mean
 * `table`. A bad value prints one message naming the variable and the bad item and leaves the
 * report off (the program runs on); ReportOptions::parse() throws std::invalid_argument instead.
 * Paths cannot contain commas.
 *
 * What it measures. Every nsightkit push/pop range (ScopedRange, NSIGHTKIT_RANGE, ModuleScope,
 * capture-window steps, …) of every thread, aggregated per full path: the names of the ranges open
 * on the thread, outermost first, joined by '/' ("model/encoder/block0/attn"), across domains
 * (a range of a domain other than "nsightkit" and the global domain appears as "domain@name").
 * Per path: calls, total, self (total minus children), mean, p50, p95, max CPU wall time, per
 * thread and merged across threads; GPU time where a stream was given (see CurrentStream).
 * Capture-window step ranges (detail::step_category()) delimit steps and never become path
 * components; they get their own line. Start/end ranges (UniqueRange) are aggregated by name
 * outside the tree; marks are counted.
 *
 * Outputs: a tree-indented table (siblings sorted by total), a summary as JSON or CSV, and a Chrome
 * trace-event JSON file for Perfetto UI and chrome://tracing (one track per thread, one per CUDA
 * stream with GPU time). With a launcher rank (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, RANK,
 * LOCAL_RANK, first set wins) file names get ".rankN" before the extension (or replace "{rank}")
 * and the trace's process id is the rank. See docs/report.md.
 *
 * Startup. Including this header (also through <nsightkit/nsightkit.hpp>) in any translation unit
 * of a program or shared library reads `NSIGHTKIT_REPORT` once per process during static
 * initialisation. Define `NSIGHTKIT_REPORT_NO_AUTOSTART` (in every translation unit) to skip that
 * and call Report::enable_from_environment() yourself. The report is one per process across
 * shared libraries that embed nsightkit (its state has default visibility); a second copy that
 * cannot be unified (e.g. clang-built plugins loaded with `dlopen(RTLD_LOCAL)` by a host that does
 * not use nsightkit) is detected when it tries to enable, says so once on stderr and stays off.
 *
 * Under `NSIGHTKIT_DISABLE` the API compiles unchanged, nothing is recorded and nothing is
 * written.
 */
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/range.hpp>

#if NSIGHTKIT_HAS_CUDA
#include <nsightkit/stream.hpp>
#endif

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/**
 * @brief A clock for the report: returns nanoseconds on a monotonic scale.
 *
 * The default is `std::chrono::steady_clock`. Tests inject their own to craft durations.
 */
using ReportClock = std::int64_t (*)() noexcept;

/**
 * @brief What the report records and where it writes.
 *
 * @code
 * nsightkit::ReportOptions o;
 * o.table = "stderr";             // the default
 * o.trace = "trace.json";         // becomes trace.rank3.json under a launcher with rank 3
 * o.captured_only = true;         // only ranges begun while a CaptureWindow is active
 * nsightkit::Report::enable(o);
 * @endcode
 */
struct ReportOptions {
  /// Where the table goes: "stderr" (default), "stdout", a file path, or "" for no table.
  std::string table{"stderr"};
  /// Path of the summary JSON ("" for none).
  std::string json{};
  /// Path of the summary CSV ("" for none).
  std::string csv{};
  /// Path of the Chrome trace-event JSON ("" for none). Setting it records trace events.
  std::string trace{};
  /// Write the configured outputs when the process exits (std::atexit).
  bool at_exit{true};
  /// Aggregate only ranges that begin while a capture window is active (detail::capture_active()).
  bool captured_only{false};
  /// The table also lists every thread on its own.
  bool per_thread{false};
  /// Time ranges on the GPU where a stream is current (CurrentStream, GpuRange).
  bool gpu{true};
  /// Keep trace events even without a trace path (for Report::trace_json()).
  bool record_trace{false};
  /// Durations kept exactly per path and thread; past that, percentiles come from a log
  /// histogram (within about 1.6 %).
  std::size_t exact_samples{1024};
  /// Trace events kept per thread; later ones are counted as dropped.
  std::size_t max_trace_events{std::size_t{1} << 20};
  /// Distinct paths per thread; later new paths are counted under "(other paths)".
  std::size_t max_paths{std::size_t{1} << 16};
  /// The clock; nullptr means std::chrono::steady_clock.
  ReportClock clock{nullptr};

  /**
   * @brief Parses the `NSIGHTKIT_REPORT` grammar (see the file comment).
   * @param spec e.g. "table,trace=out.json"
   * @param error receives the reason when the spec is bad (may be null)
   * @return the options, or std::nullopt when `spec` is bad or turns the report off
   *         (then `*error` is empty).
   */
  static std::optional<ReportOptions> try_parse(std::string_view spec,
                                                std::string* error = nullptr);

#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS || defined(NSIGHTKIT_DOXYGEN)
  /**
   * @brief Parses like try_parse() but throws on a bad spec.
   * @throws std::invalid_argument naming the bad item; also for a spec that turns the report off.
   */
  static ReportOptions parse(std::string_view spec);
#endif
};

/// Duration statistics of one row, in nanoseconds. Percentiles use the nearest-rank method.
struct TimeStats {
  std::uint64_t count{0};    ///< number of durations
  std::int64_t total_ns{0};  ///< sum
  double mean_ns{0.0};       ///< total / count
  std::int64_t min_ns{0};    ///< smallest
  std::int64_t p50_ns{0};    ///< median (nearest rank)
  std::int64_t p95_ns{0};    ///< 95th percentile (nearest rank)
  std::int64_t max_ns{0};    ///< largest
  bool exact{true};          ///< false when the percentiles come from the log histogram
};

/// One row of the report: a range path, merged over threads or of one thread.
struct PathStats {
  std::string path;      ///< components joined by '/', outermost first
  std::string name;      ///< the last component (the range's own name)
  std::string domain;    ///< the last range's domain ("nsightkit", "" for the global domain, …)
  std::size_t depth{0};  ///< 0 for a range with no enclosing range
  std::size_t parent{static_cast<std::size_t>(-1)};  ///< index of the enclosing row, or -1
  std::uint32_t thread{0};                           ///< OS thread id; 0 in merged rows
  TimeStats cpu;                                     ///< CPU wall time
  std::int64_t self_ns{0};  ///< total minus the totals of the child paths (never below 0)
  TimeStats gpu;            ///< GPU time (count 0 when the range was never timed on a stream)
};

/// A thread that recorded ranges.
struct ThreadStats {
  std::uint32_t id{0};                ///< OS thread id
  std::string name;                   ///< from name_current_thread(), or empty
  bool exited{false};                 ///< the thread ended before the snapshot (its data is kept)
  std::uint64_t ranges{0};            ///< ranges aggregated (steps included)
  std::uint64_t trace_dropped{0};     ///< trace events beyond ReportOptions::max_trace_events
  std::uint64_t paths_over_limit{0};  ///< ranges counted under "(other paths)"
};

/// Statistics of start/end ranges (UniqueRange) of one name.
struct NamedStats {
  std::string name;    ///< range name
  std::string domain;  ///< domain name
  TimeStats time;      ///< CPU wall time from start to end
};

/// How often a mark was emitted.
struct MarkStats {
  std::string name;        ///< mark name
  std::string domain;      ///< domain name
  std::uint64_t count{0};  ///< emissions
};

/// GPU timing bookkeeping of a snapshot.
struct GpuTimingStats {
  std::uint64_t ranges_timed{0};    ///< ranges with a GPU time
  std::uint64_t ranges_pending{0};  ///< recorded but not complete at the snapshot
  std::uint64_t ranges_skipped{
      0};  ///< not timed: stream capturing a CUDA graph, or too many pending
  std::uint64_t events_created{0};  ///< CUDA events created (the pool reuses them)
  std::string error;                ///< why GPU timing stopped, or empty
};

/**
 * @brief Everything the report knows at one moment, as plain values.
 *
 * @code
 * auto snap = nsightkit::Report::snapshot();
 * if (auto const* row = snap.find("model/encoder")) std::printf("%llu calls\n", row->cpu.count);
 * @endcode
 */
struct ReportSnapshot {
  std::int64_t run_ns{0};               ///< time from enable() (or reset()) to the snapshot
  std::optional<int> rank;              ///< launcher rank, if any
  long pid{0};                          ///< OS process id
  bool captured_only{false};            ///< ReportOptions::captured_only was set
  std::vector<PathStats> paths;         ///< merged over threads, in tree order
  std::vector<PathStats> thread_paths;  ///< per thread (in `threads` order), each in tree order
  std::vector<ThreadStats> threads;     ///< threads that recorded, in order of first range
  TimeStats steps;                      ///< capture-window step ranges, all threads
  std::vector<NamedStats> start_end;    ///< start/end ranges by domain and name
  std::vector<MarkStats> marks;         ///< marks by domain and name
  GpuTimingStats gpu;                   ///< GPU timing bookkeeping

  /// The merged row of `path`, or nullptr.
  [[nodiscard]] PathStats const* find(std::string_view path) const noexcept {
    for (auto const& r : paths) {
      if (r.path == path) return &r;
    }
    return nullptr;
  }
  /// The row of `path` of thread `thread` (OS id), or nullptr.
  [[nodiscard]] PathStats const* find(std::string_view path, std::uint32_t thread) const noexcept {
    for (auto const& r : thread_paths) {
      if (r.thread == thread && r.path == path) return &r;
    }
    return nullptr;
  }
};

NSIGHTKIT_DETAIL_END_NAMESPACE

#define NSIGHTKIT_DETAIL_REPORT_TYPES 1
#include <nsightkit/detail/report_env.hpp>
#include <nsightkit/detail/report_output.hpp>
#include <nsightkit/detail/report_stats.hpp>
#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/report_state.hpp>
#include <nsightkit/detail/report_trace.hpp>
#if NSIGHTKIT_HAS_CUDA
#include <nsightkit/detail/report_cuda.hpp>
#endif
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

inline std::optional<ReportOptions> ReportOptions::try_parse(std::string_view spec,
                                                             std::string* error) {
  ReportOptions o;
  bool on = false;
  std::string why;
  if (error != nullptr) error->clear();
  if (!detail::parse_report_spec(spec, o, on, why)) {
    if (error != nullptr) *error = why;
    return std::nullopt;
  }
  if (!on) return std::nullopt;
  return o;
}

#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
inline ReportOptions ReportOptions::parse(std::string_view spec) {
  std::string why;
  auto o = try_parse(spec, &why);
  if (!o) {
    if (why.empty()) why = "it turns the report off";
    throw std::invalid_argument{"nsightkit: report spec '" + std::string{spec} + "': " + why};
  }
  return *std::move(o);
}
#endif

/**
 * @brief The process-wide report: enable, snapshot, write. All members are static.
 *
 * @code
 * int main() {
 *   nsightkit::ReportOptions o;
 *   o.trace = "trace.json";
 *   nsightkit::Report::enable(o);           // table on stderr + trace.json at exit
 *   for (int step = 0; step < 100; ++step) {
 *     nsightkit::ScopedRange s{"train_step"};
 *     { nsightkit::ScopedRange f{"forward"}; forward(); }
 *     { nsightkit::ScopedRange b{"backward"}; backward(); }
 *   }
 * }
 * @endcode
 *
 * Thread safety: every member may be called from any thread. Recording threads keep their own
 * buffers (one uncontended lock each), merged when a snapshot is taken; a thread that exits keeps
 * its data in the report.
 */
class Report {
 public:
  Report() = delete;

  /// The environment variable read at startup and by enable_from_environment().
  static constexpr char const* environment_variable = "NSIGHTKIT_REPORT";

  /**
   * @brief Starts recording (or changes the options of a running report).
   *
   * The first enable() sets the run's time origin. With `options.at_exit`, the configured outputs
   * are written when the process exits. Ranges open at this moment are not seen (their pops are
   * ignored).
   * @return true when the report records; false under `NSIGHTKIT_DISABLE`, when out of memory, or
   *         when this is a second, un-unified copy of nsightkit in the process (reported on
   * stderr).
   */
  static bool enable(ReportOptions const& options = ReportOptions{}) noexcept {
#if NSIGHTKIT_ENABLED
    return detail::report_enable(options);
#else
    (void)options;
    return false;
#endif
  }

  /**
   * @brief Enables the report as `NSIGHTKIT_REPORT` says.
   * @return true when the variable is set and valid (the report records). An unset or "off" value
   *         returns false silently; a bad one prints one message naming the variable and the bad
   *         item, and returns false.
   */
  static bool enable_from_environment() noexcept {
#if NSIGHTKIT_ENABLED
    return detail::report_enable_from_environment();
#else
    return false;
#endif
  }

  /// Stops recording. Collected data is kept; ranges open now lose their end.
  static void disable() noexcept {
#if NSIGHTKIT_ENABLED
    detail::report_disable();
#endif
  }

  /// True while the report records.
  [[nodiscard]] static bool is_enabled() noexcept {
#if NSIGHTKIT_ENABLED
    return detail::report_is_enabled();
#else
    return false;
#endif
  }

  /// Drops everything collected so far and restarts the run's time origin. Ranges open at this
  /// moment are forgotten.
  static void reset() noexcept {
#if NSIGHTKIT_ENABLED
    detail::report_reset();
#endif
  }

  /// The options in force (defaults when never enabled).
  [[nodiscard]] static ReportOptions options() {
#if NSIGHTKIT_ENABLED
    return detail::report_options();
#else
    return ReportOptions{};
#endif
  }

  /**
   * @brief Merges every thread's data into plain values.
   *
   * Completes GPU timing first: waits (cudaEventSynchronize) for the events of ranges already
   * ended — the only place the report synchronizes with the GPU. Empty under NSIGHTKIT_DISABLE.
   */
  [[nodiscard]] static ReportSnapshot snapshot() {
#if NSIGHTKIT_ENABLED
    return detail::report_snapshot();
#else
    return ReportSnapshot{};
#endif
  }

  /**
   * @brief The table for `snapshot`: tree-indented paths sorted by total, %run, self, percentiles.
   * @param snapshot from snapshot()
   * @param per_thread also list every thread on its own
   */
  [[nodiscard]] static std::string format_table(ReportSnapshot const& snapshot,
                                                bool per_thread = false) {
    return detail::format_table(snapshot, per_thread);
  }

  /// The summary of `snapshot` as JSON (format "nsightkit-report", version 1; see docs/report.md).
  [[nodiscard]] static std::string summary_json(ReportSnapshot const& snapshot) {
    return detail::summary_json(snapshot);
  }

  /// The summary of `snapshot` as CSV, one row per path (scope "all") and per thread and path.
  [[nodiscard]] static std::string summary_csv(ReportSnapshot const& snapshot) {
    return detail::summary_csv(snapshot);
  }

  /**
   * @brief The Chrome trace-event JSON of the ranges recorded so far.
   *
   * Needs ReportOptions::trace or ReportOptions::record_trace; otherwise it holds only metadata.
   * `{"traceEvents":[]}` under NSIGHTKIT_DISABLE.
   */
  [[nodiscard]] static std::string trace_json() {
#if NSIGHTKIT_ENABLED
    return detail::report_trace_json();
#else
    return "{\"traceEvents\":[]}\n";
#endif
  }

  /**
   * @brief Writes every output the options configure (table, json, csv, trace) now.
   *
   * File names go through output_path(). Also what happens at exit with ReportOptions::at_exit.
   * @return false when a file could not be written (reported on stderr), or when nothing was
   *         recorded at all (not enabled, NSIGHTKIT_DISABLE).
   */
  static bool write() noexcept {
#if NSIGHTKIT_ENABLED
    return detail::report_write();
#else
    return false;
#endif
  }

  /// This process's rank from the launcher variables (OMPI_COMM_WORLD_RANK, PMI_RANK,
  /// SLURM_PROCID, RANK, LOCAL_RANK; first set wins), or std::nullopt.
  [[nodiscard]] static std::optional<int> rank() noexcept {
    auto const r = detail::launcher_rank();
    return r ? std::optional<int>{r->rank} : std::nullopt;
  }

  /// The file name the report writes for `path`: "{rank}" and "{pid}" are replaced; without
  /// "{rank}" and with a launcher rank, ".rankN" goes before the extension ("out.rankN.json").
  [[nodiscard]] static std::string output_path(std::string const& path) {
    return detail::expand_output_path(path, detail::launcher_rank_or_none(), detail::process_id());
  }
};

#if NSIGHTKIT_HAS_CUDA || defined(NSIGHTKIT_DOXYGEN)
/**
 * @brief Makes `stream` the calling thread's current stream for GPU timing, for this scope.
 *
 * While it lives, every nsightkit push/pop range that begins on this thread is also timed on the
 * GPU when the report is enabled: a CUDA event (from a reusable pool) is recorded on the stream
 * when the range begins and another when it ends; the pair is resolved later without blocking
 * (at a later range's end, or at the snapshot, which waits for it). The stream must belong to
 * the current device. Ranges on a stream that is capturing a CUDA graph are not timed. Nests:
 * the previous current stream comes back on destruction.
 *
 * Uses the CUDA runtime only when the report is enabled (link CUDA::cudart where you use it).
 * Without a driver, GPU timing stops with one message on stderr and CPU times go on.
 *
 * @code
 * nsightkit::CurrentStream on{nsightkit::StreamView{stream}};
 * nsightkit::ScopedRange fwd{"forward"};        // CPU time and GPU time on `stream`
 * launch_forward(stream);
 * @endcode
 */
class CurrentStream {
 public:
  /// Sets `stream` as the thread's current stream until destruction.
  explicit CurrentStream(StreamView stream) noexcept {
#if NSIGHTKIT_ENABLED
    previous_ = detail::current_gpu;
    detail::current_gpu =
        detail::GpuContext{static_cast<void*>(stream.value()), &detail::cuda_gpu_api()};
#else
    (void)stream;
#endif
  }

  /// Restores the previous current stream (or none).
  ~CurrentStream() noexcept {
#if NSIGHTKIT_ENABLED
    detail::current_gpu = previous_;
#endif
  }

  CurrentStream(CurrentStream const&) = delete;
  CurrentStream(CurrentStream&&) = delete;
  CurrentStream& operator=(CurrentStream const&) = delete;
  CurrentStream& operator=(CurrentStream&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;

#if NSIGHTKIT_ENABLED
 private:
  detail::GpuContext previous_{};
#endif
};

/**
 * @brief A ScopedRangeIn<D> whose work runs on `stream`: the report also gives its GPU time.
 *
 * Same names as ScopedRangeIn (static, std::string, format string + arguments), preceded by the
 * stream. Equivalent to a CurrentStream for the range's lifetime, so ranges nested inside it are
 * timed on the stream as well.
 *
 * @code
 * nsightkit::GpuRange r{nsightkit::StreamView{stream}, "layer{}", i};
 * layer_kernel<<<grid, block, 0, stream>>>(...);
 * @endcode
 */
template <class D>
class GpuRangeIn {
 public:
  /// A range with a fixed name, timed on `stream`.
  GpuRangeIn(StreamView stream, char const* name) noexcept : current_{stream}, range_{name} {}
  /// A range with attributes and a fixed name, timed on `stream`.
  GpuRangeIn(StreamView stream, Attributes const& attributes, char const* name) noexcept
      : current_{stream}, range_{attributes, name} {}
  /// A range named by a run-time string, timed on `stream`.
  GpuRangeIn(StreamView stream, std::string const& name) noexcept
      : current_{stream}, range_{name} {}
  /// A range with attributes named by a run-time string, timed on `stream`.
  GpuRangeIn(StreamView stream, Attributes const& attributes, std::string const& name) noexcept
      : current_{stream}, range_{attributes, name} {}
  /// A range with a formatted name, timed on `stream`.
  template <class A0, class... As>
  GpuRangeIn(StreamView stream, fmt::format_string<A0, As...> format, A0&& a0, As&&... as) noexcept
      : current_{stream}, range_{format, std::forward<A0>(a0), std::forward<As>(as)...} {}
  /// A range with attributes and a formatted name, timed on `stream`.
  template <class A0, class... As>
  GpuRangeIn(StreamView stream, Attributes const& attributes, fmt::format_string<A0, As...> format,
             A0&& a0, As&&... as) noexcept
      : current_{stream},
        range_{attributes, format, std::forward<A0>(a0), std::forward<As>(as)...} {}

  GpuRangeIn(GpuRangeIn const&) = delete;
  GpuRangeIn(GpuRangeIn&&) = delete;
  GpuRangeIn& operator=(GpuRangeIn const&) = delete;
  GpuRangeIn& operator=(GpuRangeIn&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;

 private:
  CurrentStream
      current_;  // first: the stream is current when the range begins and still when it ends
  ScopedRangeIn<D> range_;
};

/// A GpuRangeIn in nsightkit's default domain.
using GpuRange = GpuRangeIn<DefaultDomain>;
#endif  // NSIGHTKIT_HAS_CUDA

#if NSIGHTKIT_ENABLED && !defined(NSIGHTKIT_REPORT_NO_AUTOSTART)
namespace detail {
// Reads NSIGHTKIT_REPORT once per process during static initialisation (see the file comment).
NSIGHTKIT_DETAIL_VISIBLE inline bool const report_autostarted = report_autostart();
}  // namespace detail
#endif

NSIGHTKIT_DETAIL_END_NAMESPACE
