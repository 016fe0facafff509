// The NSIGHTKIT_REPORT start-up of a program that links libnsightkit: reads the variable once per
// process during static initialisation. Linked into the program by every translation unit that
// includes <nsightkit/report.hpp> in the compiled mode (a reference to the anchor below), and by
// CMake into every program and shared library that links nsightkit::nsightkit (the link option
// -u nsightkit_detail_startup, cmake/nsightkitLibrary.cmake), so that a program whose only ranges
// are raw NVTX calls reports too. NSIGHTKIT_REPORT_NO_AUTOSTART in every translation unit (on the
// CMake target) or NSIGHTKIT_DISABLE leaves it out.
#ifndef NSIGHTKIT_COMPILED
#define NSIGHTKIT_COMPILED 1
#endif
#define NSIGHTKIT_REPORT_NO_AUTOSTART 1  // this file is the start-up: no reference to itself

#include <nsightkit/config.hpp>

#if NSIGHTKIT_ENABLED
// First the engine: its process-wide objects (the report's state, counters, ...) are initialised
// here before the start-up below, so they outlive the at-exit writer it registers.
#include <nsightkit/detail/report/engine.hpp>
#include <nsightkit/detail/report/entry.hpp>

// The anchor the references and the link option name (C linkage: one name on every compiler).
extern "C" NSIGHTKIT_DETAIL_VISIBLE int const nsightkit_detail_startup;
extern "C" NSIGHTKIT_DETAIL_VISIBLE int const nsightkit_detail_startup = 1;

namespace {
[[maybe_unused]] bool const started = nsightkit::detail::report::entry::autostart();
}  // namespace
#endif
