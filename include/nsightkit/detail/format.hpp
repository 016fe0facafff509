// Internal: human-readable quantities for tables and messages (durations, percentiles).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>

#include <cstdint>
#include <string>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// "812 ns", "3.25 us", "12.3 ms", "1.23 s": three significant digits.
inline std::string format_duration(std::int64_t ns) {
  double const v = static_cast<double>(ns);
  auto three = [](double x, char const* unit) {
    if (x < 9.995) return fmt::format("{:.2f} {}", x, unit);
    if (x < 99.95) return fmt::format("{:.1f} {}", x, unit);
    return fmt::format("{:.0f} {}", x, unit);
  };
  if (ns < 1000 && ns > -1000) return fmt::format("{} ns", ns);
  if (v < 999.5e3) return three(v / 1e3, "us");
  if (v < 999.5e6) return three(v / 1e6, "ms");
  return three(v / 1e9, "s");
}

/// A percentile: "~" marks one read from a histogram rather than the exact samples.
inline std::string format_percentile(std::int64_t ns, bool exact) {
  return exact ? format_duration(ns) : "~" + format_duration(ns);
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
