/**
 * @file report.hpp
 * @brief The in-process report: where the time goes, per range path, with no external tool.
 *
 * Off by default; on with Report::enable() or `NSIGHTKIT_REPORT=table ./train`. docs/report.md
 * holds the `NSIGHTKIT_REPORT` grammar, what is measured, the outputs and when the environment
 * is read (including this header reads it once per process; `NSIGHTKIT_REPORT_NO_AUTOSTART`
 * skips that).
 */
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/report/current_stream.hpp>
#include <nsightkit/detail/report/entry.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report_types.hpp>

// The engine itself: here header-only, in src/nsightkit.cpp compiled (detail/compiled.hpp). The
// CUPTI source stays header-only in both modes.
#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/report/entry_impl.hpp>
#endif
#if defined(NSIGHTKIT_CUPTI) && NSIGHTKIT_CUPTI  // set by the nsightkit::cupti component
#include <nsightkit/cupti.hpp>
#endif
#if NSIGHTKIT_HAS_CUDA
#include <nsightkit/stream.hpp>
#endif

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/**
 * @brief The process-wide report: enable, snapshot, write. All members are static.
 *
 * Report controls the live report and reads it (snapshot(), trace_json()); a snapshot is turned
 * into text by the free functions format_table(), summary_json(), summary_csv() and html_page().
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
 *   std::puts(nsightkit::format_table(nsightkit::Report::snapshot()).c_str());
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
   * @param options what to record and where to write.
   * @return true when the report records; false under `NSIGHTKIT_DISABLE`, when out of memory, or
   *         when this is a second, un-unified copy of nsightkit in the process (reported on
   *         stderr).
   */
  static bool enable(ReportOptions const& options = ReportOptions{}) noexcept {
    return detail::report::entry::enable(options);
  }

  /**
   * @brief Enables the report as `NSIGHTKIT_REPORT` says.
   * @return true when the variable is set and valid (the report records). An unset or "off" value
   *         returns false silently; a bad one prints one message naming the variable and the bad
   *         item, and returns false.
   */
  static bool enable_from_environment() noexcept {
    return detail::report::entry::enable_from_environment();
  }

  /// Stops recording. Collected data is kept; ranges open now lose their end.
  static void disable() noexcept { detail::report::entry::disable(); }

  /// Whether the report records. @return true between enable() and disable() (always false
  /// under `NSIGHTKIT_DISABLE`).
  [[nodiscard]] static bool is_enabled() noexcept { return detail::report::entry::is_enabled(); }

  /// Drops everything collected so far and restarts the run's time origin. Ranges open at this
  /// moment are forgotten.
  static void reset() noexcept { detail::report::entry::reset(); }

  /// The options in force. @return a copy of them (defaults when never enabled).
  /// @throws std::bad_alloc when the copy cannot be made.
  [[nodiscard]] static ReportOptions options();

  /**
   * @brief Merges every thread's data into plain values.
   *
   * Completes GPU timing first: waits (cudaEventSynchronize) for the events of ranges already
   * ended — the only place the report synchronizes with the GPU.
   * @return the data so far (empty when never enabled, and under NSIGHTKIT_DISABLE).
   * @throws std::bad_alloc when the snapshot cannot be built.
   */
  [[nodiscard]] static ReportSnapshot snapshot();

  /**
   * @brief The Chrome trace-event JSON of the ranges recorded so far.
   *
   * Needs ReportOptions::trace or ReportOptions::record_trace; otherwise it holds only metadata.
   * @return the JSON document (`{"traceEvents":[]}` under NSIGHTKIT_DISABLE).
   * @throws std::bad_alloc when the text cannot be built.
   */
  [[nodiscard]] static std::string trace_json() { return detail::report::entry::trace_json(); }

  /**
   * @brief Writes the HTML page of the data recorded so far to `path` now.
   *
   * The name goes through output_path(); the file is written as the other outputs are (to a
   * temporary renamed into place, to a fallback in the working directory when that fails).
   * @param path the page's file name, e.g. "report.html"
   * @return false when it could not be written (reported on stderr), or under NSIGHTKIT_DISABLE.
   */
  static bool write_html(std::string const& path) noexcept {
    return detail::report::entry::write_html(path);
  }

  /**
   * @brief Writes every output the options configure (table, json, csv, trace, html) now.
   *
   * File names go through output_path(). Also what happens at exit with ReportOptions::at_exit.
   * @return false when a file could not be written (reported on stderr), or when nothing was
   *         recorded at all (not enabled, NSIGHTKIT_DISABLE).
   */
  static bool write() noexcept { return detail::report::entry::write(); }

  /// This process's rank from the launcher variables (OMPI_COMM_WORLD_RANK, PMI_RANK,
  /// SLURM_PROCID, RANK, LOCAL_RANK; first set wins).
  /// @return the rank, or std::nullopt when none is set.
  [[nodiscard]] static std::optional<int> rank() noexcept { return detail::report::entry::rank(); }

  /// The file name the report writes for `path`: "{rank}" and "{pid}" are replaced; without
  /// "{rank}" and with a launcher rank, ".rankN" goes before the extension ("out.rankN.json");
  /// without "{pid}", a child forked from a process running the report gets ".pidN" there too.
  /// @param path a file name as given in the options. @return the name written.
  /// @throws std::bad_alloc when the name cannot be built.
  [[nodiscard]] static std::string output_path(std::string const& path) {
    return detail::report::entry::output_path(path);
  }
};

/**
 * @name Rendering a snapshot
 * The report's outputs as text, from a snapshot (Report::snapshot(), or one read back from a
 * file): what Report::write() writes, for a program that prints or sends them itself.
 * @{
 */

/**
 * @brief The table for `snapshot`: tree-indented paths sorted by total, %run, self, percentiles.
 * @param snapshot from Report::snapshot()
 * @param per_thread also list every thread on its own
 * @return the table's text, one line per row.
 * @throws std::bad_alloc when the text cannot be built.
 */
[[nodiscard]] inline std::string format_table(ReportSnapshot const& snapshot,
                                              bool per_thread = false) {
  return detail::report::entry::format_table(snapshot, per_thread);
}

/// The summary of a snapshot as JSON. @param snapshot from Report::snapshot()
/// @return the JSON document (format "nsightkit-report", version 1; see docs/report.md).
/// @throws std::bad_alloc when the text cannot be built.
[[nodiscard]] inline std::string summary_json(ReportSnapshot const& snapshot) {
  return detail::report::entry::summary_json(snapshot);
}

/// The summary of a snapshot as CSV. @param snapshot from Report::snapshot()
/// @return a header line, then one row per path (scope "all") and per thread and path.
/// @throws std::bad_alloc when the text cannot be built.
[[nodiscard]] inline std::string summary_csv(ReportSnapshot const& snapshot) {
  return detail::report::entry::summary_csv(snapshot);
}

/**
 * @brief The HTML page of `snapshot`: one self-contained file (inline styles and scripts, no
 *        network) with an icicle view of the path tree, the sortable and filterable table,
 *        steps over the run and top kernels per module. See docs/report-html.md.
 *
 * The page needs no library: its own script draws the charts, so it is whole wherever it is
 * written.
 * @param snapshot from Report::snapshot()
 * @return the page's HTML text.
 * @throws std::bad_alloc when the text cannot be built.
 */
[[nodiscard]] inline std::string html_page(ReportSnapshot const& snapshot) {
  return detail::report::entry::html_page(snapshot);
}

/** @} */

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
 * Makes its CUDA calls through the CUDA driver, loaded at run time when the report is enabled
 * (nothing to link). Without a driver, GPU timing stops with one message on stderr and CPU
 * times go on. Thread safety: the current stream is per thread (thread-local); the object must
 * be destroyed on the thread that made it, in LIFO order.
 *
 * @code
 * nsightkit::CurrentStream on{nsightkit::StreamView{stream}};
 * nsightkit::ScopedRange fwd{"forward"};        // CPU time and GPU time on `stream`
 * launch_forward(stream);
 * @endcode
 */
class CurrentStream : private detail::report::entry::StreamScope {
 public:
  /// Sets `stream` as the thread's current stream until destruction.
  /// @param stream a stream of the current device; it must outlive this object.
  explicit CurrentStream(StreamView stream) noexcept
      : StreamScope{static_cast<void*>(stream.value())} {}

  /// Restores the previous current stream (or none).
  ~CurrentStream() = default;

  CurrentStream(CurrentStream const&) = delete;
  CurrentStream(CurrentStream&&) = delete;
  CurrentStream& operator=(CurrentStream const&) = delete;
  CurrentStream& operator=(CurrentStream&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;
};

/**
 * @brief A ScopedRangeIn<D> whose work runs on `stream`: the report also gives its GPU time.
 *
 * Same names as ScopedRangeIn (static, std::string, format string + arguments), preceded by the
 * stream. Equivalent to a CurrentStream for the range's lifetime, so ranges nested inside it are
 * timed on the stream as well. Never throws; threads as for ScopedRangeIn.
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
  /// @param stream the stream the range's work runs on.
  /// @param name a string that outlives the call.
  GpuRangeIn(StreamView stream, char const* name) noexcept : current_{stream}, range_{name} {}
  /// A range with attributes and a fixed name, timed on `stream`.
  /// @param stream the stream the range's work runs on.
  /// @param attributes color, category and payload of the range.
  /// @param name a string that outlives the call.
  GpuRangeIn(StreamView stream, Attributes const& attributes, char const* name) noexcept
      : current_{stream}, range_{attributes, name} {}
  /// A range named by a run-time string, timed on `stream`.
  /// @param stream the stream the range's work runs on.
  /// @param name the range name (a plain message).
  GpuRangeIn(StreamView stream, std::string const& name) noexcept
      : current_{stream}, range_{name} {}
  /// A range with attributes named by a run-time string, timed on `stream`.
  /// @param stream the stream the range's work runs on.
  /// @param attributes color, category and payload of the range.
  /// @param name the range name (a plain message).
  GpuRangeIn(StreamView stream, Attributes const& attributes, std::string const& name) noexcept
      : current_{stream}, range_{attributes, name} {}
  /// A range with a formatted name, timed on `stream`.
  /// @param stream the stream the range's work runs on.
  /// @param format the format string. @param a0 first format argument.
  /// @param as further format arguments.
  template <class A0, class... As>
  GpuRangeIn(StreamView stream, fmt::format_string<A0, As...> format, A0&& a0, As&&... as) noexcept
      : current_{stream}, range_{format, std::forward<A0>(a0), std::forward<As>(as)...} {}
  /// A range with attributes and a formatted name, timed on `stream`.
  /// @param stream the stream the range's work runs on.
  /// @param attributes color, category and payload of the range.
  /// @param format the format string. @param a0 first format argument.
  /// @param as further format arguments.
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

NSIGHTKIT_DETAIL_END_NAMESPACE

// Report's members that return the report's large types by value (which makes every translation
// unit that defines them instantiate those types' destructors): here header-only, in
// src/nsightkit.cpp compiled (detail/compiled.hpp).
#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/report/report_impl.hpp>
#endif

// The start-up read of NSIGHTKIT_REPORT (see the file comment).
#include <nsightkit/detail/report/autostart.hpp>
