// Internal: the definitions of the report's entry points (entry.hpp) over the report engine
// (engine.hpp). Included by <nsightkit/report.hpp> in the header-only mode, by src/nsightkit.cpp in
// the compiled mode (NSIGHTKIT_COMPILED), where they are defined once for the program: enabled,
// and built with NSIGHTKIT_DISABLE, the ones a disabled program still calls.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/engine.hpp>
#include <nsightkit/detail/report/entry.hpp>
#include <nsightkit/report_types.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

NSIGHTKIT_DETAIL_MEMBER std::optional<ReportOptions> ReportOptions::try_parse(std::string_view spec,
                                                                              std::string* error) {
  ReportOptions o;
  bool on = false;
  std::string why;
  if (error != nullptr) error->clear();
  if (!detail::report::entry::parse(spec, o, on, why)) {
    if (error != nullptr) *error = why;
    return std::nullopt;
  }
  if (!on) return std::nullopt;
  return o;
}

#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
NSIGHTKIT_DETAIL_MEMBER ReportOptions ReportOptions::parse(std::string_view spec) {
  std::string why;
  auto o = try_parse(spec, &why);
  if (!o) {
    if (why.empty()) why = "it turns the report off";
    throw std::invalid_argument{"nsightkit: report spec '" + std::string{spec} + "': " + why};
  }
  return *std::move(o);
}
#endif

namespace detail::report::entry {

NSIGHTKIT_DETAIL_ENTRY bool parse(std::string_view spec, ReportOptions& out, bool& on,
                                  std::string& why) {
  return parse_report_spec(spec, out, on, why);
}

NSIGHTKIT_DETAIL_ENTRY std::string format_table(ReportSnapshot const& snapshot, bool per_thread) {
  return report::format_table(snapshot, per_thread);
}

NSIGHTKIT_DETAIL_ENTRY std::string summary_json(ReportSnapshot const& snapshot) {
  return report::summary_json(snapshot);
}

NSIGHTKIT_DETAIL_ENTRY std::string summary_csv(ReportSnapshot const& snapshot) {
  return report::summary_csv(snapshot);
}

NSIGHTKIT_DETAIL_ENTRY std::string html_page(ReportSnapshot const& snapshot) {
  return report::html_page(snapshot);
}

NSIGHTKIT_DETAIL_ENTRY std::string output_path(std::string const& path) {
  return output_path_here(path);
}

NSIGHTKIT_DETAIL_ENTRY std::optional<int> rank() noexcept {
  auto const r = launcher_rank();
  return r ? std::optional<int>{r->rank} : std::nullopt;
}

#if NSIGHTKIT_ENABLED
NSIGHTKIT_DETAIL_ENTRY bool enable(ReportOptions const& options) noexcept {
  return report::enable(options);
}

NSIGHTKIT_DETAIL_ENTRY bool enable_from_environment() noexcept {
  return report::enable_from_environment();
}

NSIGHTKIT_DETAIL_ENTRY bool autostart() noexcept { return report::autostart(); }

NSIGHTKIT_DETAIL_ENTRY void disable() noexcept { report::disable(); }

NSIGHTKIT_DETAIL_ENTRY bool is_enabled() noexcept { return report::is_enabled(); }

NSIGHTKIT_DETAIL_ENTRY void reset() noexcept { report::reset(); }

NSIGHTKIT_DETAIL_ENTRY ReportOptions options() { return report::options(); }

NSIGHTKIT_DETAIL_ENTRY ReportSnapshot snapshot() { return report::advised_snapshot(); }

NSIGHTKIT_DETAIL_ENTRY std::string trace_json() { return report::trace_json(); }

NSIGHTKIT_DETAIL_ENTRY bool write_html(std::string const& path) noexcept {
  return write_html_file(path);
}

NSIGHTKIT_DETAIL_ENTRY bool write() noexcept { return report::write(); }

NSIGHTKIT_DETAIL_ENTRY EventApi const* driver_events() noexcept { return &driver_event_api(); }
#endif

}  // namespace detail::report::entry
NSIGHTKIT_DETAIL_END_NAMESPACE
