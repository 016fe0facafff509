// Internal: where nsightkit includes {fmt} (9 to 12), and what differs between versions.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>

// Header-only, the range and module headers format names in place and need {fmt}'s formatting
// engine (<fmt/format.h>); in the compiled mode (detail/compiled.hpp) names are formatted in
// src/nsightkit.cpp and these headers need only {fmt}'s argument and format-string types, from
// its light header (<fmt/base.h> in fmt 11 and later, where <fmt/core.h> includes the engine;
// <fmt/core.h> before). Code that formats includes detail/fmt_format.hpp.
#if NSIGHTKIT_DETAIL_COMPILED
#if __has_include(<fmt/base.h>)
#include <fmt/base.h>
#else
#include <fmt/core.h>
#endif
#else
#include <nsightkit/detail/fmt_format.hpp>
#endif

#include <type_traits>

// NSIGHTKIT_DETAIL_FMT_STRING(literal): the macros' compile-time format string, as FMT_STRING
// makes it (FMT_STRING itself is in <fmt/format.h>, which the compiled mode does not include): a
// value of a type derived from {fmt}'s compile_string marker that converts to the literal, which
// fmt::format_string checks against the arguments at compile time, in C++17 too. Before fmt 11
// format_string takes it through an implicit conversion; from fmt 11 through a constructor for
// compile_string types, next to which an implicit conversion would be ambiguous.
#if FMT_VERSION >= 110000
#define NSIGHTKIT_DETAIL_FMT_EXPLICIT explicit
#else
#define NSIGHTKIT_DETAIL_FMT_EXPLICIT
#endif
#define NSIGHTKIT_DETAIL_FMT_STRING(literal)                                                       \
  [] {                                                                                             \
    struct NSIGHTKIT_DETAIL_FORMAT_STRING : ::fmt::detail::compile_string {                        \
      using char_type [[maybe_unused]] = char;                                                     \
      constexpr NSIGHTKIT_DETAIL_FMT_EXPLICIT operator ::fmt::string_view() const {                \
        return ::fmt::string_view{literal, sizeof(literal) - 1};                                   \
      }                                                                                            \
    };                                                                                             \
    return NSIGHTKIT_DETAIL_FORMAT_STRING{};                                                       \
  }()

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

// A checked format string's text. fmt 10 and later have get() (fmt 12 deprecates the implicit
// conversion); fmt 9 has only the conversion.
template <class F>
constexpr auto format_text(F const& format, int) noexcept
    -> decltype(fmt::string_view{format.get()}) {
  return format.get();
}
template <class F>
constexpr fmt::string_view format_text(F const& format, long) noexcept {
  return format;
}
/// The text of a fmt::format_string, on every supported {fmt}.
template <class F>
constexpr fmt::string_view format_text(F const& format) noexcept {
  return format_text(format, 0);
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
