// A shared library that embeds nsightkit's report, built with -fvisibility=hidden like many real
// plugins (tests/report/report.cmake builds it twice: one copy linked, one loaded with dlopen). It records
// ranges and can try to enable "its" report, to test that the report is one per process.
#include <nsightkit/detail/report/engine.hpp>  // the engine's pieces, in either mode
#include <nsightkit/report.hpp>

#define NSK_REPORT_PLUGIN_API extern "C" __attribute__((visibility("default")))

/// Emits a range "plugin<i>" with a child "work".
NSK_REPORT_PLUGIN_API void report_plugin_record(int i) {
  nsightkit::ScopedRange r{"plugin{}", i};
  nsightkit::ScopedRange w{"work"};
}

/// The address of the report state this copy of nsightkit uses (null when none or disabled).
NSK_REPORT_PLUGIN_API void const* report_plugin_state() {
#if NSIGHTKIT_ENABLED
  return nsightkit::detail::report::state();
#else
  return nullptr;
#endif
}

/// Report::enable() from inside the plugin: 1 when it records.
NSK_REPORT_PLUGIN_API int report_plugin_enable() {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  return nsightkit::Report::enable(o) ? 1 : 0;
}

/// Calls of `path` in the report this copy of nsightkit reaches (its snapshot).
NSK_REPORT_PLUGIN_API int report_plugin_count(char const* path) {
  auto const snap = nsightkit::Report::snapshot();
  auto const* row = snap.find(path);
  return row == nullptr ? 0 : static_cast<int>(row->cpu.count);
}

/// 1 when this copy was compiled with instrumentation.
NSK_REPORT_PLUGIN_API int report_plugin_nsightkit_enabled() { return nsightkit::enabled ? 1 : 0; }

/// 1 when this copy found another copy's report in the process (and stayed off).
NSK_REPORT_PLUGIN_API int report_plugin_duplicate() {
#if NSIGHTKIT_ENABLED
  return nsightkit::detail::report::duplicate_copy.load() ? 1 : 0;
#else
  return 0;
#endif
}
