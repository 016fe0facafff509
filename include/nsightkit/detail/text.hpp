// Internal: small text helpers shared by the parsers of environment variables
// (NSIGHTKIT_CAPTURE in capture.hpp, NSIGHTKIT_REPORT in report.hpp).
#pragma once

#include <nsightkit/config.hpp>

#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// Space, tab, newline or carriage return.
inline bool is_blank(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// `s` without leading and trailing blanks.
inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
