// Internal: the report's entry points — every call the public Report, ReportOptions and
// CurrentStream make into the report engine, and the start-up read of NSIGHTKIT_REPORT.
//
// Header-only, they are inline and <nsightkit/report.hpp> includes their definitions
// (entry_impl.hpp, which brings the whole engine). In the compiled mode (NSIGHTKIT_COMPILED, see
// detail/compiled.hpp) this header only declares them and src/nsightkit.cpp defines them once, so
// a translation unit that includes report.hpp neither parses the engine nor generates its code;
// in a disabled build too, where the outputs and the grammar still work (the first group below).
// The rest has an enabled and a disabled (NSIGHTKIT_DISABLE: nothing records) definition side by
// side here, so the public Report and CurrentStream are written once.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/report/current_stream.hpp>
#include <nsightkit/report_types.hpp>

#include <optional>
#include <string>
#include <string_view>

// What 0 means for a stream depends on the translation unit (CurrentStream's constructor).
#if NSIGHTKIT_ENABLED && NSIGHTKIT_HAS_CUDA && defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#include <nsightkit/detail/cuda_driver.hpp>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report::entry {

/// parse_report_spec(): the NSIGHTKIT_REPORT grammar (ReportOptions::try_parse and parse).
NSIGHTKIT_DETAIL_ENTRY bool parse(std::string_view spec, ReportOptions& out, bool& on,
                                  std::string& why);
/// The table of `snapshot` as text (format_table()).
NSIGHTKIT_DETAIL_ENTRY std::string format_table(ReportSnapshot const& snapshot, bool per_thread);
/// The summary of `snapshot` as JSON (summary_json()).
NSIGHTKIT_DETAIL_ENTRY std::string summary_json(ReportSnapshot const& snapshot);
/// The summary of `snapshot` as CSV (summary_csv()).
NSIGHTKIT_DETAIL_ENTRY std::string summary_csv(ReportSnapshot const& snapshot);
/// The HTML page of `snapshot` (html_page()).
NSIGHTKIT_DETAIL_ENTRY std::string html_page(ReportSnapshot const& snapshot);
/// The file name the report writes for `path` (Report::output_path).
NSIGHTKIT_DETAIL_ENTRY std::string output_path(std::string const& path);
NSIGHTKIT_DETAIL_ENTRY std::optional<int> rank() noexcept;

#if NSIGHTKIT_ENABLED
/// Report::enable().
NSIGHTKIT_DETAIL_ENTRY bool enable(ReportOptions const& options) noexcept;
/// Report::enable_from_environment().
NSIGHTKIT_DETAIL_ENTRY bool enable_from_environment() noexcept;
/// Reads NSIGHTKIT_REPORT once per process: the static initialiser of report.hpp.
NSIGHTKIT_DETAIL_ENTRY bool autostart() noexcept;
/// Report::disable().
NSIGHTKIT_DETAIL_ENTRY void disable() noexcept;
/// Report::is_enabled().
NSIGHTKIT_DETAIL_ENTRY bool is_enabled() noexcept;
/// Report::reset().
NSIGHTKIT_DETAIL_ENTRY void reset() noexcept;
/// Report::options().
NSIGHTKIT_DETAIL_ENTRY ReportOptions options();
/// Report::snapshot().
NSIGHTKIT_DETAIL_ENTRY ReportSnapshot snapshot();
/// Report::trace_json().
NSIGHTKIT_DETAIL_ENTRY std::string trace_json();
/// Report::write_html().
NSIGHTKIT_DETAIL_ENTRY bool write_html(std::string const& path) noexcept;
/// Report::write().
NSIGHTKIT_DETAIL_ENTRY bool write() noexcept;
/// The CUDA driver's event functions, which CurrentStream hands to the events GPU source.
NSIGHTKIT_DETAIL_ENTRY EventApi const* driver_events() noexcept;

/// CurrentStream's work: makes `stream` the thread's current stream until destruction.
class StreamScope {
 public:
  explicit StreamScope(void* stream) noexcept : previous_{current_gpu} {
#if NSIGHTKIT_HAS_CUDA && defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
    if (stream == nullptr) stream = cuda_driver::per_thread_stream();  // what 0 means in this TU
#endif
    current_gpu = GpuContext{stream, driver_events()};
  }
  ~StreamScope() { current_gpu = previous_; }
  StreamScope(StreamScope const&) = delete;
  StreamScope& operator=(StreamScope const&) = delete;

 private:
  GpuContext previous_;
};
#else  // NSIGHTKIT_DISABLE: nothing records; no engine to call.
inline bool enable(ReportOptions const& /*options*/) noexcept { return false; }
inline bool enable_from_environment() noexcept { return false; }
inline void disable() noexcept {}
inline bool is_enabled() noexcept { return false; }
inline void reset() noexcept {}
inline std::string trace_json() { return "{\"traceEvents\":[]}\n"; }
inline bool write_html(std::string const& /*path*/) noexcept { return false; }
inline bool write() noexcept { return false; }

class StreamScope {
 public:
  explicit StreamScope(void* /*stream*/) noexcept {}
  StreamScope(StreamScope const&) = delete;
  StreamScope& operator=(StreamScope const&) = delete;
};
#endif

}  // namespace detail::report::entry
NSIGHTKIT_DETAIL_END_NAMESPACE
