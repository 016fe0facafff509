// Internal: what nsightkit's headers use of <functional> — std::function (hook and callback types),
// std::reference_wrapper and the std::hash primary template — and detail::invoke, std::invoke's
// rule for the callables instrument() wraps.
//
// Why not <functional> itself: with libstdc++ in C++17 it also brings the searchers
// (std::boyer_moore_searcher), and with them <unordered_map>, <vector>, <array> and the
// algorithms: measured with clang++ 14 and libstdc++ 12, a translation unit of the standard headers
// nsightkit's public types need costs 1666 million instructions with <functional> and 1411 with
// the header below, against 1304 for <nvtx3/nvtx3.hpp> alone (bench/RESULTS.md, compile cost).
// libstdc++ defines std::function, std::reference_wrapper and std::hash in internal headers of
// their own, which <functional> includes; they have kept those names since GCC 7. Where they are
// missing (another standard library, a future libstdc++), <functional> is included. Code that wants
// more of <functional> includes it itself, as it would have to anyway.
#pragma once

#include <nsightkit/config.hpp>

#include <type_traits>
#include <utility>

#if defined(__GLIBCXX__) && defined(__has_include)
#if __has_include(<bits/std_function.h>) && __has_include(<bits/refwrap.h>) && \
    __has_include(<bits/functional_hash.h>)
#define NSIGHTKIT_DETAIL_LIGHT_FUNCTIONAL 1
#endif
#endif

#if defined(NSIGHTKIT_DETAIL_LIGHT_FUNCTIONAL)
#include <bits/functional_hash.h>
#include <bits/refwrap.h>
#include <bits/std_function.h>
#undef NSIGHTKIT_DETAIL_LIGHT_FUNCTIONAL
#else
#include <functional>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

template <class T>
struct IsReferenceWrapper : std::false_type {};
template <class T>
struct IsReferenceWrapper<std::reference_wrapper<T>> : std::true_type {};

/// INVOKE(f, t, args...) for a pointer to member `f` ([func.require]): on an object of its class
/// (or a derived one), through a reference_wrapper, or through a pointer.
template <class M, class C, class T, class... A>
constexpr decltype(auto) invoke_member(M C::*f, T&& t, A&&... a) {
  using Object = std::remove_cv_t<std::remove_reference_t<T>>;
  if constexpr (std::is_function_v<M>) {
    if constexpr (std::is_base_of_v<C, Object>) {
      return (std::forward<T>(t).*f)(std::forward<A>(a)...);
    } else if constexpr (IsReferenceWrapper<Object>::value) {
      return (t.get().*f)(std::forward<A>(a)...);
    } else {
      return ((*std::forward<T>(t)).*f)(std::forward<A>(a)...);
    }
  } else {
    static_assert(sizeof...(A) == 0, "a pointer to data member takes the object alone");
    if constexpr (std::is_base_of_v<C, Object>) {
      return std::forward<T>(t).*f;
    } else if constexpr (IsReferenceWrapper<Object>::value) {
      return t.get().*f;
    } else {
      return (*std::forward<T>(t)).*f;
    }
  }
}

/// std::invoke (which only <functional> declares): calls `f` with `a...`, a pointer to member on
/// its first argument.
template <class F, class... A>
constexpr decltype(auto) invoke(F&& f, A&&... a) noexcept(std::is_nothrow_invocable_v<F, A...>) {
  if constexpr (std::is_member_pointer_v<std::decay_t<F>>) {
    return invoke_member(f, std::forward<A>(a)...);
  } else {
    return std::forward<F>(f)(std::forward<A>(a)...);
  }
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
