/**
 * @file range.hpp
 * @brief RAII ranges, marks, thread and stream naming, and the range macros.
 *
 * @code
 * void train_step(int step) {
 *   NSIGHTKIT_FUNC_RANGE();                        // "train_step", registered once
 *   nsightkit::ScopedRange fwd{"forward"};         // static name: a registered NVTX string
 *   nsightkit::ScopedRange blk{"layer{}/conv{}", 3, 1};  // formatted only if someone listens
 *   NSIGHTKIT_RANGE("step {}", step);              // format checked at compile time (C++17 too)
 * }
 * @endcode
 *
 * Names. With no format arguments the string is the name verbatim. With arguments it is an
 * {fmt} format string, checked at compile time in C++20 and, through the macros, in C++17.
 * A formatted name is produced only when something listens: an NVTX tool handles pushes in this
 * linkage unit, or an in-process nsightkit consumer (the report) is enabled. Otherwise the
 * arguments are not formatted at all and the range costs a load and a branch.
 *
 * Threads. Push/pop ranges nest per thread and per domain; a ScopedRange must end on the thread
 * that began it (it cannot be moved or heap-allocated). For a range that ends elsewhere use
 * UniqueRange. Every function here may be called from any thread, and none throws: a name whose
 * formatting throws becomes "<nsightkit: name formatting failed>". Guides: docs/ranges.md.
 */
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/emit.hpp>
#include <nsightkit/detail/fmt.hpp>

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#if NSIGHTKIT_HAS_CUDA
#include <driver_types.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/**
 * @brief A push/pop range in domain D, alive for the enclosing scope (also on exceptions).
 *
 * @tparam D a domain tag (`static constexpr char const* name`), DefaultDomain or GlobalDomain.
 *
 * Not copyable, not movable, not heap-allocatable: it must end on its own thread in LIFO order.
 * Under `NSIGHTKIT_DISABLE` it is an empty class whose constructors do nothing.
 *
 * Thread safety: any thread may open ranges; each thread's ranges nest on their own.
 *
 * @code
 * struct Io { static constexpr char const* name{"io"}; };
 * nsightkit::ScopedRangeIn<Io> r{nsightkit::Color::rgb(0, 200, 0), "read {} bytes", n};
 * @endcode
 */
template <class D>
class ScopedRangeIn : private detail::ScopedEmit<D> {
  // Every constructor hands its name to the one implementation (detail/emit.hpp), which has an
  // enabled and a disabled definition: nothing here depends on NSIGHTKIT_DISABLE.
  using Base = detail::ScopedEmit<D>;

 public:
  /// A range with a fixed name (registered with the tool once per domain).
  /// @param name a string that outlives the call (a null pointer names it "").
  explicit ScopedRangeIn(char const* name) noexcept : Base{Attributes{}, name} {}

  /// A range with a fixed name and attributes.
  /// @param attributes color, category and payload of the range.
  /// @param name a string that outlives the call.
  ScopedRangeIn(Attributes const& attributes, char const* name) noexcept : Base{attributes, name} {}

  /// A range named by a run-time string (passed as a plain message, not registered).
  /// @param name the range name; copied by the tool, so it may die after the call.
  explicit ScopedRangeIn(std::string const& name) noexcept : Base{Attributes{}, name} {}

  /// A range named by a run-time string, with attributes.
  /// @param attributes color, category and payload of the range.
  /// @param name the range name (a plain message).
  ScopedRangeIn(Attributes const& attributes, std::string const& name) noexcept
      : Base{attributes, name} {}

  /// A range named by an {fmt} format string and its arguments, formatted only when someone
  /// listens.
  /// @param format the format string (checked at compile time in C++20).
  /// @param a0 first format argument.
  /// @param as further format arguments.
  template <class A0, class... As>
  explicit ScopedRangeIn(fmt::format_string<A0, As...> format, A0&& a0, As&&... as) noexcept
      : Base{Attributes{}, detail::format_text(format), a0, as...} {}

  /// A formatted range with attributes.
  /// @param attributes color, category and payload of the range.
  /// @param format the format string.
  /// @param a0 first format argument.
  /// @param as further format arguments.
  template <class A0, class... As>
  ScopedRangeIn(Attributes const& attributes, fmt::format_string<A0, As...> format, A0&& a0,
                As&&... as) noexcept
      : Base{attributes, detail::format_text(format), a0, as...} {}

  /// Used by NSIGHTKIT_FUNC_RANGE: a fixed name registered once for the call site.
  /// @param site the macro's call site.
  /// @param name `__func__`.
  template <class Site>
  ScopedRangeIn(detail::SiteTag<Site> site, char const* name) noexcept : Base{site, name} {}

  /// Used by NSIGHTKIT_RANGE: without arguments the literal is the name, registered once for
  /// the call site.
  /// @param site the macro's call site.
  /// @param checked the literal as a compile-time checked format string.
  /// @param literal the same text.
  /// @param as the format arguments, if any.
  template <class Site, class S, class... As>
  ScopedRangeIn(detail::SiteTag<Site> site, S const& checked, char const* literal,
                As&&... as) noexcept
      : Base{site, checked, literal, as...} {}

  ScopedRangeIn(ScopedRangeIn const&) = delete;
  ScopedRangeIn(ScopedRangeIn&&) = delete;
  ScopedRangeIn& operator=(ScopedRangeIn const&) = delete;
  ScopedRangeIn& operator=(ScopedRangeIn&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;
};

/// A push/pop range in nsightkit's default domain ("nsightkit").
using ScopedRange = ScopedRangeIn<DefaultDomain>;

/**
 * @brief A start/end range in domain D: movable, may end on another thread or outlive a scope.
 *
 * Ends on end() or on destruction, whichever comes first. Costs a little more than a
 * ScopedRangeIn; prefer that one for scopes. Under `NSIGHTKIT_DISABLE` it is an empty class.
 *
 * Thread safety: it may begin on one thread and end on another, but one object must not be used
 * by two threads at once.
 *
 * @code
 * nsightkit::UniqueRange window{"capture window"};
 * ...                        // many steps, other threads
 * window.end();
 * @endcode
 */
template <class D>
class UniqueRangeIn : private detail::UniqueEmit<D> {
  using Base = detail::UniqueEmit<D>;

 public:
  /// A started range with a fixed name.
  /// @param name a string that outlives the call (a null pointer names it "").
  explicit UniqueRangeIn(char const* name) noexcept : Base{Attributes{}, name} {}

  /// A started range with a fixed name and attributes.
  /// @param attributes color, category and payload of the range.
  /// @param name a string that outlives the call.
  UniqueRangeIn(Attributes const& attributes, char const* name) noexcept : Base{attributes, name} {}

  /// A started range named by a run-time string.
  /// @param name the range name (a plain message).
  explicit UniqueRangeIn(std::string const& name) noexcept : Base{Attributes{}, name} {}

  /// A started range named by a run-time string, with attributes.
  /// @param attributes color, category and payload of the range.
  /// @param name the range name (a plain message).
  UniqueRangeIn(Attributes const& attributes, std::string const& name) noexcept
      : Base{attributes, name} {}

  /// A started range with a formatted name.
  /// @param format the format string.
  /// @param a0 first format argument.
  /// @param as further format arguments.
  template <class A0, class... As>
  explicit UniqueRangeIn(fmt::format_string<A0, As...> format, A0&& a0, As&&... as) noexcept
      : Base{Attributes{}, detail::format_text(format), a0, as...} {}

  /// A started range with attributes and a formatted name.
  /// @param attributes color, category and payload of the range.
  /// @param format the format string.
  /// @param a0 first format argument.
  /// @param as further format arguments.
  template <class A0, class... As>
  UniqueRangeIn(Attributes const& attributes, fmt::format_string<A0, As...> format, A0&& a0,
                As&&... as) noexcept
      : Base{attributes, detail::format_text(format), a0, as...} {}

  /// Takes over `other`'s range; `other` no longer ends anything.
  /// @param other the range to take over.
  UniqueRangeIn(UniqueRangeIn&& other) noexcept = default;

  /// Ends this range, then takes over `other`'s.
  /// @param other the range to take over.
  /// @return `*this`.
  UniqueRangeIn& operator=(UniqueRangeIn&& other) noexcept = default;

  UniqueRangeIn(UniqueRangeIn const&) = delete;
  UniqueRangeIn& operator=(UniqueRangeIn const&) = delete;

  /// Ends the range now; later calls and the destructor do nothing.
  void end() noexcept { Base::end(); }
};

/// A start/end range in nsightkit's default domain.
using UniqueRange = UniqueRangeIn<DefaultDomain>;

/// An instantaneous marker with a fixed name in domain D.
/// @param name a string that outlives the call.
template <class D>
inline void mark_in(char const* name) noexcept {
  (void)detail::emit_name<D, detail::Op::mark>(Attributes{}, name);
}

/// A marker with attributes and a fixed name in domain D.
/// @param attributes color, category and payload of the marker.
/// @param name a string that outlives the call.
template <class D>
inline void mark_in(Attributes const& attributes, char const* name) noexcept {
  (void)detail::emit_name<D, detail::Op::mark>(attributes, name);
}

/// A marker with a formatted name in domain D.
/// @param format the format string.
/// @param a0 first format argument.
/// @param as further format arguments.
template <class D, class A0, class... As>
inline void mark_in(fmt::format_string<A0, As...> format, A0&& a0, As&&... as) noexcept {
  (void)detail::emit_formatted<D, detail::Op::mark>(Attributes{}, detail::format_text(format), a0,
                                                    as...);
}

/// A marker with attributes and a formatted name in domain D.
/// @param attributes color, category and payload of the marker.
/// @param format the format string.
/// @param a0 first format argument.
/// @param as further format arguments.
template <class D, class A0, class... As>
inline void mark_in(Attributes const& attributes, fmt::format_string<A0, As...> format, A0&& a0,
                    As&&... as) noexcept {
  (void)detail::emit_formatted<D, detail::Op::mark>(attributes, detail::format_text(format), a0,
                                                    as...);
}

/// A marker with a fixed name in the default domain.
/// @param name a string that outlives the call.
inline void mark(char const* name) noexcept { mark_in<DefaultDomain>(name); }

/// A marker with attributes and a fixed name in the default domain.
/// @param attributes color, category and payload of the marker.
/// @param name a string that outlives the call.
inline void mark(Attributes const& attributes, char const* name) noexcept {
  mark_in<DefaultDomain>(attributes, name);
}

/// A marker with a formatted name in the default domain.
/// @param format the format string.
/// @param a0 first format argument.
/// @param as further format arguments.
template <class A0, class... As>
inline void mark(fmt::format_string<A0, As...> format, A0&& a0, As&&... as) noexcept {
  mark_in<DefaultDomain>(format, std::forward<A0>(a0), std::forward<As>(as)...);
}

/// Names the calling OS thread in the tools' timeline (and in nsightkit's report).
/// @param name the thread's name (null: ignored).
inline void name_current_thread(char const* name) noexcept { detail::emit_thread_name(name); }

/// Names the calling OS thread.
/// @param name the thread's name.
inline void name_current_thread(std::string const& name) noexcept {
  name_current_thread(name.c_str());
}

#if NSIGHTKIT_HAS_CUDA || defined(NSIGHTKIT_DOXYGEN)
/// Names a CUDA stream in the tools' timeline (rows of Nsight Systems, ncu's --kernel-id).
/// @param stream the stream.
/// @param name its name (null: ignored).
inline void name_stream(cudaStream_t stream, char const* name) noexcept {
  detail::emit_stream_name(stream, name);
}

/// Names a CUDA device (by ordinal) in the tools' timeline.
/// @param device the device ordinal.
/// @param name its name (null: ignored).
inline void name_cuda_device(int device, char const* name) noexcept {
  detail::emit_device_name(device, name);
}
#endif

NSIGHTKIT_DETAIL_END_NAMESPACE

#define NSIGHTKIT_DETAIL_FIRST_(first, ...) first
#define NSIGHTKIT_DETAIL_FIRST(...) NSIGHTKIT_DETAIL_FIRST_(__VA_ARGS__, ~)

#if NSIGHTKIT_ENABLED
/**
 * @brief A scoped range in the default domain: `NSIGHTKIT_RANGE("step {}", i);`.
 *
 * The first argument must be a string literal; with more arguments it is a format string checked
 * at compile time (also in C++17). Several may share one scope. Under `NSIGHTKIT_DISABLE` it
 * expands to nothing and its arguments are not evaluated.
 */
#define NSIGHTKIT_RANGE(...) NSIGHTKIT_RANGE_IN(::nsightkit::DefaultDomain, __VA_ARGS__)
/// NSIGHTKIT_RANGE in domain D.
#define NSIGHTKIT_RANGE_IN(D, ...)                                                                 \
  ::nsightkit::ScopedRangeIn<D> const NSIGHTKIT_DETAIL_UNIQUE(nsightkit_range_) {                  \
    ::nsightkit::detail::make_site([] {}),                                                         \
        NSIGHTKIT_DETAIL_FMT_STRING(NSIGHTKIT_DETAIL_FIRST(__VA_ARGS__)), __VA_ARGS__              \
  }
/// A scoped range named after the enclosing function (`__func__`), registered once per function.
#define NSIGHTKIT_FUNC_RANGE() NSIGHTKIT_FUNC_RANGE_IN(::nsightkit::DefaultDomain)
/// NSIGHTKIT_FUNC_RANGE in domain D.
#define NSIGHTKIT_FUNC_RANGE_IN(D)                                                                 \
  ::nsightkit::ScopedRangeIn<D> const NSIGHTKIT_DETAIL_UNIQUE(nsightkit_func_range_) {             \
    ::nsightkit::detail::make_site([] {}), static_cast<char const*>(__func__)                      \
  }
#else
#define NSIGHTKIT_RANGE(...) static_cast<void>(0)
#define NSIGHTKIT_RANGE_IN(D, ...) static_cast<void>(0)
#define NSIGHTKIT_FUNC_RANGE() static_cast<void>(0)
#define NSIGHTKIT_FUNC_RANGE_IN(D) static_cast<void>(0)
#endif
