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
// an #if.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/fmt.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
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

/// What an event does: begin a push/pop range, begin a start/end range, or mark an instant.
enum class Op { push, start, mark };

#if NSIGHTKIT_ENABLED

/// What an emission reached, so the end of the range goes to the same places.
struct Emitted {
  bool nvtx{false};
  bool sinks{false};
  nvtxRangeId_t nvtx_id{0};
  std::uint64_t sink_id{0};
};

/// True when an emission would reach anyone: an NVTX tool or an nsightkit sink. The fast path.
template <class D>
inline bool should_emit() noexcept {
  return nvtx_listening<D>() || sinks_active();
}

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

/// A name built at run time (NUL-terminated, `len` characters): a plain message, never
/// registered.
template <class D, Op op>
inline Emitted emit_dynamic(Attributes const& a, char const* text, std::size_t len) noexcept {
  return emit<D, op>(a, text, len, [] { return nvtxStringHandle_t{nullptr}; });
}

#if NSIGHTKIT_DETAIL_COMPILED
/// Appends `f` formatted with `args` to `buf`; throws what the formatter throws. Defined once, in
/// src/nsightkit.cpp: a formatted name then instantiates none of {fmt}'s formatting engine where
/// it is written (detail/compiled.hpp).
NSIGHTKIT_DETAIL_VISIBLE void vformat_name(fmt::memory_buffer& buf, fmt::string_view f,
                                           fmt::format_args args);
#else
/// Appends `f` formatted with `args` to `buf`; throws what the formatter throws. A template only
/// so that a translation unit that formats no name instantiates none of {fmt}'s engine.
template <class Buffer>
inline void vformat_name(Buffer& buf, fmt::string_view f, fmt::format_args args) {
  fmt::vformat_to(fmt::appender(buf), f, args);
}
#endif

/// Formats into `buf` (NUL-terminated). A failing formatter yields a placeholder name instead of
/// an exception: instrumentation never throws.
template <class... Args>
inline void format_name(fmt::memory_buffer& buf, fmt::string_view f, Args&... args) noexcept {
  NSIGHTKIT_DETAIL_TRY {
    vformat_name(buf, f, fmt::make_format_args(args...));
    buf.push_back('\0');
  }
  NSIGHTKIT_DETAIL_CATCH(...) {
    static constexpr char fallback[] = "<nsightkit: name formatting failed>";
    buf.clear();
    NSIGHTKIT_DETAIL_TRY { buf.append(fallback, fallback + sizeof fallback); }
    NSIGHTKIT_DETAIL_CATCH(...) { buf.clear(); }
  }
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

/// Ends a push/pop range where its beginning went.
template <class D>
NSIGHTKIT_DETAIL_NOINLINE inline void end_push(Emitted const& e) noexcept {
  if (e.nvtx) nvtxDomainRangePop(domain_handle<D>());
  if (e.sinks) for_each_sink([](RangeSink& s) { s.on_pop(D::name); });
}

/// Ends a start/end range where its beginning went.
template <class D>
NSIGHTKIT_DETAIL_NOINLINE inline void end_start(Emitted const& e) noexcept {
  if (e.nvtx) nvtxDomainRangeEnd(domain_handle<D>(), e.nvtx_id);
  if (e.sinks) for_each_sink([&](RangeSink& s) { s.on_end(e.sink_id); });
}

/// Names the calling OS thread for the tools and the sinks.
inline void emit_thread_name(char const* name) noexcept {
  if (name == nullptr) return;
  if (nvtx_listening<GlobalDomain>()) nvtxNameOsThreadA(os_thread_id(), name);
  if (sinks_active()) for_each_sink([name](RangeSink& s) { s.on_thread_name(name); });
}

#if NSIGHTKIT_HAS_CUDA
/// Names a CUDA stream for the tools.
inline void emit_stream_name(cudaStream_t stream, char const* name) noexcept {
  if (name != nullptr && nvtx_listening<GlobalDomain>()) nvtxNameCudaStreamA(stream, name);
}

/// Names a CUDA device (by ordinal) for the tools.
inline void emit_device_name(int device, char const* name) noexcept {
  if (name != nullptr && nvtx_listening<GlobalDomain>()) nvtxNameCudaDeviceA(device, name);
}
#endif

#else  // !NSIGHTKIT_ENABLED: the same names, doing nothing

struct Emitted {};

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
