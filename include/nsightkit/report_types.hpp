/**
 * @file report_types.hpp
 * @brief The report's plain types: its options (ReportOptions) and what a snapshot holds
 *        (ReportSnapshot, PathStats, TimeStats, ...). Include <nsightkit/report.hpp> to use the
 *        report; this header alone gives the types (e.g. to pass snapshots around).
 *
 * Plain values: a snapshot, once taken, may be read from any number of threads.
 */
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>

#include <chrono>
#include <csignal>
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

/// How much advice the report gives (docs/advice.md).
enum class AdviceMode : std::uint8_t {
  on,   ///< findings that cost at least AdviceThresholds::min_cost of a step
  off,  ///< none
  all   ///< every finding, however small
};

/// The thresholds of the report's advice rules (docs/advice.md says how each is used).
struct AdviceThresholds {
  /// A finding is shown (advice=on) when it costs at least this share of a step.
  double min_cost{0.02};
  /// GPU idle within a range's GPU span, as a share of the span, that makes it launch-bound.
  double idle_share{0.3};
  /// A range launching at least this many kernels per call, each shorter than small_kernel_ns on
  /// average, with idle_share idle: a CUDA-graph candidate.
  std::uint64_t graph_kernels{20};
  /// The mean kernel duration below which kernels count as small (see graph_kernels).
  std::int64_t small_kernel_ns{20'000};
  /// The GPU busy share of the steps' time below which CPU-only work inside steps is suspected of
  /// making the GPU wait.
  double busy_share{0.6};
  /// The share of a device's copy time that overlaps its kernels below which copies are reported
  /// as not overlapping compute.
  double overlap_share{0.5};
};

/// Which source measures GPU time when ReportOptions::gpu is on.
enum class GpuSourceKind : std::uint8_t {
  /// CUPTI where the nsightkit::cupti component is linked and CUPTI can be used, else events.
  automatic,
  /// CUDA events around each range on the thread's current stream (CurrentStream, GpuRange).
  events,
  /// CUPTI's activity records: every kernel, copy and memset, attributed to the launching range.
  cupti,
};

/// The name of a GPU source, as `NSIGHTKIT_REPORT`'s `gpu=` item spells it.
/// @param k the source. @return "auto", "events" or "cupti" ("?" for a value out of range).
constexpr char const* to_string(GpuSourceKind k) noexcept {
  switch (k) {
    case GpuSourceKind::automatic: return "auto";
    case GpuSourceKind::events: return "events";
    case GpuSourceKind::cupti: return "cupti";
  }
  return "?";
}

/// The conventions the trace is written in (ReportOptions::trace_schema). Both are Chrome
/// trace-event JSON that Perfetto UI opens; they differ only where Kineto's names would replace
/// nsightkit's documented ones (docs/report.md, "Loading a trace in HTA").
enum class TraceSchema : std::uint8_t {
  /// nsightkit's categories ("nsightkit", "nsightkit step", "nsightkit gpu", ...); steps keep
  /// their NVTX names ("step 3").
  chrome,
  /// PyTorch profiler's (Kineto's): GPU work in categories "kernel", "gpu_memcpy" and
  /// "gpu_memset", each launch a "cuda_runtime" event with its correlation id, steps named
  /// "ProfilerStep#N", so Holistic Trace Analysis (HTA) reads the trace.
  kineto,
};

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
  /// Aggregate only ranges that begin while a capture window is active (detail::capture_active());
  /// `window-only` in NSIGHTKIT_REPORT. Named like the summary's `captured_only` key.
  bool captured_only{false};
  /// The table also lists every thread on its own.
  bool per_thread{false};
  /// Measure GPU time (see gpu_source): with CUDA events, of the ranges that run while a stream
  /// is current (CurrentStream, GpuRange); with CUPTI, of the work every range launches.
  bool gpu{true};
  /// Keep trace events even without a trace path (for Report::trace_json()).
  bool record_trace{false};
  /// Durations kept exactly per path and thread; past that, percentiles come from a log
  /// histogram (within about 1.6 %).
  std::size_t exact_samples{1024};
  /// Trace events a thread keeps in memory; later ones are counted as dropped. With a trace
  /// path they are streamed to the file as the run goes, which empties the buffer.
  std::size_t max_trace_events{std::size_t{1} << 20};
  /// Distinct paths per thread; later new paths are counted under "(other paths)".
  std::size_t max_paths{std::size_t{1} << 16};
  /// The clock; nullptr means std::chrono::steady_clock.
  ReportClock clock{nullptr};
  /// Deepest nesting kept as separate paths (1 = only outermost ranges). A range deeper than that
  /// is counted, with everything inside it, under one "(deeper ranges)" row of its ancestor at
  /// this depth, so a runaway recursion cannot make outputs grow with depth squared.
  std::size_t max_depth{128};
  /// Which GPU source measures GPU time (when `gpu` is on).
  GpuSourceKind gpu_source{GpuSourceKind::automatic};
  /// Events source only: time ranges on the GPU down to this path depth (1 = outermost ranges
  /// only; 0 = every depth), so layers can be timed without paying two events per op.
  std::size_t gpu_depth{0};
  /// Advice at the end of the table and in the JSON (needs the CUPTI source for the GPU rules).
  AdviceMode advice{AdviceMode::on};
  /// The advice rules' thresholds.
  AdviceThresholds advice_thresholds{};

  /// The NVTX domains whose ranges form paths, by name ("nsightkit" for nsightkit's default
  /// domain, "default" for NVTX's unnamed one); empty: every domain. A range of another domain is
  /// not counted and its children belong to the range around it (docs/nvtx-tool.md).
  std::vector<std::string> domains{};

  /// Path of the HTML page ("" for none): one self-contained file (docs/report-html.md).
  std::string html{};
  /// The largest trace, in bytes of JSON (before compression; 0: no limit). Past it the oldest
  /// events are left out and the trace says so (otherData.size_cap).
  std::size_t max_trace_bytes{std::size_t{256} << 20};
  /// The trace's conventions: nsightkit's own, or Kineto's for HTA (trace-schema=kineto).
  TraceSchema trace_schema{TraceSchema::chrome};

  /// Signals that make the report write every output, then do what they did before (the
  /// program's handler, or the default action: the process ends by the signal). A signal the
  /// process ignores (SIG_IGN, e.g. under nohup) is left alone. Empty: none (docs/long-jobs.md).
  std::vector<int> signals{default_report_signals()};
  /// The signal that requests a capture (CaptureWindow: its next warm-up and active steps; the
  /// outputs are written when they end); 0: none. Default SIGUSR2.
  int trigger_signal{default_trigger_signal()};
  /// A file whose appearance requests a capture as trigger_signal does (polled about 5 times a
  /// second, removed when seen); "" for none.
  std::string trigger_file{};
  /// Rewrite the file outputs this often while the run goes on (each file replaced whole); 0: only
  /// at exit, Report::write() and signals.
  std::chrono::milliseconds snapshot_every{0};
  /// A bad configuration ends the process with status 2 at once, and an output that could not be
  /// written where asked makes the exit status 3 (for CI). NSIGHTKIT_REPORT_STRICT=1 sets it too.
  bool strict{false};

  /// The signals ReportOptions::signals holds by default: SIGTERM, SIGINT, SIGHUP, SIGUSR1 (what
  /// schedulers send before they end a job: Slurm, Kubernetes, a terminal's Ctrl-C).
  /// @return the signal numbers (SIGTERM and SIGINT alone where the platform lacks the others).
  static std::vector<int> default_report_signals();
  /// The signal ReportOptions::trigger_signal holds by default.
  /// @return SIGUSR2 (0 where the platform has none).
  static constexpr int default_trigger_signal() noexcept {
#if defined(SIGUSR2)
    return SIGUSR2;
#else
    return 0;
#endif
  }

  /**
   * @brief Parses the `NSIGHTKIT_REPORT` grammar (report.hpp's file comment, docs/report.md).
   * @param spec e.g. "table,trace=out.json"
   * @param error receives the reason when the spec is bad (may be null)
   * @return the options, or std::nullopt when `spec` is bad or turns the report off
   *         (then `*error` is empty).
   * @throws std::bad_alloc when the options or the message cannot be built.
   */
  static std::optional<ReportOptions> try_parse(std::string_view spec,
                                                std::string* error = nullptr);

#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS || defined(NSIGHTKIT_DOXYGEN)
  /**
   * @brief Parses like try_parse() but throws on a bad spec.
   * @param spec e.g. "table,trace=out.json"
   * @return the options.
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

/// Copies (or memsets) of one kind within a path, from CUPTI's activity records.
struct CopyStats {
  std::uint64_t count{0};     ///< operations
  std::uint64_t bytes{0};     ///< bytes moved (or set)
  std::int64_t total_ns{0};   ///< summed GPU durations
  std::uint64_t pageable{0};  ///< operations with pageable (not page-locked) host memory
};

/// One kernel (by name) within a path, from CUPTI's activity records.
struct KernelStats {
  std::string name;          ///< demangled when the name is a C++ symbol
  std::uint64_t count{0};    ///< launches
  std::int64_t total_ns{0};  ///< summed durations
};

/**
 * @brief What ran on the GPU for a path, from CUPTI's activity records (the "cupti" GPU source;
 *        all zero otherwise). See docs/gpu-attribution.md.
 *
 * Work belongs to the range whose thread launched it (the innermost open range at the launch
 * call): inclusive fields count the work of every range nested inside too, `self_` fields only
 * the work the range launched itself. Times are per call of the path, summed over calls.
 */
struct GpuWorkStats {
  std::uint64_t kernels{0};          ///< kernels (inclusive)
  std::uint64_t self_kernels{0};     ///< kernels launched by the range itself
  std::int64_t kernel_ns{0};         ///< summed kernel durations (concurrent kernels add up)
  std::int64_t busy_ns{0};           ///< length of the union of the GPU intervals, per call
  std::int64_t self_busy_ns{0};      ///< the same for the range's own work
  std::int64_t span_ns{0};           ///< first GPU start to last GPU end, per call
  std::int64_t idle_ns{0};           ///< span - busy: the GPU waited inside the span
  std::uint64_t calls_with_work{0};  ///< calls that launched GPU work
  TimeStats launch_latency;          ///< launch call entered to GPU start, per kernel/copy/memset
  CopyStats h2d;                     ///< host-to-device copies
  CopyStats d2h;                     ///< device-to-host copies
  CopyStats d2d;                     ///< device-to-device and peer copies
  CopyStats other_copies;            ///< host-to-host and other copies
  CopyStats memsets;                 ///< memsets
  std::uint32_t streams{0};          ///< distinct (device, stream) pairs used
  std::vector<KernelStats> top_kernels;  ///< by total time, longest first, at most 5
  std::uint64_t allocations{0};          ///< device allocations made by the range itself
  std::uint64_t allocated_bytes{0};      ///< their bytes
  std::uint64_t freed_bytes{0};          ///< bytes of those allocations freed since
  std::uint64_t peak_bytes{0};           ///< most bytes of its allocations live at once
  /// Host-blocking CUDA calls made by the range itself (synchronizations, synchronous copies and
  /// memsets, allocations and frees): how many, and how long the thread was blocked in them.
  std::uint64_t sync_calls{0};
  std::int64_t sync_ns{0};  ///< time blocked in them
  std::string sync_api;     ///< the call that blocked longest in total ("cudaStreamSynchronize")
  std::uint64_t legacy_stream_work{0};  ///< kernels, copies, memsets on the legacy default stream
  /// Of `kernels`, those a thread without ranges launched on a stream this range (or one nested
  /// in it) had made current (NCCL's launch thread), and their summed time.
  std::uint64_t delegated_kernels{0};
  std::int64_t delegated_kernel_ns{0};  ///< their summed durations
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
  GpuWorkStats work;        ///< what ran on the GPU, from CUPTI (zero with the events source)
};

/// A thread that recorded ranges.
struct ThreadStats {
  std::uint32_t id{0};                ///< OS thread id
  std::string name;                   ///< from name_current_thread(), or empty
  bool exited{false};                 ///< the thread ended before the snapshot (its data is kept)
  std::uint64_t ranges{0};            ///< ranges aggregated (steps included)
  std::uint64_t trace_dropped{0};     ///< trace events beyond ReportOptions::max_trace_events
  std::uint64_t paths_over_limit{0};  ///< ranges counted under "(other paths)"
  /// Ranges past ReportOptions::max_depth (counted under "(deeper ranges)" or inside it).
  std::uint64_t depth_over_limit{0};
  std::uint64_t marks_over_limit{0};  ///< marks counted under "(other marks)"
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

/// All GPU work of one stream, from CUPTI's activity records.
struct GpuStreamStats {
  std::uint32_t device{0};   ///< CUDA device ordinal
  std::uint32_t stream{0};   ///< CUPTI's stream id
  std::uint64_t kernels{0};  ///< kernels
  std::uint64_t copies{0};   ///< copies and memsets
  std::int64_t busy_ns{0};   ///< union of its intervals
  std::string name;          ///< as the program named it (nvtxNameCudaStream), or empty
};

/// All GPU work of one device, from CUPTI's activity records.
struct GpuDeviceStats {
  std::uint32_t device{0};          ///< CUDA device ordinal
  std::uint64_t kernels{0};         ///< kernels
  std::uint64_t copies{0};          ///< copies and memsets
  std::int64_t busy_ns{0};          ///< union of all its intervals (any stream)
  std::int64_t span_ns{0};          ///< first start to last end
  std::int64_t kernel_busy_ns{0};   ///< union of its kernels (CUPTI source only)
  std::int64_t copy_busy_ns{0};     ///< union of its copies (CUPTI source only)
  std::int64_t copy_overlap_ns{0};  ///< copy time during which a kernel ran (CUPTI source only)
};

/// One finding of the report's advice: what is wrong, where, what it costs, what to do.
struct Advice {
  std::string rule;                ///< "gpu-waits-for-cpu", "pageable-copies", "host-sync", ...
  std::string severity;            ///< "high" (>= 10% of a step), "medium" (>= 2%), "low"
  std::vector<std::string> paths;  ///< where, most costly first
  std::string evidence;            ///< the measured numbers behind it
  std::int64_t cost_ns{0};         ///< estimated time it costs per step (per run without steps)
  std::string suggestion;          ///< what to do about it
};

/// GPU timing bookkeeping of a snapshot.
struct GpuTimingStats {
  std::uint64_t ranges_timed{0};    ///< ranges with a GPU time
  std::uint64_t ranges_pending{0};  ///< recorded but not complete at the snapshot
  /// Not timed: stream capturing a CUDA graph, or too many pending.
  std::uint64_t ranges_skipped{0};
  std::uint64_t events_created{0};        ///< CUDA events created (the pool reuses them)
  std::string error;                      ///< why GPU timing stopped, or empty
  std::string source;                     ///< what measured GPU time: "events", "cupti", or ""
  std::string note;                       ///< why the source is not the one asked for, or empty
  std::uint64_t records{0};               ///< CUPTI activity records received
  std::uint64_t records_dropped{0};       ///< records CUPTI dropped (buffers full)
  std::uint64_t records_unattributed{0};  ///< records of work launched outside any range
  std::uint64_t records_late{0};  ///< records that arrived after their range's work was settled
  /// Records of work a thread without ranges launched on a stream a range had made current:
  /// counted for that range.
  std::uint64_t records_delegated{0};
  std::vector<GpuDeviceStats> devices;  ///< per device: all work, attributed or not
  std::vector<GpuStreamStats> streams;  ///< per stream
};

/// Consecutive capture-window steps, as the report's step series keeps them: one step each
/// while a run has at most 2048, else neighbours merged so the whole run fits in 2048 points.
struct StepPoint {
  std::int64_t start_ns{0};  ///< when the first of them began, from enable() (or reset())
  std::uint64_t steps{0};    ///< how many steps
  std::int64_t total_ns{0};  ///< their summed durations
  std::int64_t max_ns{0};    ///< the longest of them
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
  /// In a child forked from a process that ran the report: the parent's process id (the child's
  /// report starts empty at the fork and writes files of its own); else 0.
  long forked_from{0};
  /// The report's advice, most costly first (docs/advice.md); empty with advice=off.
  std::vector<Advice> advice;
  /// Rules that could not be evaluated, and which data they miss.
  std::vector<std::string> advice_missing;
  /// Capture-window step times over the run, in order (bounded; see StepPoint).
  std::vector<StepPoint> step_series;

  /// Looks a path up among the merged rows.
  /// @param path components joined by '/', as PathStats::path.
  /// @return its row in `paths`, or nullptr.
  [[nodiscard]] PathStats const* find(std::string_view path) const noexcept;
  /// Looks a path up among one thread's rows.
  /// @param path components joined by '/'. @param thread the OS thread id.
  /// @return its row in `thread_paths`, or nullptr.
  [[nodiscard]] PathStats const* find(std::string_view path, std::uint32_t thread) const noexcept;
};

NSIGHTKIT_DETAIL_END_NAMESPACE

// The out-of-line members above (they instantiate std::vector's code): here header-only, in
// src/nsightkit.cpp compiled (detail/compiled.hpp).
#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/report/types_impl.hpp>
#endif
