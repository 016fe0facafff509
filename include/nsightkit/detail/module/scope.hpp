// Internal: the work of a ModuleScope (module.hpp): the per-thread module stack, the default
// range and the hooks around one module call. ModuleScope derives from Scope, whose enabled and
// disabled (NSIGHTKIT_DISABLE: an empty class, begin() does nothing) definitions sit side by
// side here, so the public class is written once.
//
// Cost. The common case (nobody observes modules: no hook, no tool, no sink) is a few loads and
// no store that survives inlining, like a ScopedRange with no tool attached: only `tracked_` is
// written, every other member is left uninitialised. The rare paths stay out of line (cold), so
// what is inlined into every forward is a handful of instructions; the common path is forced
// inline because clang otherwise keeps it out of line.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/emit.hpp>
#include <nsightkit/detail/fmt.hpp>
#include <nsightkit/module_types.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string_view>
#include <thread>

// The path table's code (paths.hpp) and the OS thread id (thread.hpp) serve the rare paths
// (scope_impl.hpp): in the compiled mode only src/nsightkit.cpp needs them.
#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/module/registry.hpp>
#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/module/paths.hpp>
#include <nsightkit/detail/thread.hpp>
#endif
#endif

// All three are #undef'd at the end of this header (module.hpp defines its own). enter_body() is
// inlined into enter() header-only; compiled, only src/nsightkit.cpp has its body.
#if NSIGHTKIT_ENABLED && (defined(__GNUC__) || defined(__clang__))
#define NSIGHTKIT_DETAIL_MODULE_COLD __attribute__((noinline, cold))
#define NSIGHTKIT_DETAIL_MODULE_HOT __attribute__((always_inline))
#else
#define NSIGHTKIT_DETAIL_MODULE_COLD
#define NSIGHTKIT_DETAIL_MODULE_HOT
#endif
#if NSIGHTKIT_DETAIL_COMPILED
#define NSIGHTKIT_DETAIL_MODULE_BODY
#else
#define NSIGHTKIT_DETAIL_MODULE_BODY NSIGHTKIT_DETAIL_MODULE_HOT
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {
/// Tag of ModuleScope's internal constructor (used by Hooked and instrument).
struct ModuleCall {};
}  // namespace detail

namespace detail::module {

#if NSIGHTKIT_ENABLED

static_assert(max_module_depth == depth_limit, "one limit, two spellings");

/// A module name as a scope receives it: `size` is npos for a name that outlives the scope
/// (pushed as a registered string), the length of a formatted name the scope owns (pushed as a
/// plain message); `owned` is the heap copy of a long formatted name.
struct Name {
  char const* text;
  std::size_t size;
  char* owned;
};

/// Formatted module names up to this size minus one are kept inside the scope (no allocation).
inline constexpr std::size_t name_inline = 32;

/// Formats a module name once: into `inline_text` when it fits, else into a heap copy. A failing
/// formatter, or no memory for a long name, gives a fixed placeholder: scopes never throw. A
/// template only so that nothing of {fmt}'s engine is instantiated unless a name is formatted.
template <class Buffer>
inline Name format_module_name(char (&inline_text)[name_inline], fmt::string_view format,
                               fmt::format_args args) noexcept {
  static constexpr char failed[] = "<nsightkit: name formatting failed>";
  Buffer buf;  // on this cold path's stack: long names are formatted only once
  format_name_to(buf, format, args);
  if (buf.size() == 0) return {failed, sizeof failed - 1, nullptr};
  std::size_t const size = buf.size() - 1;  // without the NUL
  char* text = inline_text;
  char* owned = nullptr;
  if (size >= name_inline) {
    owned = new (std::nothrow) char[size + 1];
    if (owned == nullptr) return {failed, sizeof failed - 1, nullptr};
    text = owned;
  }
  std::memcpy(text, buf.data(), size + 1);
  return {text, size, owned};
}

#if NSIGHTKIT_DETAIL_COMPILED
/// format_module_name<fmt::memory_buffer>, defined once in src/nsightkit.cpp (detail/compiled.hpp).
NSIGHTKIT_DETAIL_VISIBLE Name format_module_name(char (&inline_text)[name_inline],
                                                 fmt::string_view format,
                                                 fmt::format_args args) noexcept;
#endif

/// Formats a module name from its format and arguments (see format_module_name).
template <class... Args>
NSIGHTKIT_DETAIL_NOINLINE inline Name format_name(char (&inline_text)[name_inline],
                                                  fmt::string_view format, Args&... args) noexcept {
#if NSIGHTKIT_DETAIL_COMPILED
  return format_module_name(inline_text, format, fmt::make_format_args(args...));
#else
  return format_module_name<fmt::memory_buffer>(inline_text, format,
                                                fmt::make_format_args(args...));
#endif
}

/// A module scope's state and rules (the base of ModuleScope). Not copyable or movable.
class Scope {
 public:
  Scope(Scope const&) = delete;
  Scope& operator=(Scope const&) = delete;

 protected:
  // Nothing is initialised here: begin() writes tracked_, enter() the rest.
  NSIGHTKIT_DETAIL_MODULE_HOT Scope() noexcept {}

  /// Runs the post hooks and pops the range, then leaves the module.
  NSIGHTKIT_DETAIL_MODULE_HOT ~Scope() {
    if (tracked_) leave();
  }

  // The common case (nobody observes modules: no hook, no tool, no sink) is a few loads and no
  // store that survives inlining, like a ScopedRange with no tool attached. Default ranges go
  // wherever a ScopedRange would go: to a tool that handles pushes in this binary (NVTX's push
  // pointer is per binary, not per domain, so the global domain's check answers for every
  // domain) and to nsightkit's sinks.
  NSIGHTKIT_DETAIL_MODULE_HOT void begin(char const* name, HookSet* hooks,
                                         void const* module) noexcept {
    bool const listening = listening_any();
    unsigned const mode = registry().mode.load(std::memory_order_relaxed);
    bool const ranges = listening && (mode & mode_ranges) != 0;
    tracked_ = ranges || (mode & mode_tracking) != 0;
    if (tracked_) enter(name, hooks, module, ranges, mode);
  }

  // The same check; the name is formatted only past it.
  template <class... Args>
  NSIGHTKIT_DETAIL_MODULE_HOT void begin_formatted(fmt::string_view format,
                                                   Args&... args) noexcept {
    bool const listening = listening_any();
    unsigned const mode = registry().mode.load(std::memory_order_relaxed);
    bool const ranges = listening && (mode & mode_ranges) != 0;
    tracked_ = ranges || (mode & mode_tracking) != 0;
    if (tracked_) enter_formatted(ranges, mode, format, args...);
  }

  // enter(), enter_body() and leave(), the rare paths, are defined in detail/module/scope_impl.hpp:
  // after this class header-only, in src/nsightkit.cpp in the compiled mode (detail/compiled.hpp).
  NSIGHTKIT_DETAIL_MEMBER NSIGHTKIT_DETAIL_MODULE_COLD void enter(char const* name, HookSet* hooks,
                                                                  void const* module, bool ranges,
                                                                  unsigned mode) noexcept;

  template <class... Args>
  NSIGHTKIT_DETAIL_MODULE_COLD void enter_formatted(bool ranges, unsigned mode,
                                                    fmt::string_view format,
                                                    Args&... args) noexcept {
    enter_body(format_name(text_, format, args...), nullptr, nullptr, ranges, mode);
  }

  NSIGHTKIT_DETAIL_MEMBER NSIGHTKIT_DETAIL_MODULE_BODY void enter_body(
      Name const& name, HookSet* hooks, void const* module, bool ranges, unsigned mode) noexcept;

  NSIGHTKIT_DETAIL_MEMBER NSIGHTKIT_DETAIL_MODULE_COLD void leave() noexcept;

  /// The info of a node whose path is built (`path`: enter() checked).
  // Defined with the rare paths that call it (scope_impl.hpp).
  NSIGHTKIT_DETAIL_MODULE_HOT ModuleInfo make_info(PathNode const& node, char const* path,
                                                   bool unwinding) const noexcept;

  bool tracked_;  // the only member the common path writes
  // The rest is written only by enter(), when tracked_ (not even zero-initialised otherwise).
  bool observed_;         // hooks ran: post hooks will
  DomainOps const* ops_;  // non-null: a range was pushed
  Frame frame_;
  union {  // Emitted has default member initialisers: keep them off the common path
    Emitted emitted_;
  };
  HookSet* hooks_;
  void const* module_;
  std::uint64_t calls_;
  int uncaught_;
  char* owned_;             // a long formatted name, freed by leave()
  char text_[name_inline];  // a short formatted name
};

#else  // !NSIGHTKIT_ENABLED: an empty class whose begin() does nothing

class HookSet;

class Scope {
 public:
  Scope(Scope const&) = delete;
  Scope& operator=(Scope const&) = delete;

 protected:
  Scope() noexcept = default;
  void begin(char const*, HookSet*, void const*) noexcept {}
  template <class... Args>
  void begin_formatted(fmt::string_view, Args&...) noexcept {}
};

#endif  // NSIGHTKIT_ENABLED

}  // namespace detail::module
NSIGHTKIT_DETAIL_END_NAMESPACE

#if NSIGHTKIT_ENABLED && !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/module/scope_impl.hpp>
#endif

#undef NSIGHTKIT_DETAIL_MODULE_COLD
#undef NSIGHTKIT_DETAIL_MODULE_HOT
#undef NSIGHTKIT_DETAIL_MODULE_BODY
