// Internal: small text rules shared by every part of nsightkit that reads or writes text — the
// parsers of environment variables (NSIGHTKIT_CAPTURE, NSIGHTKIT_REPORT, …), the words that
// switch a feature on or off, how a user's value is quoted in a message, and how names are made
// safe for a terminal table or a CSV file (valid UTF-8, no control characters).
#pragma once

#include <nsightkit/config.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
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

/// ASCII case-insensitive equality with a lower-case `word`.
inline bool equals_word(std::string_view s, std::string_view word) noexcept {
  if (s.size() != word.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != word[i]) return false;
  }
  return true;
}

/// The one rule for the words that switch a feature off, in every NSIGHTKIT_* variable and switch:
/// "0", "off", "none", "false", "no", in any case, blanks around ignored.
inline bool is_off_word(std::string_view s) noexcept {
  s = trim(s);
  return s == "0" || equals_word(s, "off") || equals_word(s, "none") || equals_word(s, "false") ||
         equals_word(s, "no");
}

/// The words that switch a feature on: "1", "on", "true", "yes", in any case.
inline bool is_on_word(std::string_view s) noexcept {
  s = trim(s);
  return s == "1" || equals_word(s, "on") || equals_word(s, "true") || equals_word(s, "yes");
}

/// Parses an on/off switch value by the rules above; false when `s` is neither.
inline bool parse_switch(std::string_view s, bool& out) noexcept {
  if (is_on_word(s)) {
    out = true;
    return true;
  }
  if (is_off_word(s)) {
    out = false;
    return true;
  }
  return false;
}

/// Parses an unsigned decimal integer in [min, max]; false on anything else.
inline bool parse_count(std::string_view s, std::uint64_t min, std::uint64_t max,
                        std::uint64_t& out) noexcept {
  if (s.empty()) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    auto const digit = static_cast<std::uint64_t>(c - '0');
    if (v > (~std::uint64_t{0} - digit) / 10u) return false;
    v = v * 10u + digit;
  }
  if (v < min || v > max) return false;
  out = v;
  return true;
}

/// The length of the valid UTF-8 sequence at s[i] (1-4), or 0 when the bytes there are not one
/// (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
  auto const byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char const c = byte(i);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  }
  if (len == 0 || i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    unsigned const b = byte(i + k);
    if (b < (k == 1 ? lo : 0x80u) || b > (k == 1 ? hi : 0xBFu)) return 0;
  }
  return len;
}

/// U+FFFD, what an invalid byte becomes.
inline constexpr char const replacement_character[] = "\xEF\xBF\xBD";

/// `s` as valid UTF-8: every byte that does not start a valid sequence becomes U+FFFD.
inline std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t const n = utf8_sequence(s, i);
    if (n == 0) {
      out += replacement_character;
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

/// `s` made safe for one line of a terminal table: valid UTF-8 (invalid bytes become U+FFFD) and
/// control characters (C0, DEL, C1) shown as escapes ("\n", "\x1b", "\u0085") so a name can
/// neither split a row nor send the terminal an escape sequence.
inline std::string printable(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t const n = utf8_sequence(s, i);
    auto const c = static_cast<unsigned char>(s[i]);
    if (n == 0) {
      out += replacement_character;
      ++i;
      continue;
    }
    if (n == 1 && (c < 0x20 || c == 0x7F)) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 0xF];
      }
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
      auto const cp = static_cast<unsigned char>(s[i + 1]);  // C1 control U+0080..U+009F
      out += "\\u00";
      out += hex[cp >> 4];
      out += hex[cp & 0xF];
    } else {
      out.append(s.data() + i, n);
    }
    i += n;
  }
  return out;
}

/// Number of code points in valid UTF-8 `s` (what a terminal shows as columns for the scripts
/// range names use; wide East Asian characters count one, which keeps rows aligned by code point).
inline std::size_t code_points(std::string_view s) noexcept {
  std::size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0u) != 0x80u) ++n;
  }
  return n;
}

/// The longest prefix of valid UTF-8 `s` holding at most `max` code points (never cuts one).
inline std::string_view prefix_code_points(std::string_view s, std::size_t max) noexcept {
  std::size_t count = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0u) != 0x80u) {
      if (count == max) return s.substr(0, i);
      ++count;
    }
  }
  return s;
}

/// A user's value quoted for a message: 'value', cut to its first 80 code points with the full
/// length named when longer, and made printable. A message never echoes a huge value whole.
inline std::string quote_value(std::string_view s) {
  static constexpr std::size_t shown = 80;
  std::string const p = printable(s);
  std::string out{"'"};
  if (code_points(p) <= shown) {
    out += p;
    out += '\'';
    return out;
  }
  out += prefix_code_points(p, shown);
  out += "...' (";
  out += std::to_string(s.size());
  out += " bytes)";
  return out;
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
