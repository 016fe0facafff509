// Internal: the one place nsightkit includes {fmt} (9 to 12), and what differs between versions.
#pragma once

#include <nsightkit/config.hpp>

// fmt 9's inlined buffer code trips g++ 12's -Wstringop-overflow at -O3 (through nvcc too, where
// the include directory is not always a system one): a false positive inside {fmt}, silenced for
// {fmt}'s own lines only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
#include <fmt/format.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <type_traits>

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

/// The macros pass FMT_STRING(literal) as `S` and check it against the arguments inside, from a
/// fresh S. Where {fmt} checks with consteval (fmt 11 and later in C++20), FMT_STRING(s) is the
/// literal itself, which cannot be checked there: those calls take an overload whose parameter is
/// the fmt::format_string, checked at the call. True where the S form applies.
template <class S, class... As>
inline constexpr bool checks_compile_string = !std::is_array<S>::value || sizeof...(As) == 0;

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
