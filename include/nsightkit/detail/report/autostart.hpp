// Internal: the start-up read of NSIGHTKIT_REPORT that including <nsightkit/report.hpp> brings —
// header-only a static initialiser here, compiled a reference that links libnsightkit's
// (src/nsightkit_startup.cpp). Nothing under NSIGHTKIT_DISABLE or NSIGHTKIT_REPORT_NO_AUTOSTART.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/report/entry.hpp>

#if NSIGHTKIT_ENABLED && !defined(NSIGHTKIT_REPORT_NO_AUTOSTART) && !NSIGHTKIT_DETAIL_COMPILED
NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {
// Reads NSIGHTKIT_REPORT once per process during static initialisation.
NSIGHTKIT_DETAIL_VISIBLE inline bool const report_autostarted = report::entry::autostart();
}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
#endif

#if NSIGHTKIT_ENABLED && !defined(NSIGHTKIT_REPORT_NO_AUTOSTART) && NSIGHTKIT_DETAIL_COMPILED
// Compiled, the start-up read is libnsightkit's (src/nsightkit_startup.cpp): this reference, which
// generates no code, links it into the program. There it runs after the engine's process-wide
// objects are made, which an initialiser here could not be sure of.
extern "C" NSIGHTKIT_DETAIL_VISIBLE int const nsightkit_detail_startup;
namespace nsightkit::detail {
#if defined(__GNUC__) || defined(__clang__)
[[maybe_unused]] __attribute__((used)) static int const* const report_startup_link =
    &nsightkit_detail_startup;
#else
[[maybe_unused]] static int const* const report_startup_link = &nsightkit_detail_startup;
#endif
}  // namespace nsightkit::detail
#endif
