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
 * UniqueRange.
 */
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#if NSIGHTKIT_HAS_CUDA
#include <driver_types.h>
#endif

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/nvtx.hpp>
#include <nsightkit/detail/sinks.hpp>
#include <nsightkit/detail/thread.hpp>
#if NSIGHTKIT_HAS_CUDA
#include <nvtx3/nvToolsExtCudaRt.h>
#endif
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// Identifies one macro call site (a distinct lambda type per site) for per-site statics.
template <class Site>
struct SiteTag {};

template <class Site>
constexpr SiteTag<Site> make_site(Site) noexcept {
  return {};
}

#if NSIGHTKIT_ENABLED

enum class Op { push, start, mark };

/// What an emission reached, so the end of the range goes to the same places.
struct Emitted {
  bool nvtx{false};
  bool sinks{false};
  nvtxRangeId_t nvtx_id{0};
  std::uint64_t sink_id{0};
};

/// Emits one event to NVTX (if a tool listens) and to nsightkit's sinks (if any).
/// `handle()` yields the registered string for `text`, or null for a plain message; it is
/// called only when a tool listens.
template <class D, Op op, class HandleFn>
inline Emitted emit(Attributes const& a, char const* text, std::size_t len,
                    HandleFn&& handle) noexcept {
  Emitted r;
  if (nvtx_listening<D>()) {
    nvtxEventAttributes_t e = event_attributes<D>(a);
    set_message(e, handle(), text);
    if constexpr (op == Op::push) {
      nvtxDomainRangePushEx(domain_handle<D>(), &e);
    } else if constexpr (op == Op::start) {
      r.nvtx_id = nvtxDomainRangeStartEx(domain_handle<D>(), &e);
    } else {
      nvtxDomainMarkEx(domain_handle<D>(), &e);
    }
    r.nvtx = true;
  }
  if (sinks_active()) {
    RangeBegin const b{
        D::name, std::string_view{text, len == std::size_t(-1) ? std::strlen(text) : len}, &a};
    if constexpr (op == Op::push) {
      for_each_sink([&](RangeSink& s) { s.on_push(b); });
    } else if constexpr (op == Op::start) {
      r.sink_id = next_sink_range_id();
      for_each_sink([&](RangeSink& s) { s.on_start(r.sink_id, b); });
    } else {
      for_each_sink([&](RangeSink& s) { s.on_mark(b); });
    }
    r.sinks = true;
  }
  return r;
}

/// True when an emission would reach anyone: an NVTX tool or an nsightkit sink. The fast path.
template <class D>
inline bool should_emit() noexcept {
  return nvtx_listening<D>() || sinks_active();
}

/// A name known to outlive the call: registered once per domain and content.
template <class D, Op op>
NSIGHTKIT_DETAIL_NOINLINE inline Emitted emit_static(Attributes const& a,
                                                     char const* text) noexcept {
  if (text == nullptr) text = "";
  return emit<D, op>(a, text, std::size_t(-1), [text] { return registered_string<D>(text); });
}

/// A name at a macro call site: registered once for the site.
template <class D, Op op, class Site>
NSIGHTKIT_DETAIL_NOINLINE inline Emitted emit_site(Attributes const& a, char const* text) noexcept {
  return emit<D, op>(a, text, std::size_t(-1), [text] {
    static nvtxStringHandle_t const h = nvtxDomainRegisterStringA(domain_handle<D>(), text);
    return h;
  });
}

/// A name built at run time: passed as a plain message, never registered.
template <class D, Op op>
inline Emitted emit_dynamic(Attributes const& a, char const* text, std::size_t len) noexcept {
  return emit<D, op>(a, text, len, [] { return nvtxStringHandle_t{nullptr}; });
}

/// Formats into `buf` (NUL-terminated). A failing formatter yields a placeholder name instead of
/// an exception: instrumentation never throws.
template <class... Args>
inline void format_name(fmt::memory_buffer& buf, fmt::string_view f, Args&... args) noexcept {
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    fmt::vformat_to(fmt::appender(buf), f, fmt::make_format_args(args...));
    buf.push_back('\0');
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
    static constexpr char fallback[] = "<nsightkit: name formatting failed>";
    buf.clear();
    try {
      buf.append(fallback, fallback + sizeof fallback);
    } catch (...) {
      buf.clear();
    }
  }
#endif
}

/// Formats the name, then emits it (call only when should_emit<D>()).
template <class D, Op op, class... Args>
NSIGHTKIT_DETAIL_NOINLINE inline Emitted emit_formatted_slow(Attributes const& a,
                                                             fmt::string_view f,
                                                             Args&... args) noexcept {
  fmt::memory_buffer buf;
  format_name(buf, f, args...);
  if (buf.size() == 0) return {};
  return emit_dynamic<D, op>(a, buf.data(), buf.size() - 1);
}

/// Formats the name only when something listens, then emits it.
template <class D, Op op, class... Args>
inline Emitted emit_formatted(Attributes const& a, fmt::string_view f, Args&... args) noexcept {
  if (!should_emit<D>()) return {};
  return emit_formatted_slow<D, op>(a, f, args...);
}

template <class D>
NSIGHTKIT_DETAIL_NOINLINE inline void end_push(Emitted const& e) noexcept {
  if (e.nvtx) nvtxDomainRangePop(domain_handle<D>());
  if (e.sinks) for_each_sink([](RangeSink& s) { s.on_pop(D::name); });
}

template <class D>
NSIGHTKIT_DETAIL_NOINLINE inline void end_start(Emitted const& e) noexcept {
  if (e.nvtx) nvtxDomainRangeEnd(domain_handle<D>(), e.nvtx_id);
  if (e.sinks) for_each_sink([&](RangeSink& s) { s.on_end(e.sink_id); });
}

#endif  // NSIGHTKIT_ENABLED

}  // namespace detail

/**
 * @brief A push/pop range in domain D, alive for the enclosing scope (also on exceptions).
 *
 * @tparam D a domain tag (`static constexpr char const* name`), DefaultDomain or GlobalDomain.
 *
 * Not copyable, not movable, not heap-allocatable: it must end on its own thread in LIFO order.
 * Under `NSIGHTKIT_DISABLE` it is an empty class whose constructors do nothing.
 *
 * @code
 * struct Io { static constexpr char const* name{"io"}; };
 * nsightkit::ScopedRangeIn<Io> r{nsightkit::Color::rgb(0, 200, 0), "read {} bytes", n};
 * @endcode
 */
template <class D>
class ScopedRangeIn {
 public:
  /// A range with a fixed name (registered with the tool once per domain).
  explicit ScopedRangeIn(char const* name) noexcept {
#if NSIGHTKIT_ENABLED
    if (detail::should_emit<D>())
      keep(detail::emit_static<D, detail::Op::push>(Attributes{}, name));
#else
    (void)name;
#endif
  }

  /// A range with a fixed name and attributes.
  ScopedRangeIn(Attributes const& attributes, char const* name) noexcept {
#if NSIGHTKIT_ENABLED
    if (detail::should_emit<D>()) keep(detail::emit_static<D, detail::Op::push>(attributes, name));
#else
    (void)attributes;
    (void)name;
#endif
  }

  /// A range named by a run-time string (passed as a plain message, not registered).
  explicit ScopedRangeIn(std::string const& name) noexcept : ScopedRangeIn(Attributes{}, name) {}

  /// A range named by a run-time string, with attributes.
  ScopedRangeIn(Attributes const& attributes, std::string const& name) noexcept {
#if NSIGHTKIT_ENABLED
    if (detail::should_emit<D>()) {
      keep(detail::emit_dynamic<D, detail::Op::push>(attributes, name.c_str(), name.size()));
    }
#else
    (void)attributes;
    (void)name;
#endif
  }

  /// A range named by an {fmt} format string and its arguments.
  template <class A0, class... As>
  explicit ScopedRangeIn(fmt::format_string<A0, As...> format, A0&& a0, As&&... as) noexcept {
#if NSIGHTKIT_ENABLED
    if (detail::should_emit<D>()) {
      keep(detail::emit_formatted_slow<D, detail::Op::push>(Attributes{}, format, a0, as...));
    }
#else
    (void)format;
    ((void)a0, ..., (void)as);
#endif
  }

  /// A formatted range with attributes.
  template <class A0, class... As>
  ScopedRangeIn(Attributes const& attributes, fmt::format_string<A0, As...> format, A0&& a0,
                As&&... as) noexcept {
#if NSIGHTKIT_ENABLED
    keep(detail::emit_formatted<D, detail::Op::push>(attributes, format, a0, as...));
#else
    (void)attributes;
    (void)format;
    ((void)a0, ..., (void)as);
#endif
  }

  /// Used by NSIGHTKIT_FUNC_RANGE: a fixed name registered once for the call site.
  template <class Site>
  ScopedRangeIn(detail::SiteTag<Site>, char const* name) noexcept {
#if NSIGHTKIT_ENABLED
    if (detail::should_emit<D>())
      keep(detail::emit_site<D, detail::Op::push, Site>(Attributes{}, name));
#else
    (void)name;
#endif
  }

  /// Used by NSIGHTKIT_RANGE: `checked` is the compile-time format string, `literal` the same
  /// text; without arguments it is the name verbatim, registered once for the call site.
  template <class Site, class S, class... As>
  ScopedRangeIn(detail::SiteTag<Site> site, S const& checked, char const* literal,
                As&&... as) noexcept {
    if constexpr (sizeof...(As) == 0) {
      (void)checked;
#if NSIGHTKIT_ENABLED
      (void)site;
      if (detail::should_emit<D>()) {
        keep(detail::emit_site<D, detail::Op::push, Site>(Attributes{}, literal));
      }
#else
      (void)site;
      (void)literal;
#endif
    } else {
      fmt::format_string<As...> const format{checked};  // compile-time check in C++17 too
      (void)site;
      (void)literal;
#if NSIGHTKIT_ENABLED
      if (detail::should_emit<D>()) {
        keep(detail::emit_formatted_slow<D, detail::Op::push>(Attributes{}, format, as...));
      }
#else
      (void)format;
      ((void)as, ...);
#endif
    }
  }

  ScopedRangeIn(ScopedRangeIn const&) = delete;
  ScopedRangeIn(ScopedRangeIn&&) = delete;
  ScopedRangeIn& operator=(ScopedRangeIn const&) = delete;
  ScopedRangeIn& operator=(ScopedRangeIn&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;

#if NSIGHTKIT_ENABLED
  /// Pops the range from wherever it was pushed.
  ~ScopedRangeIn() noexcept {
    if (reached_ != 0) {
      detail::Emitted e;
      e.nvtx = (reached_ & 1u) != 0;
      e.sinks = (reached_ & 2u) != 0;
      detail::end_push<D>(e);
    }
  }

 private:
  void keep(detail::Emitted const& e) noexcept {
    reached_ = static_cast<std::uint8_t>((e.nvtx ? 1u : 0u) | (e.sinks ? 2u : 0u));
  }
  std::uint8_t reached_{0};  // bit 0: NVTX push made; bit 1: sinks notified
#endif
};

/// A push/pop range in nsightkit's default domain ("nsightkit").
using ScopedRange = ScopedRangeIn<DefaultDomain>;

/**
 * @brief A start/end range in domain D: movable, may end on another thread or outlive a scope.
 *
 * Ends on end() or on destruction, whichever comes first. Costs a little more than a
 * ScopedRangeIn; prefer that one for scopes.
 *
 * @code
 * nsightkit::UniqueRange window{"capture window"};
 * ...                        // many steps, other threads
 * window.end();
 * @endcode
 */
template <class D>
class UniqueRangeIn {
 public:
  /// A started range with a fixed name.
  explicit UniqueRangeIn(char const* name) noexcept {
#if NSIGHTKIT_ENABLED
    if (detail::should_emit<D>())
      emitted_ = detail::emit_static<D, detail::Op::start>(Attributes{}, name);
#else
    (void)name;
#endif
  }

  /// A started range with a fixed name and attributes.
  UniqueRangeIn(Attributes const& attributes, char const* name) noexcept {
#if NSIGHTKIT_ENABLED
    if (detail::should_emit<D>())
      emitted_ = detail::emit_static<D, detail::Op::start>(attributes, name);
#else
    (void)attributes;
    (void)name;
#endif
  }

  /// A started range named by a run-time string.
  explicit UniqueRangeIn(std::string const& name) noexcept : UniqueRangeIn(Attributes{}, name) {}

  /// A started range named by a run-time string, with attributes.
  UniqueRangeIn(Attributes const& attributes, std::string const& name) noexcept {
#if NSIGHTKIT_ENABLED
    if (detail::should_emit<D>()) {
      emitted_ = detail::emit_dynamic<D, detail::Op::start>(attributes, name.c_str(), name.size());
    }
#else
    (void)attributes;
    (void)name;
#endif
  }

  /// A started range with a formatted name.
  template <class A0, class... As>
  explicit UniqueRangeIn(fmt::format_string<A0, As...> format, A0&& a0, As&&... as) noexcept {
#if NSIGHTKIT_ENABLED
    if (detail::should_emit<D>()) {
      emitted_ = detail::emit_formatted_slow<D, detail::Op::start>(Attributes{}, format, a0, as...);
    }
#else
    (void)format;
    ((void)a0, ..., (void)as);
#endif
  }

  /// A started range with attributes and a formatted name.
  template <class A0, class... As>
  UniqueRangeIn(Attributes const& attributes, fmt::format_string<A0, As...> format, A0&& a0,
                As&&... as) noexcept {
#if NSIGHTKIT_ENABLED
    emitted_ = detail::emit_formatted<D, detail::Op::start>(attributes, format, a0, as...);
#else
    (void)attributes;
    (void)format;
    ((void)a0, ..., (void)as);
#endif
  }

  /// Takes over `other`'s range; `other` no longer ends anything.
  UniqueRangeIn(UniqueRangeIn&& other) noexcept {
#if NSIGHTKIT_ENABLED
    emitted_ = std::exchange(other.emitted_, detail::Emitted{});
#else
    (void)other;
#endif
  }

  /// Ends this range, then takes over `other`'s.
  UniqueRangeIn& operator=(UniqueRangeIn&& other) noexcept {
#if NSIGHTKIT_ENABLED
    if (this != &other) {
      end();
      emitted_ = std::exchange(other.emitted_, detail::Emitted{});
    }
#else
    (void)other;
#endif
    return *this;
  }

  UniqueRangeIn(UniqueRangeIn const&) = delete;
  UniqueRangeIn& operator=(UniqueRangeIn const&) = delete;

  /// Ends the range now; later calls and the destructor do nothing.
  void end() noexcept {
#if NSIGHTKIT_ENABLED
    if (emitted_.nvtx || emitted_.sinks)
      detail::end_start<D>(std::exchange(emitted_, detail::Emitted{}));
#endif
  }

  ~UniqueRangeIn() noexcept { end(); }

#if NSIGHTKIT_ENABLED
 private:
  detail::Emitted emitted_{};
#endif
};

/// A start/end range in nsightkit's default domain.
using UniqueRange = UniqueRangeIn<DefaultDomain>;

/// An instantaneous marker with a fixed name in domain D.
template <class D>
inline void mark_in(char const* name) noexcept {
#if NSIGHTKIT_ENABLED
  if (detail::should_emit<D>()) (void)detail::emit_static<D, detail::Op::mark>(Attributes{}, name);
#else
  (void)name;
#endif
}

/// A marker with attributes and a fixed name in domain D.
template <class D>
inline void mark_in(Attributes const& attributes, char const* name) noexcept {
#if NSIGHTKIT_ENABLED
  if (detail::should_emit<D>()) (void)detail::emit_static<D, detail::Op::mark>(attributes, name);
#else
  (void)attributes;
  (void)name;
#endif
}

/// A marker with a formatted name in domain D.
template <class D, class A0, class... As>
inline void mark_in(fmt::format_string<A0, As...> format, A0&& a0, As&&... as) noexcept {
#if NSIGHTKIT_ENABLED
  if (detail::should_emit<D>()) {
    (void)detail::emit_formatted_slow<D, detail::Op::mark>(Attributes{}, format, a0, as...);
  }
#else
  (void)format;
  ((void)a0, ..., (void)as);
#endif
}

/// A marker with attributes and a formatted name in domain D.
template <class D, class A0, class... As>
inline void mark_in(Attributes const& attributes, fmt::format_string<A0, As...> format, A0&& a0,
                    As&&... as) noexcept {
#if NSIGHTKIT_ENABLED
  (void)detail::emit_formatted<D, detail::Op::mark>(attributes, format, a0, as...);
#else
  (void)attributes;
  (void)format;
  ((void)a0, ..., (void)as);
#endif
}

/// A marker with a fixed name in the default domain.
inline void mark(char const* name) noexcept { mark_in<DefaultDomain>(name); }

/// A marker with attributes and a fixed name in the default domain.
inline void mark(Attributes const& attributes, char const* name) noexcept {
  mark_in<DefaultDomain>(attributes, name);
}

/// A marker with a formatted name in the default domain.
template <class A0, class... As>
inline void mark(fmt::format_string<A0, As...> format, A0&& a0, As&&... as) noexcept {
  mark_in<DefaultDomain>(format, std::forward<A0>(a0), std::forward<As>(as)...);
}

/// Names the calling OS thread in the tools' timeline (and in nsightkit's report).
inline void name_current_thread(char const* name) noexcept {
#if NSIGHTKIT_ENABLED
  if (name == nullptr) return;
  if (detail::nvtx_listening<GlobalDomain>()) nvtxNameOsThreadA(detail::os_thread_id(), name);
  if (detail::sinks_active()) {
    detail::for_each_sink([name](detail::RangeSink& s) { s.on_thread_name(name); });
  }
#else
  (void)name;
#endif
}

/// Names the calling OS thread.
inline void name_current_thread(std::string const& name) noexcept {
  name_current_thread(name.c_str());
}

#if NSIGHTKIT_HAS_CUDA || defined(NSIGHTKIT_DOXYGEN)
/// Names a CUDA stream in the tools' timeline (rows of Nsight Systems, ncu's --kernel-id).
inline void name_stream(cudaStream_t stream, char const* name) noexcept {
#if NSIGHTKIT_ENABLED
  if (name != nullptr && detail::nvtx_listening<GlobalDomain>()) nvtxNameCudaStreamA(stream, name);
#else
  (void)stream;
  (void)name;
#endif
}

/// Names a CUDA device (by ordinal) in the tools' timeline.
inline void name_cuda_device(int device, char const* name) noexcept {
#if NSIGHTKIT_ENABLED
  if (name != nullptr && detail::nvtx_listening<GlobalDomain>()) nvtxNameCudaDeviceA(device, name);
#else
  (void)device;
  (void)name;
#endif
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
    ::nsightkit::detail::make_site([] {}), FMT_STRING(NSIGHTKIT_DETAIL_FIRST(__VA_ARGS__)),        \
        __VA_ARGS__                                                                                \
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
