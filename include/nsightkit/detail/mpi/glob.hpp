// Internal: glob patterns as shell wildcards match names ('*', '?', '[seq]', '[!seq]', as Python's
// fnmatch.fnmatchcase does; '*' also matches '/'): the patterns that mark collectives in the
// merged report, and `nsightkit stats --filter`. With the ASCII lower-casing the merge applies to
// names and patterns. Pure C++.
#pragma once

#include <nsightkit/config.hpp>

#include <cstddef>
#include <string>
#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::mpi {

/// Whether `text` matches `pattern` as a whole: '*', '?', '[seq]', '[!seq]' (a '[' without ']'
/// is itself).
inline bool glob_match(std::string_view text, std::string_view pattern) {
  std::size_t t = 0, p = 0, star_p = std::string_view::npos, star_t = 0;
  auto one = [&](std::size_t pi, char c, std::size_t& width) {
    char const pc = pattern[pi];
    width = 1;
    if (pc == '?') return true;
    if (pc != '[') return pc == c;
    std::size_t j = pi + 1;
    bool negate = false;
    if (j < pattern.size() && pattern[j] == '!') {
      negate = true;
      ++j;
    }
    if (j < pattern.size() && pattern[j] == ']') ++j;  // a ']' first is part of the set
    while (j < pattern.size() && pattern[j] != ']') ++j;
    if (j >= pattern.size()) return c == '[';  // no closing ']': a literal '['
    width = j + 1 - pi;
    std::size_t k = pi + 1 + (negate ? 1 : 0);
    bool in = false;
    for (std::size_t first = k; k < j; ++k) {
      if (k + 2 < j && pattern[k + 1] == '-') {
        if (pattern[k] <= c && c <= pattern[k + 2]) in = true;
        k += 2;
      } else if (pattern[k] == c || (k == first && pattern[k] == ']' && c == ']')) {
        in = true;
      }
    }
    return in != negate;
  };
  while (t < text.size()) {
    std::size_t width = 1;
    if (p < pattern.size() && pattern[p] == '*') {
      star_p = p++;
      star_t = t;
    } else if (p < pattern.size() && one(p, text[t], width)) {
      p += width;
      ++t;
    } else if (star_p != std::string_view::npos) {
      p = star_p + 1;
      t = ++star_t;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

inline std::string ascii_lower(std::string_view s) {
  std::string out{s};
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace detail::mpi
NSIGHTKIT_DETAIL_END_NAMESPACE
