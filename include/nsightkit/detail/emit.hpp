// Internal: the emit engine behind every nsightkit range and mark (ranges, module scopes, capture
// steps, the pinned pool's and the prefetcher's ranges). One event goes to NVTX when a tool
// handles this linkage unit's calls and to nsightkit's in-process sinks (the report) when one is
// registered. With nobody listening an event costs a load and a branch: nothing is formatted,
// registered or stored.
//
// A name reaches the tool in one of three ways:
// - static: a string that outlives the call, registered once per domain and content;
// - site: a macro call site's literal, registered once for the site (no table lookup);
// - dynamic: text made at run time (a std::string, a formatted name), a plain message.
//
// The enabled and the disabled (NSIGHTKIT_DISABLE) definitions sit side by side: disabled, every
// name below keeps its signature and does nothing (should_emit() is constexpr false, Emitted and
// the RAII ranges are empty classes) and NVTX is not included. Callers are written once, without
// an #if. In the compiled mode (detail/compiled.hpp) the same names call the engine
// (detail/emit_engine.hpp) out of line, in src/nsightkit.cpp, and NVTX is not included here either.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/emit_types.hpp>
#include <nsightkit/detail/fmt.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#if NSIGHTKIT_HAS_CUDA
#include <driver_types.h>
#endif

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/sinks.hpp>
#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/emit_engine.hpp>
#endif
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

#if NSIGHTKIT_ENABLED

/// Formats a name into `buf`, NUL-terminated. A failing formatter yields a placeholder name
/// instead of an exception (instrumentation never throws), and `buf` stays empty only when even
/// that fails. A template only so that a translation unit that formats no name instantiates none
/// of {fmt}'s engine.
template <class Buffer>
inline void format_name_to(Buffer& buf, fmt::string_view f, fmt::format_args args) noexcept {
  NSIGHTKIT_DETAIL_TRY {
    fmt::vformat_to(fmt::appender(buf), f, args);
    buf.push_back('\0');
  }
  NSIGHTKIT_DETAIL_CATCH(...) {
    static constexpr char fallback[] = "<nsightkit: name formatting failed>";
    buf.clear();
    NSIGHTKIT_DETAIL_TRY { buf.append(fallback, fallback + sizeof fallback); }
    NSIGHTKIT_DETAIL_CATCH(...) { buf.clear(); }
  }
}

#if !NSIGHTKIT_DETAIL_COMPILED

/// True when an emission would reach anyone: an NVTX tool or an nsightkit sink. The fast path.
template <class D>
inline bool should_emit() noexcept {
  return nvtx_listening<D>() || sinks_active();
}

/// True when a range of any domain would reach anyone (NVTX's push pointer is per binary, not per
/// domain, so the global domain's answer holds for every domain).
inline bool listening_any() noexcept { return nvtx_listening_any() || sinks_active(); }

/// True when an NVTX tool handles pushes of domain D in this binary (the same question in both
/// modes; here a named domain is created on the way).
template <class D>
inline bool nvtx_tool_listening() noexcept {
  return nvtx_listening<D>();
}

/// Emits one event of domain D (see emit_core).
template <class D, Op op, class HandleFn>
inline Emitted emit(Attributes const& a, char const* text, std::size_t len,
                    HandleFn&& handle) noexcept {
  return emit_core<op>([]() -> NvtxDomain& { return nvtx_domain<D>(); }, D::name, a, text, len,
                       handle);
}

/// A name known to outlive the call: registered once per domain and content.
template <class D, Op op>
NSIGHTKIT_DETAIL_NOINLINE inline Emitted emit_static(Attributes const& a,
                                                     char const* text) noexcept {
  if (text == nullptr) text = "";
  return emit<D, op>(a, text, std::size_t(-1),
                     [text](NvtxDomain& d) { return registered_string(d, text); });
}

/// A name at a macro call site: registered once for the site.
template <class D, Op op, class Site>
NSIGHTKIT_DETAIL_NOINLINE inline Emitted emit_site(Attributes const& a, char const* text) noexcept {
  return emit<D, op>(a, text, std::size_t(-1), [text](NvtxDomain& d) {
    static nvtxStringHandle_t const h = nvtxDomainRegisterStringA(d.handle, text);
    return h;
  });
}

/// A name built at run time (NUL-terminated, `len` characters): a plain message, never
/// registered.
template <class D, Op op>
inline Emitted emit_dynamic(Attributes const& a, char const* text, std::size_t len) noexcept {
  return emit<D, op>(a, text, len, [](NvtxDomain&) { return nvtxStringHandle_t{nullptr}; });
}

/// Formats the name, then emits it (call only when should_emit<D>()).
template <class D, Op op, class... Args>
NSIGHTKIT_DETAIL_NOINLINE inline Emitted emit_formatted_slow(Attributes const& a,
                                                             fmt::string_view f,
                                                             Args&... args) noexcept {
  fmt::memory_buffer buf;
  format_name_to(buf, f, fmt::make_format_args(args...));
  if (buf.size() == 0) return {};
  return emit_dynamic<D, op>(a, buf.data(), buf.size() - 1);
}

/// Ends a push/pop range where its beginning went.
template <class D>
NSIGHTKIT_DETAIL_NOINLINE inline void end_push(Emitted const& e) noexcept {
  end_push_core([]() -> NvtxDomain& { return nvtx_domain<D>(); }, D::name, e);
}

/// Ends a start/end range where its beginning went.
template <class D>
NSIGHTKIT_DETAIL_NOINLINE inline void end_start(Emitted const& e) noexcept {
  end_start_core([]() -> NvtxDomain& { return nvtx_domain<D>(); }, e);
}

#else  // NSIGHTKIT_DETAIL_COMPILED: the engine is called out of line (detail/emit_impl.hpp)

/// One domain as the compiled engine sees it: its name (for the sinks), whether it is NVTX's
/// global domain, and its NVTX state (an NvtxDomain), made by the engine on first use.
struct DomainSlot {
  char const* name;
  bool global;
  std::atomic<void*> nvtx{nullptr};
};

/// The slot of domain D, one per program.
template <class D>
inline DomainSlot domain_slot{D::name, std::is_same<D, GlobalDomain>::value};

/// How an event's name reaches the tool (see the top of this file).
enum class NameKind : unsigned char { registered, site, plain };

/// Emits one event; `site` holds the call site's registered string (NameKind::site only). `len` is
/// the length of `text`, or -1 to measure it.
NSIGHTKIT_DETAIL_VISIBLE Emitted emit_out(DomainSlot& domain, Op op, Attributes const& a,
                                          char const* text, std::size_t len, NameKind kind,
                                          std::atomic<void*>* site) noexcept;
/// Formats the name (a placeholder when the formatter fails), then emits it.
NSIGHTKIT_DETAIL_VISIBLE Emitted emit_formatted_out(DomainSlot& domain, Op op, Attributes const& a,
                                                    fmt::string_view f,
                                                    fmt::format_args args) noexcept;
/// Ends a push/pop (`op` push) or start/end (`op` start) range where its beginning went.
NSIGHTKIT_DETAIL_VISIBLE void end_out(DomainSlot& domain, Op op, Emitted const& e) noexcept;
/// Resolves whether an NVTX tool listens (nvtx_push_state), initialising NVTX on first use.
NSIGHTKIT_DETAIL_VISIBLE bool resolve_nvtx_listening() noexcept;

/// True when an NVTX tool handles pushes of domain D in this binary (NVTX answers per binary, not
/// per domain); the first call initialises NVTX, in the engine.
template <class D>
inline bool nvtx_tool_listening() noexcept {
  auto const state = nvtx_push_state.load(std::memory_order_acquire);
  return state >= NvtxPushState::tool ||
         (state == NvtxPushState::unresolved && resolve_nvtx_listening());
}

/// True when a range of any domain would reach anyone: an NVTX tool or an nsightkit sink.
inline bool listening_any() noexcept {
  return nvtx_tool_listening<DefaultDomain>() || sinks_active();
}

/// True when an emission would reach anyone. The fast path.
template <class D>
inline bool should_emit() noexcept {
  return listening_any();
}

template <class D, Op op>
inline Emitted emit_static(Attributes const& a, char const* text) noexcept {
  return emit_out(domain_slot<D>, op, a, text != nullptr ? text : "", std::size_t(-1),
                  NameKind::registered, nullptr);
}

template <class D, Op op, class Site>
inline Emitted emit_site(Attributes const& a, char const* text) noexcept {
  static std::atomic<void*> handle{nullptr};
  return emit_out(domain_slot<D>, op, a, text, std::size_t(-1), NameKind::site, &handle);
}

template <class D, Op op>
inline Emitted emit_dynamic(Attributes const& a, char const* text, std::size_t len) noexcept {
  return emit_out(domain_slot<D>, op, a, text, len, NameKind::plain, nullptr);
}

template <class D, Op op, class... Args>
inline Emitted emit_formatted_slow(Attributes const& a, fmt::string_view f,
                                   Args&... args) noexcept {
  return emit_formatted_out(domain_slot<D>, op, a, f, fmt::make_format_args(args...));
}

template <class D>
inline void end_push(Emitted const& e) noexcept {
  end_out(domain_slot<D>, Op::push, e);
}

template <class D>
inline void end_start(Emitted const& e) noexcept {
  end_out(domain_slot<D>, Op::start, e);
}

/// Names the calling OS thread for the tools and the sinks.
NSIGHTKIT_DETAIL_VISIBLE void emit_thread_name(char const* name) noexcept;
#if NSIGHTKIT_HAS_CUDA
/// Names a CUDA stream for the tools.
NSIGHTKIT_DETAIL_VISIBLE void emit_stream_name(cudaStream_t stream, char const* name) noexcept;
/// Names a CUDA device (by ordinal) for the tools.
NSIGHTKIT_DETAIL_VISIBLE void emit_device_name(int device, char const* name) noexcept;
#endif

#endif  // NSIGHTKIT_DETAIL_COMPILED

#else  // !NSIGHTKIT_ENABLED: the same names, doing nothing

inline bool listening_any() noexcept { return false; }

template <class D>
constexpr bool should_emit() noexcept {
  return false;
}

template <class D, Op op>
inline Emitted emit_static(Attributes const&, char const*) noexcept {
  return {};
}

template <class D, Op op, class Site>
inline Emitted emit_site(Attributes const&, char const*) noexcept {
  return {};
}

template <class D, Op op>
inline Emitted emit_dynamic(Attributes const&, char const*, std::size_t) noexcept {
  return {};
}

template <class D, Op op, class... Args>
inline Emitted emit_formatted_slow(Attributes const&, fmt::string_view, Args&...) noexcept {
  return {};
}

template <class D>
inline void end_push(Emitted const&) noexcept {}

template <class D>
inline void end_start(Emitted const&) noexcept {}

inline void emit_thread_name(char const*) noexcept {}

#if NSIGHTKIT_HAS_CUDA
inline void emit_stream_name(cudaStream_t, char const*) noexcept {}
inline void emit_device_name(int, char const*) noexcept {}
#endif

#endif  // NSIGHTKIT_ENABLED

// ---- the checked entry points: each emits only when should_emit<D>(), in both modes ----

/// Emits a name that outlives the call (registered once per domain and content).
template <class D, Op op>
inline Emitted emit_name(Attributes const& a, char const* name) noexcept {
  return should_emit<D>() ? emit_static<D, op>(a, name) : Emitted{};
}

/// Emits a name held in a run-time string (a plain message, not registered).
template <class D, Op op>
inline Emitted emit_name(Attributes const& a, std::string const& name) noexcept {
  return should_emit<D>() ? emit_dynamic<D, op>(a, name.c_str(), name.size()) : Emitted{};
}

/// Emits a macro call site's literal (registered once for the site).
template <class D, Op op, class Site>
inline Emitted emit_site_name(Attributes const& a, char const* name) noexcept {
  return should_emit<D>() ? emit_site<D, op, Site>(a, name) : Emitted{};
}

/// Formats the name only when something listens, then emits it.
template <class D, Op op, class... Args>
inline Emitted emit_formatted(Attributes const& a, fmt::string_view f, Args&... args) noexcept {
  return should_emit<D>() ? emit_formatted_slow<D, op>(a, f, args...) : Emitted{};
}

/// The macros' form (NSIGHTKIT_RANGE): without arguments `literal` is the name, registered once
/// for the call site; with arguments S is the compile-time string of the format, checked here
/// against the arguments (in C++17 too). The check builds a fresh S: in C++20 {fmt}'s constructor
/// is consteval, and a function parameter is not a constant expression.
template <class D, Op op, class Site, class S, class... As>
inline Emitted emit_macro(char const* literal, As&... as) noexcept {
  if constexpr (sizeof...(As) == 0) {
    return emit_site_name<D, op, Site>(Attributes{}, literal);
  } else {
    (void)literal;
    fmt::format_string<As...> const format{S{}};
    return emit_formatted<D, op>(Attributes{}, format_text(format), as...);
  }
}

// ---- RAII ranges ----

#if NSIGHTKIT_ENABLED

/// A push/pop range alive for the enclosing scope: the one implementation behind ScopedRangeIn and
/// the ranges nsightkit opens itself. Not copyable or movable (it ends on its own thread, LIFO).
template <class D>
class ScopedEmit {
 public:
  /// A range named by a string that outlives the call (registered once per domain and content).
  ScopedEmit(Attributes const& a, char const* name) noexcept {
    keep(emit_name<D, Op::push>(a, name));
  }
  /// A range named by a run-time string (a plain message).
  ScopedEmit(Attributes const& a, std::string const& name) noexcept {
    keep(emit_name<D, Op::push>(a, name));
  }
  /// A range named by a format string and its arguments, formatted only when someone listens.
  template <class A0, class... As>
  ScopedEmit(Attributes const& a, fmt::string_view format, A0&& a0, As&&... as) noexcept {
    keep(emit_formatted<D, Op::push>(a, format, a0, as...));
  }
  /// A range named by a literal registered once for the call site (NSIGHTKIT_FUNC_RANGE).
  template <class Site>
  ScopedEmit(SiteTag<Site>, char const* name) noexcept {
    keep(emit_site_name<D, Op::push, Site>(Attributes{}, name));
  }
  /// The macros' form (see emit_macro).
  template <class Site, class S, class... As>
  ScopedEmit(SiteTag<Site>, S const&, char const* literal, As&&... as) noexcept {
    keep(emit_macro<D, Op::push, Site, S>(literal, as...));
  }

  ScopedEmit(ScopedEmit const&) = delete;
  ScopedEmit& operator=(ScopedEmit const&) = delete;

  /// Pops the range from wherever it was pushed.
  ~ScopedEmit() noexcept {
    if (reached_ != 0) {
      Emitted e;
      e.nvtx = (reached_ & 1u) != 0;
      e.sinks = (reached_ & 2u) != 0;
      end_push<D>(e);
    }
  }

 private:
  void keep(Emitted const& e) noexcept {
    reached_ = static_cast<std::uint8_t>((e.nvtx ? 1u : 0u) | (e.sinks ? 2u : 0u));
  }
  std::uint8_t reached_{0};  // bit 0: NVTX push made; bit 1: sinks notified
};

/// A start/end range: movable, ends on end() or destruction (the one behind UniqueRangeIn).
template <class D>
class UniqueEmit {
 public:
  /// A started range named by a string that outlives the call.
  UniqueEmit(Attributes const& a, char const* name) noexcept
      : emitted_{emit_name<D, Op::start>(a, name)} {}
  /// A started range named by a run-time string.
  UniqueEmit(Attributes const& a, std::string const& name) noexcept
      : emitted_{emit_name<D, Op::start>(a, name)} {}
  /// A started range with a formatted name.
  template <class A0, class... As>
  UniqueEmit(Attributes const& a, fmt::string_view format, A0&& a0, As&&... as) noexcept
      : emitted_{emit_formatted<D, Op::start>(a, format, a0, as...)} {}

  /// Takes over `other`'s range.
  UniqueEmit(UniqueEmit&& other) noexcept : emitted_{std::exchange(other.emitted_, Emitted{})} {}
  /// Ends this range, then takes over `other`'s.
  UniqueEmit& operator=(UniqueEmit&& other) noexcept {
    if (this != &other) {
      end();
      emitted_ = std::exchange(other.emitted_, Emitted{});
    }
    return *this;
  }
  UniqueEmit(UniqueEmit const&) = delete;
  UniqueEmit& operator=(UniqueEmit const&) = delete;
  ~UniqueEmit() noexcept { end(); }

  /// Ends the range now; later calls do nothing.
  void end() noexcept {
    if (emitted_.nvtx || emitted_.sinks) end_start<D>(std::exchange(emitted_, Emitted{}));
  }

 private:
  Emitted emitted_{};
};

#else  // !NSIGHTKIT_ENABLED: empty classes, the same constructors

template <class D>
class ScopedEmit {
 public:
  ScopedEmit(Attributes const&, char const*) noexcept {}
  ScopedEmit(Attributes const&, std::string const&) noexcept {}
  template <class A0, class... As>
  ScopedEmit(Attributes const&, fmt::string_view, A0&&, As&&...) noexcept {}
  template <class Site>
  ScopedEmit(SiteTag<Site>, char const*) noexcept {}
  template <class Site, class S, class... As>
  ScopedEmit(SiteTag<Site>, S const&, char const*, As&&...) noexcept {}
  ScopedEmit(ScopedEmit const&) = delete;
  ScopedEmit& operator=(ScopedEmit const&) = delete;
};

template <class D>
class UniqueEmit {
 public:
  UniqueEmit(Attributes const&, char const*) noexcept {}
  UniqueEmit(Attributes const&, std::string const&) noexcept {}
  template <class A0, class... As>
  UniqueEmit(Attributes const&, fmt::string_view, A0&&, As&&...) noexcept {}
  UniqueEmit(UniqueEmit&&) noexcept = default;
  UniqueEmit& operator=(UniqueEmit&&) noexcept = default;
  UniqueEmit(UniqueEmit const&) = delete;
  UniqueEmit& operator=(UniqueEmit const&) = delete;
  void end() noexcept {}
};

#endif  // NSIGHTKIT_ENABLED

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
