// Internal: the JSON writers every nsightkit output shares (the report's summary and trace):
// strings always valid (escaped, invalid UTF-8 replaced), times exact, payloads as numbers.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/text.hpp>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// Appends `s` as a JSON string literal: quotes, backslash and control characters escaped; bytes
/// that are not valid UTF-8 become U+FFFD, so the output is always valid JSON text.
inline void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    std::size_t const n = utf8_sequence(s, i);
    if (n == 0) {
      out += replacement_character;
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s.data() + i, n);
      i += n;
      continue;
    }
    auto const c = static_cast<unsigned char>(s[i++]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

/// Appends nanoseconds as microseconds with three decimals ("12.345"), exactly (no floating point).
inline void json_micros(std::string& out, std::int64_t ns) {
  std::uint64_t magnitude = static_cast<std::uint64_t>(ns);
  if (ns < 0) {
    out += '-';
    magnitude = 0u - magnitude;
  }
  fmt::format_to(std::back_inserter(out), "{}.{:03}", magnitude / 1000u, magnitude % 1000u);
}

/// Appends a payload as a JSON number (null for a NaN or infinite double: JSON has none).
inline void json_payload(std::string& out, Payload const& p) {
  switch (p.kind()) {
    case PayloadKind::int64: fmt::format_to(std::back_inserter(out), "{}", p.as_int64()); break;
    case PayloadKind::uint64: fmt::format_to(std::back_inserter(out), "{}", p.as_uint64()); break;
    case PayloadKind::floating:
      if (std::isfinite(p.as_double())) {
        fmt::format_to(std::back_inserter(out), "{}", p.as_double());
      } else {
        out += "null";
      }
      break;
    case PayloadKind::none: out += "null"; break;
  }
}

/// Appends `true` or `false`.
inline void json_bool(std::string& out, bool b) { out += b ? "true" : "false"; }

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
