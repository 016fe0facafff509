// Internal: the members of the report's plain types (report_types.hpp) that are not one-liners
// over scalars — the default signal list, the snapshot's look-ups. Header-only, report_types.hpp
// includes them; in the compiled mode (detail/compiled.hpp) src/nsightkit.cpp defines them once
// (enabled and disabled builds), so that a translation unit that includes the types instantiates
// none of std::vector's code for them.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/report_types.hpp>

#include <csignal>
#include <cstdint>
#include <string_view>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

NSIGHTKIT_DETAIL_MEMBER std::vector<int> ReportOptions::default_report_signals() {
#if defined(SIGHUP) && defined(SIGUSR1)
  return {SIGTERM, SIGINT, SIGHUP, SIGUSR1};
#else
  return {SIGTERM, SIGINT};
#endif
}

NSIGHTKIT_DETAIL_MEMBER PathStats const* ReportSnapshot::find(
    std::string_view path) const noexcept {
  for (auto const& r : paths) {
    if (r.path == path) return &r;
  }
  return nullptr;
}

NSIGHTKIT_DETAIL_MEMBER PathStats const* ReportSnapshot::find(std::string_view path,
                                                              std::uint32_t thread) const noexcept {
  for (auto const& r : thread_paths) {
    if (r.thread == thread && r.path == path) return &r;
  }
  return nullptr;
}

NSIGHTKIT_DETAIL_END_NAMESPACE
