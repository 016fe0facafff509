// Reading the report's saved files for the subcommands that work offline: a summary JSON
// ("format": "nsightkit-report", docs/report.md) back into the ReportSnapshot it was written from,
// and a Chrome trace the report wrote, for the merge. Files may be gzip-compressed.
#pragma once

#include <nsightkit/report_types.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nsightkit_command {

/// A file that cannot be used: what() is "FILE: PROBLEM" (subcommands print it and exit with 2).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A summary read back: the snapshot it holds and the version of nsightkit that wrote it.
/// Everything the table, the HTML page and the merge use comes back as it was (mean times too:
/// the JSON rounds them, the reader takes total / count again); what the JSON leaves out (the
/// GPU work of a row without any, "gpu_work": null) reads as zero.
struct SavedSummary {
  std::string file;
  std::string nsightkit_version;
  nsightkit::ReportSnapshot snapshot;
};

/// Which metadata event a trace event is (the merge replaces some of them).
enum class TraceMeta : std::uint8_t { none, process_name, process_sort_index };

/// One event of a trace: compact JSON text on one line.
struct TraceEvent {
  std::string json;
  TraceMeta meta{TraceMeta::none};
};

/// A trace the report wrote (one process): its events and what its otherData says.
struct SavedTrace {
  std::string file;
  std::string nsightkit_version;
  std::optional<int> rank;
  std::optional<long> pid;
  std::string clock;  ///< "steady", "custom", or "" where the file does not say
  std::optional<std::int64_t> origin_ns;
  std::uint64_t events_dropped{0};
  std::vector<TraceEvent> events;
};

/// What a JSON file is.
enum class FileKind : std::uint8_t {
  summary,  ///< one process's summary ("nsightkit-report")
  trace,    ///< one process's trace (otherData.producer "nsightkit <version>")
  merged,   ///< a merged summary or trace (`nsightkit merge`, or rank 0 under MPI)
  other     ///< valid JSON, but none of these
};

/// A report file, read and checked.
struct ReportFile {
  FileKind kind{FileKind::other};
  SavedSummary summary;  ///< kind summary
  SavedTrace trace;      ///< kind trace
};

/// Reads a report file (plain or gzip-compressed JSON) and tells what it holds.
/// @throws InputError for a file that cannot be read, is no JSON or is cut short, and for a
///         summary or trace whose content is not what the report writes.
ReportFile read_report_file(std::string const& path);

/// Reads one process's summary.
/// @throws InputError as read_report_file(), and for any other kind of file (naming what it is).
SavedSummary read_summary(std::string const& path);

/// The text of a file, gzip-compressed or not (told by its first bytes, not its name).
/// @throws InputError when it cannot be read.
std::string read_text(std::string const& path);

}  // namespace nsightkit_command
