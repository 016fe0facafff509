// Internal: writing the report's outputs — which files the options name, checking them when the
// report is enabled, and writing every one of them from a snapshot: at exit, on Report::write(),
// on a signal, for a periodic snapshot or at the end of a requested capture. Writes never overlap
// (one lock), so a signal that arrives during a write waits for it and then writes whole files.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/advised_snapshot.hpp>
#include <nsightkit/detail/report/options.hpp>
#include <nsightkit/detail/report/output/file.hpp>
#include <nsightkit/detail/report/output/html.hpp>
#include <nsightkit/detail/report/output/summary.hpp>
#include <nsightkit/detail/report/output/table.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/report/trace/stream.hpp>
#include <nsightkit/report_types.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Serialises every write of the outputs in the process.
NSIGHTKIT_DETAIL_VISIBLE inline std::mutex write_mutex;
/// Writes for a signal waiting for write_mutex: the others let them in first, so a program that
/// calls Report::write() in a loop cannot keep a signal's write waiting.
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<int> urgent_writes{0};
/// Outputs that did not reach their place (a strict report makes the exit status say so).
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<unsigned> outputs_failed{0};

/// The outputs that go to files.
enum class OutputKind : std::uint8_t { table, summary_json, summary_csv, trace, html_page };

/// The file outputs of `o`: (kind, what messages call it, path as given, fallback stem, extension).
struct FileOutput {
  OutputKind kind;
  char const* what;
  std::string const* path;
  char const* stem;
  char const* extension;
};

inline std::vector<FileOutput> file_outputs(ReportOptions const& o) {
  std::vector<FileOutput> out;
  if (!o.table.empty() && o.table != "stderr" && o.table != "stdout")
    out.push_back(FileOutput{OutputKind::table, "table", &o.table, "table", ".txt"});
  if (!o.json.empty())
    out.push_back(
        FileOutput{OutputKind::summary_json, "summary JSON", &o.json, "summary", ".json"});
  if (!o.csv.empty())
    out.push_back(FileOutput{OutputKind::summary_csv, "summary CSV", &o.csv, "summary", ".csv"});
  if (!o.trace.empty())
    out.push_back(FileOutput{OutputKind::trace, "trace", &o.trace, "trace", ".json"});
  if (!o.html.empty())
    out.push_back(FileOutput{OutputKind::html_page, "HTML page", &o.html, "report", ".html"});
  return out;
}

/// Says at once, on stderr, which outputs cannot be written where asked (creating missing
/// directories on the way), instead of finding out at the end of the run. Returns how many.
inline int check_outputs(ReportOptions const& o) {
  int bad = 0;
  for (FileOutput const& f : file_outputs(o)) {
    std::string const path = output_path_here(*f.path);
    std::string const why = check_output_path(effective_path(path));
    say_if_uncompressed(path);
    if (why.empty()) continue;
    ++bad;
    std::fprintf(stderr,
                 "nsightkit report: the %s cannot be written to '%s' (%s); unless that changes, "
                 "it will go to '%s' in the working directory\n",
                 f.what, path.c_str(), why.c_str(), fallback_path(f.stem, f.extension).c_str());
  }
  return bad;
}

/// How a write goes: with the table for stdout or stderr or not, saying what it wrote or not, and
/// why it writes ("at SIGTERM"), for the line that lists the files.
struct WriteWay {
  bool console_table{true};
  bool quiet{false};
  char const* occasion{nullptr};
  bool urgent{false};  // for a signal: ahead of the writes that have not begun
};

/// Takes write_mutex, letting urgent writes go first.
inline std::unique_lock<std::mutex> lock_writes(bool urgent) {
  if (urgent) {
    urgent_writes.fetch_add(1, std::memory_order_acq_rel);
    std::unique_lock<std::mutex> lock{write_mutex};
    urgent_writes.fetch_sub(1, std::memory_order_acq_rel);
    return lock;
  }
  while (urgent_writes.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  return std::unique_lock<std::mutex>{write_mutex};
}

/// Writes every output the options configure from `snap` (see WriteWay). False when one did not
/// reach its place.
inline bool write_snapshot(ReportSnapshot const& snap, WriteWay way) noexcept {
  NSIGHTKIT_DETAIL_TRY {
    std::unique_lock<std::mutex> const writing = lock_writes(way.urgent);
    ReportOptions const o = [] {
      State* s = state();
      if (s == nullptr) return ReportOptions{};
      std::lock_guard<std::mutex> lock{s->mutex};
      return s->options;
    }();
    bool ok = true;
    std::vector<std::string> wrote;
    std::string done;
    if (way.console_table && (o.table == "stderr" || o.table == "stdout")) {
      // The program's own buffered output comes first, not cut in half by the table.
      std::fflush(stdout);
      std::FILE* f = o.table == "stderr" ? stderr : stdout;
      TextSink sink{f};
      format_table(sink, snap, o.per_thread);
      std::fflush(f);
    }
    for (FileOutput const& f : file_outputs(o)) {
      std::string const path = output_path_here(*f.path);
      auto produce = [&](TextSink& sink) {
        switch (f.kind) {
          case OutputKind::table: format_table(sink, snap, o.per_thread); break;
          case OutputKind::summary_json: summary_json(sink, snap); break;
          case OutputKind::summary_csv: summary_csv(sink, snap); break;
          case OutputKind::html_page: write_html(sink, snap); break;
          case OutputKind::trace: write_trace_from_memory(sink); break;
        }
      };
      done.clear();
      TraceStream* const stream = TraceStream::existing();
      State* const st = state();
      if (f.kind == OutputKind::trace && stream != nullptr && st != nullptr &&
          stream->holds(effective_path(path), way.urgent)) {
        if (!stream->write_file(*st, done, way.urgent))
          ok = false;  // it streamed there: it ends it
      } else if (!write_output(path, f.what, f.stem, f.extension, produce, done)) {
        ok = false;
      }
      if (!done.empty()) wrote.push_back(done);
    }
    if (!ok) outputs_failed.fetch_add(1, std::memory_order_relaxed);
    if (!wrote.empty() && !way.quiet) {
      std::string line = "nsightkit report: wrote";
      for (std::size_t i = 0; i < wrote.size(); ++i) line += (i == 0 ? " " : ", ") + wrote[i];
      if (way.occasion != nullptr) line += std::string{" ("} + way.occasion + ")";
      if (forked_from.load(std::memory_order_relaxed) != 0)
        line += " (files of a forked child carry .pidN in their names)";
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    return ok;
  }
  NSIGHTKIT_DETAIL_CATCH(...) {
    std::fprintf(stderr, "nsightkit report: out of memory while writing the report\n");
  }
  outputs_failed.fetch_add(1, std::memory_order_relaxed);
  return false;
}

/// write_snapshot() with `console_table` (nsightkit/mpi.hpp leaves the table for stdout or stderr
/// out: it prints the merged one).
inline bool write_snapshot(ReportSnapshot const& snap, bool console_table) noexcept {
  WriteWay way;
  way.console_table = console_table;
  return write_snapshot(snap, way);
}

/// Writes every output of this process's report now; false when one did not reach its place.
inline bool write_local(WriteWay way = {}) noexcept {
  if (state() == nullptr) return false;
  NSIGHTKIT_DETAIL_TRY { return write_snapshot(advised_snapshot(), way); }
  NSIGHTKIT_DETAIL_CATCH(...) {
    std::fprintf(stderr, "nsightkit report: out of memory while taking the report's snapshot\n");
  }
  return false;
}

/// Report::write_html(): the page of the data so far, to `path` (through output_path_here()).
inline bool write_html_file(std::string const& path) noexcept {
  if (state() == nullptr) return false;
  NSIGHTKIT_DETAIL_TRY {
    ReportSnapshot const snap = advised_snapshot();
    std::string const target = output_path_here(path);
    auto produce = [&](TextSink& sink) { write_html(sink, snap); };
    std::string done;
    std::unique_lock<std::mutex> const writing = lock_writes(false);
    bool const ok = write_output(target, "HTML page", "report", ".html", produce, done);
    if (!done.empty()) std::fprintf(stderr, "nsightkit report: wrote %s\n", done.c_str());
    return ok;
  }
  NSIGHTKIT_DETAIL_CATCH(...) {
    std::fprintf(stderr, "nsightkit report: out of memory while writing the HTML page\n");
  }
  return false;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
