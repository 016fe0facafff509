// Internal: Report's members that return ReportOptions or ReportSnapshot by value (report.hpp). A
// function that returns a class by value makes its translation unit define the class's destructor,
// which for these types instantiates the destructors of every vector and string in them; so they
// are out of line: header-only, report.hpp includes them; in the compiled mode
// (detail/compiled.hpp) src/nsightkit.cpp defines them once, in its enabled and disabled builds.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/report/entry.hpp>
#include <nsightkit/report.hpp>
#include <nsightkit/report_types.hpp>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

NSIGHTKIT_DETAIL_MEMBER ReportOptions Report::options() {
#if NSIGHTKIT_ENABLED
  return detail::report::entry::options();
#else
  return ReportOptions{};
#endif
}

NSIGHTKIT_DETAIL_MEMBER ReportSnapshot Report::snapshot() {
#if NSIGHTKIT_ENABLED
  return detail::report::entry::snapshot();
#else
  return ReportSnapshot{};
#endif
}

NSIGHTKIT_DETAIL_END_NAMESPACE
