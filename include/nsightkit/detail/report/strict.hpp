// Internal: the report's strict mode — a configuration or output that is not as asked ends the
// process with a status that says so, instead of a message a batch job's log may hide.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/text.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Set by an enable() with ReportOptions::strict or NSIGHTKIT_REPORT_STRICT.
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<bool> strict_mode{false};

/// Whether NSIGHTKIT_REPORT_STRICT asks for the strict mode.
inline bool strict_from_environment() noexcept {
  char const* v = std::getenv("NSIGHTKIT_REPORT_STRICT");
  bool on = false;
  return v != nullptr && parse_switch(v, on) && on;
}

/// Strict mode and a bad configuration: the process ends now, with status 2.
[[noreturn]] inline void strict_exit(char const* why) noexcept {
  std::fprintf(stderr, "nsightkit report: strict mode: %s; exiting with status 2\n", why);
  std::fflush(nullptr);
  std::exit(2);
}

/// Whether a bad NSIGHTKIT_REPORT value asks for the strict mode itself (an item "strict" or
/// "strict=on" among the others).
inline bool spec_asks_strict(std::string_view spec) noexcept {
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    std::size_t const comma = spec.find(',', pos);
    std::string_view const item = trim(
        spec.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    pos = comma == std::string_view::npos ? spec.size() + 1 : comma + 1;
    if (item == "strict") return true;
    if (item.compare(0, 7, "strict=") == 0) {
      bool on = false;
      if (parse_switch(item.substr(7), on) && on) return true;
    }
  }
  return false;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
