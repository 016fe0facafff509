/**
 * @file module.hpp
 * @brief Module hooks: every layer of a C++ model named in the timeline without editing its code.
 *
 * The C++ counterpart of PyTorch's forward pre/post hooks.
 *
 * @code
 * namespace nsk = nsightkit;
 * struct Block {                                   // plain C++, no nsightkit inside
 *   nsk::Hooked<Conv> conv1{"conv1", 64, 64};      // calls run inside a ModuleScope
 *   nsk::Hooked<Relu> relu{"relu"};
 *   Tensor forward(Tensor x) { return relu(conv1(x)); }
 * };
 * struct Backbone {
 *   std::vector<nsk::Hooked<Block>> layer1;        // names "0", "1", ...
 *   Tensor forward(Tensor x) {
 *     nsk::ModuleScope scope{"backbone"};          // or edit the forward: one line
 *     ...
 *   }
 * };
 * auto timer = nsk::add_post_hook([](nsk::ModuleInfo const& m) { log(m.path, m.call_count); });
 * @endcode
 *
 * **Range names.** The default hooks push one NVTX range per module call, named by the module's
 * own name (the last path component, a registered NVTX string), in the module domain
 * (`"nsightkit"` unless set_module_domain<D>() chose another). Nesting gives the hierarchy: the
 * nsys timeline shows `backbone` > `layer1` > `0` > `conv1`, and the stack of names, read from the
 * bottom, *is* the module path `backbone/layer1/0/conv1`. ncu's push/pop filter uses the same
 * '/' syntax, so a path selects a module's kernels directly:
 *
 * - `ncu --nvtx --nvtx-include "nsightkit@backbone/layer1/"` — every kernel launched while
 *   `layer1` runs inside `backbone` (its sub-modules included), wherever that pair sits on the
 *   stack: other ranges of the same domain below it (`step 3`) do not matter. Give the path from
 *   the outermost module so that no other module's path contains it.
 * - `"nsightkit@backbone/layer1/0]"` — only the kernels `0` launches itself (`]`: top of stack).
 * - `"nsightkit@[backbone/layer1"` — anchored at the bottom of the domain's stack: matches only if
 *   nothing of the same domain is pushed below `backbone` (use it with a domain of your own for
 *   modules, see set_module_domain<D>()).
 *
 * ncu_nvtx_include(path) builds the first form. ncu's domain comes first (`domain@range`); nsys'
 * `-p` capture uses the opposite order (`conv1@nsightkit`).
 *
 * **Cost.** With nothing observing modules (no user hook, no NVTX tool, no sink), a ModuleScope
 * is a few loads and branches, like a ScopedRange with no tool attached: no store, no
 * allocation, no string. From the first observer on (or track_module_paths()), scopes also keep
 * a per-thread module stack (an out-of-line call, two thread-local stores). Paths are resolved
 * only when a hook or current_module_path() needs them, from an interned path table (one node
 * per distinct path, created once, found through a hash table); a path's text is built on its
 * first request and kept, so ModuleInfo::path is never built per call. Scopes nested deeper
 * than max_module_depth get no path of their own.
 *
 * **C-style code.** `ModuleScope layer{"h{}", l};` or `NSIGHTKIT_MODULE("h{}", l);` names each
 * call by a format string, formatted only when something observes modules; an instrumented
 * function takes a name per call site with `f.as("name")(args...)`.
 *
 * **Threads.** Scopes nest per thread. Hooks may be added and removed from any thread while other
 * threads run modules; a removed hook is never called again once remove() returns.
 *
 * **Disabled** (`NSIGHTKIT_DISABLE`): every type and function keeps its signature; ModuleScope is
 * empty, hooks are never stored or called, no range is pushed; Hooked<M> and instrument() still
 * call the wrapped module/function and return its result.
 */
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/range.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/module/registry.hpp>
#include <nsightkit/detail/thread.hpp>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/**
 * @brief What a hook learns about the module call it runs for.
 *
 * `name` and `path` view strings owned by nsightkit's path table: valid (and NUL-terminated)
 * for the rest of the process, so a hook may keep them. A path's text is built the first time it
 * is asked for (by a hook or current_module_path()) and then kept.
 *
 * @code
 * auto h = nsightkit::add_pre_hook([](nsightkit::ModuleInfo const& m) {
 *   std::printf("%*s%s (call %llu)\n", 2 * m.depth, "", m.path.data(),
 *               static_cast<unsigned long long>(m.call_count));
 * });
 * @endcode
 */
struct ModuleInfo {
  /// The module's own name, the last component of `path` (also the name of its NVTX range).
  std::string_view name;
  /// Full path from the outermost module of the thread: "backbone/layer1/0/conv1". Scopes that
  /// began before anything observed modules (see track_module_paths()) are not part of it.
  std::string_view path;
  /// Number of enclosing modules on this thread (0 for an outermost module).
  int depth{0};
  /// 1-based number of this call among the calls of this path, process-wide (all threads).
  /// Counted while at least one user hook is installed: calls made with no hook installed are
  /// not counted.
  std::uint64_t call_count{0};
  /// The calling thread.
  std::thread::id thread{};
  /// The calling thread's OS id (the TID Nsight Systems shows).
  std::uint32_t os_thread_id{0};
  /// The wrapped module object for Hooked<M> (`&hooked.get()`), the wrapped function for
  /// instrument(), null for a plain ModuleScope.
  void const* module{nullptr};
  /// True in post hooks when the module is left by an exception.
  bool unwinding{false};
};

/// The type hooks are stored as: any callable `void(ModuleInfo const&)` converts to it.
using ModuleHook = std::function<void(ModuleInfo const&)>;

// ModuleScope's common path (nobody observes) is forced inline: clang otherwise keeps the
// constructor out of line. The rare paths stay out of line, so what is inlined into every forward
// is a handful of instructions. Both macros are #undef'd at the end of this header.
#if NSIGHTKIT_ENABLED && (defined(__GNUC__) || defined(__clang__))
#define NSIGHTKIT_DETAIL_MODULE_COLD __attribute__((noinline, cold))
#define NSIGHTKIT_DETAIL_MODULE_HOT __attribute__((always_inline))
#else
#define NSIGHTKIT_DETAIL_MODULE_COLD
#define NSIGHTKIT_DETAIL_MODULE_HOT
#endif

namespace detail {
namespace module {
class HookSet;
#if NSIGHTKIT_ENABLED
struct HookEntry;
#endif
}  // namespace module
/// Tag of ModuleScope's internal constructor (used by Hooked and instrument).
struct ModuleCall {};
}  // namespace detail

/**
 * @brief Owns one installed hook: removes it on remove() or destruction (RAII).
 *
 * Returned by add_pre_hook(), add_post_hook() and Hooked<M>::add_pre_hook()/add_post_hook().
 * Discarding the handle removes the hook at once (hence `[[nodiscard]]`); call release() to keep
 * a hook for the rest of the process. Move-only. A handle may outlive the Hooked instance it
 * was added to: removing it then does nothing harmful.
 *
 * remove() is synchronous: when it returns, the hook is not running on any other thread and will
 * never be called again, so it may capture references to objects that die right after. Called
 * from inside the hook itself, it does not wait for that call.
 *
 * @code
 * {
 *   std::atomic<int> calls{0};
 *   auto h = nsightkit::add_pre_hook([&](nsightkit::ModuleInfo const&) { ++calls; });
 *   model.forward(x);
 * }  // hook removed before `calls` dies
 * @endcode
 */
class [[nodiscard]] HookHandle {
 public:
  /// An empty handle (owns no hook).
  HookHandle() noexcept = default;

  /// Takes over `other`'s hook; `other` becomes empty.
  HookHandle(HookHandle&& other) noexcept
#if NSIGHTKIT_ENABLED
      : entry_{std::move(other.entry_)},
        set_{std::move(other.set_)}
#endif
  {
#if !NSIGHTKIT_ENABLED
    (void)other;
#endif
  }

  /// Removes this handle's hook, then takes over `other`'s.
  HookHandle& operator=(HookHandle&& other) noexcept {
    if (this != &other) {
      remove();
#if NSIGHTKIT_ENABLED
      entry_ = std::move(other.entry_);
      set_ = std::move(other.set_);
#endif
    }
    return *this;
  }

  HookHandle(HookHandle const&) = delete;
  HookHandle& operator=(HookHandle const&) = delete;

  /// Removes the hook (see remove()).
  ~HookHandle() { remove(); }

  /// Removes the hook now and waits until no other thread runs it. Idempotent.
  void remove() noexcept {
#if NSIGHTKIT_ENABLED
    if (entry_ && set_) detail::module::remove_hook(*set_, entry_);
    entry_.reset();
    set_.reset();
#endif
  }

  /// Leaves the hook installed for the rest of the process; the handle becomes empty.
  void release() noexcept {
#if NSIGHTKIT_ENABLED
    entry_.reset();
    set_.reset();
#endif
  }

  /// True while the handle owns an installed hook (always false under `NSIGHTKIT_DISABLE`).
  [[nodiscard]] bool active() const noexcept {
#if NSIGHTKIT_ENABLED
    return entry_ != nullptr;
#else
    return false;
#endif
  }

  /// Same as active().
  explicit operator bool() const noexcept { return active(); }

#if NSIGHTKIT_ENABLED
  /// Internal: used by the add_*_hook functions.
  HookHandle(std::shared_ptr<detail::module::HookEntry> entry,
             std::shared_ptr<detail::module::HookSet> set) noexcept
      : entry_{std::move(entry)}, set_{std::move(set)} {}

 private:
  std::shared_ptr<detail::module::HookEntry> entry_;
  std::shared_ptr<detail::module::HookSet> set_;
#endif
};

namespace detail {

/// A hook from any callable; an empty std::function or null pointer is an error.
template <class F>
inline ModuleHook make_hook(F&& fn, char const* who) {
  static_assert(std::is_invocable_v<std::decay_t<F>&, ModuleInfo const&>,
                "nsightkit: a module hook must be callable as hook(nsightkit::ModuleInfo const&)");
  ModuleHook h(std::forward<F>(fn));
  if (!h) throw std::invalid_argument(std::string{who} + ": the hook is empty (null function)");
  return h;
}

#if NSIGHTKIT_ENABLED
inline HookHandle add_hook(std::shared_ptr<module::HookSet> set, ModuleHook fn, bool post) {
  auto e = std::make_shared<detail::module::HookEntry>();
  e->fn = std::move(fn);
  detail::module::Registry& reg = detail::module::registry();
  bool const instance = set.get() != &reg.global;
  detail::module::
      start_tracking();  // hooks need paths: module scopes keep the per-thread stack from now on
  // Counted before the set holds it, so a scope that sees the hook also sees the count.
  if (instance) reg.instance_hooks.fetch_add(1, std::memory_order_relaxed);
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    set->add(e, post);
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
    if (instance) reg.instance_hooks.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
#endif
  return HookHandle{std::move(e), std::move(set)};
}

/// The global hook set as a non-owning shared_ptr (the registry is never destroyed).
inline std::shared_ptr<module::HookSet> global_hook_set() noexcept {
  return std::shared_ptr<module::HookSet>(std::shared_ptr<module::HookSet>{},
                                          &detail::module::registry().global);
}

#endif

}  // namespace detail

/**
 * @brief The deepest nesting of module scopes that gets paths: scopes nested deeper (the
 *        1025th scope of a thread's stack and below) push their ranges as usual but get no path
 *        of their own.
 *
 * For such a scope no hook runs, and current_module_path() names its ancestor at the limit (a
 * one-time message on stderr names this limit). It bounds the memory of paths: a path is stored
 * once per distinct path, as long as its text, so paths asked for at every level of a stack of
 * depth d cost O(d^2) bytes.
 */
inline constexpr int max_module_depth = 1024;

#if NSIGHTKIT_ENABLED
static_assert(max_module_depth == detail::module::depth_limit, "one limit, two spellings");

namespace detail {

/// A module name as a scope receives it: `size` is npos for a name that outlives the scope
/// (pushed as a registered string), the length of a formatted name the scope owns (pushed as a
/// plain message); `owned` is the heap copy of a long formatted name.
struct ModuleName {
  char const* text;
  std::size_t size;
  char* owned;
};

/// Formatted module names up to this size minus one are kept inside the scope (no allocation).
inline constexpr std::size_t module_name_inline = 32;

/// Formats a module name once: into `inline_text` when it fits, else into a heap copy. A failing
/// formatter, or no memory for a long name, gives a fixed placeholder: scopes never throw.
template <class... Args>
NSIGHTKIT_DETAIL_NOINLINE inline ModuleName format_module_name(
    char (&inline_text)[module_name_inline], fmt::string_view format, Args&... args) noexcept {
  static constexpr char failed[] = "<nsightkit: name formatting failed>";
  ModuleName const placeholder{failed, sizeof failed - 1, nullptr};
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    fmt::memory_buffer buf;  // on this cold path's stack: long names are formatted only once
    fmt::vformat_to(fmt::appender(buf), format, fmt::make_format_args(args...));
    char* text = inline_text;
    char* owned = nullptr;
    if (buf.size() >= module_name_inline) {
      owned = new (std::nothrow) char[buf.size() + 1];
      if (owned == nullptr) return placeholder;
      text = owned;
    }
    std::memcpy(text, buf.data(), buf.size());
    text[buf.size()] = '\0';
    return {text, buf.size(), owned};
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
    return placeholder;
  }
#endif
}

}  // namespace detail
#endif

/**
 * @brief Runs the module hooks around a scope: the top of a module's forward.
 *
 * On construction: pushes the module's NVTX range (default hooks), then runs the global pre
 * hooks, then the pre hooks of the Hooked instance, if any. On destruction, also when an
 * exception leaves the scope: the global post hooks, the instance's post hooks, then pops the
 * range. Scopes nest per thread: a scope's path is the names of the scopes it runs inside
 * (`backbone/layer1/0/conv1`).
 *
 * A fixed name must stay valid and unchanged until the scope ends (a string literal, or a string
 * owned by the module). A formatted name (`ModuleScope{"h{}", l}`, or NSIGHTKIT_MODULE) is owned
 * by the scope, and formatted only when something observes modules. Names must be non-empty and
 * contain no '/' (a malformed name is reported once on stderr, the scope still works). Not
 * copyable, not movable, not heap-allocatable: it must end on its own thread in LIFO order, like
 * ScopedRange.
 *
 * Hooks do not run for scopes entered from inside a hook (a hook that calls a module cannot
 * recurse into itself), nor for scopes nested deeper than max_module_depth; their ranges are
 * still pushed.
 *
 * While nothing observes modules (no hook, tool, sink or track_module_paths()), a scope keeps no
 * state and costs about what a ScopedRange with no tool costs; from the first observer on it
 * also links itself into the thread's module stack, which is where paths come from.
 *
 * @code
 * Tensor Backbone::forward(Tensor x) {
 *   nsightkit::ModuleScope scope{"backbone"};
 *   x = stem(x);
 *   for (int l = 0; l < n_layers; ++l) {
 *     nsightkit::ModuleScope layer{"h{}", l};   // "h0", "h1", ...: formatted only if observed
 *     x = blocks[l](x);
 *   }
 *   return x;
 * }
 * @endcode
 */
class ModuleScope {
 public:
  /**
   * @brief A module scope named `name`.
   * @param name a string that outlives the scope (a null pointer names it "").
   */
  NSIGHTKIT_DETAIL_MODULE_HOT explicit ModuleScope(char const* name) noexcept
      : ModuleScope(detail::ModuleCall{}, name, nullptr, nullptr) {}

  /**
   * @brief A module scope named by a string that outlives the scope.
   * @param name the module name; it must not change until the scope ends.
   */
  explicit ModuleScope(std::string const& name) noexcept : ModuleScope(name.c_str()) {}

  /// Rejected: a temporary string would die before the scope ends (use the formatted form).
  explicit ModuleScope(std::string&& name) = delete;

  /**
   * @brief A module scope named by an {fmt} format string and its arguments: `{"h{}", l}`.
   *
   * The name is formatted only when something observes modules (a hook, an NVTX tool, a sink,
   * track_module_paths()); otherwise the arguments are not formatted at all. The scope owns the
   * text until it ends: names shorter than 32 characters are kept inside the scope, longer ones
   * on the heap. The format string is checked at compile time in C++20; NSIGHTKIT_MODULE checks
   * it in C++17 too. The range is pushed with the text as a plain message, like a formatted
   * range's name (not a registered string).
   *
   * @param format the format string.
   * @param a0 first format argument.
   * @param as further format arguments.
   */
  template <class A0, class... As>
  explicit ModuleScope(fmt::format_string<A0, As...> format, A0&& a0, As&&... as) noexcept {
#if NSIGHTKIT_ENABLED
    begin_formatted(format, a0, as...);
#else
    (void)format;
    ((void)a0, ..., (void)as);
#endif
  }

  /// Internal (NSIGHTKIT_MODULE): `checked` is the compile-time format string, `literal` the same
  /// text; without arguments the name is the literal itself.
  template <class Site, class S, class... As>
  ModuleScope(detail::SiteTag<Site> site, S const& checked, char const* literal,
              As&&... as) noexcept {
    (void)site;
    if constexpr (sizeof...(As) == 0) {
      (void)checked;
#if NSIGHTKIT_ENABLED
      begin(literal, nullptr, nullptr);
#else
      (void)literal;
#endif
    } else {
      (void)checked;
      // Checked at compile time in C++17 too. From a fresh S (an empty literal type): in C++20
      // the constructor is consteval, and a function parameter is not a constant expression.
      fmt::format_string<As...> const format{S{}};
      (void)literal;
#if NSIGHTKIT_ENABLED
      begin_formatted(format, as...);
#else
      (void)format;
      ((void)as, ...);
#endif
    }
  }

  /// Internal (Hooked, instrument): with a Hooked instance's hooks and the module object.
  NSIGHTKIT_DETAIL_MODULE_HOT ModuleScope(detail::ModuleCall, char const* name,
                                          detail::module::HookSet* hooks,
                                          void const* module) noexcept {
#if NSIGHTKIT_ENABLED
    begin(name, hooks, module);
#else
    (void)name;
    (void)hooks;
    (void)module;
#endif
  }

  ModuleScope(ModuleScope const&) = delete;
  ModuleScope(ModuleScope&&) = delete;
  ModuleScope& operator=(ModuleScope const&) = delete;
  ModuleScope& operator=(ModuleScope&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;

#if NSIGHTKIT_ENABLED
  /// Runs the post hooks and pops the range, then leaves the module.
  NSIGHTKIT_DETAIL_MODULE_HOT ~ModuleScope() {
    if (tracked_) leave();
  }

 private:
  // The common case (nobody observes modules: no hook, no tool, no sink) is a few loads and no
  // store that survives inlining, like a ScopedRange with no tool attached. Default ranges go
  // wherever a ScopedRange would go: to a tool that handles pushes in this binary (NVTX's push
  // pointer is per binary, not per domain, so the global domain's check answers for every
  // domain) and to nsightkit's sinks.
  NSIGHTKIT_DETAIL_MODULE_HOT void begin(char const* name, detail::module::HookSet* hooks,
                                         void const* module) noexcept {
    bool const listening = detail::nvtx_listening<GlobalDomain>() || detail::sinks_active();
    unsigned const mode = detail::module::registry().mode.load(std::memory_order_relaxed);
    bool const ranges = listening && (mode & detail::module::mode_ranges) != 0;
    tracked_ = ranges || (mode & detail::module::mode_tracking) != 0;
    if (tracked_) enter(name, hooks, module, ranges, mode);
  }

  // The same check; the name is formatted only past it.
  template <class... Args>
  NSIGHTKIT_DETAIL_MODULE_HOT void begin_formatted(fmt::string_view format,
                                                   Args&... args) noexcept {
    bool const listening = detail::nvtx_listening<GlobalDomain>() || detail::sinks_active();
    unsigned const mode = detail::module::registry().mode.load(std::memory_order_relaxed);
    bool const ranges = listening && (mode & detail::module::mode_ranges) != 0;
    tracked_ = ranges || (mode & detail::module::mode_tracking) != 0;
    if (tracked_) enter_formatted(ranges, mode, format, args...);
  }

  NSIGHTKIT_DETAIL_MODULE_COLD void enter(char const* name, detail::module::HookSet* hooks,
                                          void const* module, bool ranges, unsigned mode) noexcept {
    enter_body(detail::ModuleName{name != nullptr ? name : "", std::string_view::npos, nullptr},
               hooks, module, ranges, mode);
  }

  template <class... Args>
  NSIGHTKIT_DETAIL_MODULE_COLD void enter_formatted(bool ranges, unsigned mode,
                                                    fmt::string_view format,
                                                    Args&... args) noexcept {
    enter_body(detail::format_module_name(text_, format, args...), nullptr, nullptr, ranges, mode);
  }

  NSIGHTKIT_DETAIL_MODULE_HOT void enter_body(detail::ModuleName const& name,
                                              detail::module::HookSet* hooks, void const* module,
                                              bool ranges, unsigned mode) noexcept {
    // A tool or sink listens: keep paths from now on, this scope included.
    if ((mode & detail::module::mode_tracking) == 0) detail::module::start_tracking();
    owned_ = name.owned;
    frame_.name = name.text;
    frame_.node = nullptr;
    frame_.parent = detail::module::current_frame;
    detail::module::current_frame = &frame_;
    ops_ = nullptr;
    observed_ = false;
    if (ranges) {
      ops_ = detail::module::registry().domain.load(std::memory_order_acquire);
      ::new (static_cast<void*>(&emitted_)) detail::Emitted(
          name.size == std::string_view::npos ? ops_->push(name.text)
                                              : ops_->push_text(name.text, name.size));
    }
    // Instance hooks are looked up only while some instance has one.
    detail::module::Registry const& reg = detail::module::registry();
    bool const hooked =
        reg.global.count() != 0 || (reg.instance_hooks.load(std::memory_order_relaxed) != 0 &&
                                    hooks != nullptr && hooks->count() != 0);
    if (!hooked || detail::module::running_hooks.depth != 0) return;
    detail::module::PathNode const* node = detail::module::resolve(&frame_);
    // Out of memory for the node or its path, or nested beyond the depth limit (no path of its
    // own): no hooks for this call.
    if (node == nullptr || detail::module::beyond_depth_limit(frame_, *node)) return;
    char const* const path = detail::module::node_path(*node);
    if (path == nullptr) return;
    calls_ = node->calls.fetch_add(1, std::memory_order_relaxed) + 1;
    hooks_ = hooks;
    module_ = module;
    uncaught_ = std::uncaught_exceptions();
    observed_ = true;
    ModuleInfo const info = make_info(*node, path, false);
    detail::module::run_hooks(detail::module::global_hooks_snapshot(), false, info);
    if (hooks_ != nullptr && hooks_->count() != 0) {
      auto const list = hooks_->snapshot();
      detail::module::run_hooks(list.get(), false, info);
    }
  }

  NSIGHTKIT_DETAIL_MODULE_COLD void leave() noexcept {
    if (observed_) {
      detail::module::PathNode const& node = *frame_.node;
      ModuleInfo const info = make_info(node, node.path.load(std::memory_order_acquire),
                                        std::uncaught_exceptions() > uncaught_);
      detail::module::run_hooks(detail::module::global_hooks_snapshot(), true, info);
      if (hooks_ != nullptr && hooks_->count() != 0) {
        auto const list = hooks_->snapshot();
        detail::module::run_hooks(list.get(), true, info);
      }
    }
    if (ops_ != nullptr) ops_->pop(emitted_);
    detail::module::current_frame = frame_.parent;
    if (owned_ != nullptr) delete[] owned_;
  }

  /// The info of a node whose path is built (`path`: enter() checked).
  NSIGHTKIT_DETAIL_MODULE_HOT ModuleInfo make_info(detail::module::PathNode const& node,
                                                   char const* path,
                                                   bool unwinding) const noexcept {
    ModuleInfo info;
    info.name = std::string_view{node.name(), node.name_size};
    info.path = std::string_view{path, node.path_size};
    info.depth = node.depth;
    info.call_count = calls_;
    info.thread = std::this_thread::get_id();
    info.os_thread_id = detail::os_thread_id();
    info.module = module_;
    info.unwinding = unwinding;
    return info;
  }

  bool tracked_;  // the only member the common path writes
  // The rest is written only by enter(), when tracked_ (not even zero-initialised otherwise).
  bool observed_;                         // hooks ran: post hooks will
  detail::module::DomainOps const* ops_;  // non-null: a range was pushed
  detail::module::Frame frame_;
  union {  // Emitted has default member initialisers: keep them off the common path
    detail::Emitted emitted_;
  };
  detail::module::HookSet* hooks_;
  void const* module_;
  std::uint64_t calls_;
  int uncaught_;
  char* owned_;                            // a long formatted name, freed by leave()
  char text_[detail::module_name_inline];  // a short formatted name
#endif
};

/**
 * @brief Installs a pre hook for every module: `fn(info)` runs when any module scope begins.
 *
 * Global pre hooks run in the order they were added, after the module's range is pushed and
 * before the Hooked instance's own pre hooks. Safe to call while other threads run modules;
 * scopes already running do not run it. A hook must not throw (an exception is dropped and
 * reported once on stderr).
 *
 * @param fn any callable `void(ModuleInfo const&)`.
 * @return the handle that owns the hook (RAII: discarding it removes the hook).
 * @throws std::invalid_argument when `fn` is empty; std::bad_alloc.
 *
 * @code
 * auto h = nsightkit::add_pre_hook([](nsightkit::ModuleInfo const& m) { t0[m.path] = now(); });
 * @endcode
 */
template <class F>
inline HookHandle add_pre_hook(F&& fn) {
  ModuleHook h = detail::make_hook(std::forward<F>(fn), "nsightkit::add_pre_hook");
#if NSIGHTKIT_ENABLED
  return detail::add_hook(detail::global_hook_set(), std::move(h), false);
#else
  (void)h;
  return HookHandle{};
#endif
}

/**
 * @brief Installs a post hook for every module: `fn(info)` runs when any module scope ends.
 *
 * Global post hooks run in the order they were added, before the instance's own post hooks and
 * before the range is popped; also when an exception leaves the module (`info.unwinding`). A
 * hook added while a scope runs may see that scope's end without its beginning.
 *
 * @param fn any callable `void(ModuleInfo const&)`.
 * @return the handle that owns the hook (RAII).
 * @throws std::invalid_argument when `fn` is empty; std::bad_alloc.
 *
 * @code
 * auto h = nsightkit::add_post_hook([](nsightkit::ModuleInfo const& m) { log(m.path); });
 * @endcode
 */
template <class F>
inline HookHandle add_post_hook(F&& fn) {
  ModuleHook h = detail::make_hook(std::forward<F>(fn), "nsightkit::add_post_hook");
#if NSIGHTKIT_ENABLED
  return detail::add_hook(detail::global_hook_set(), std::move(h), true);
#else
  (void)h;
  return HookHandle{};
#endif
}

/**
 * @brief Puts the default module ranges in domain D from now on (default: DefaultDomain).
 *
 * A run-time choice: scopes already open pop in the domain they pushed in. Call it from the
 * executable (the push functions are instantiated where it is called).
 *
 * @tparam D a domain tag (`static constexpr char const* name`), or GlobalDomain.
 *
 * @code
 * struct Model { static constexpr char const* name{"model"}; };
 * nsightkit::set_module_domain<Model>();   // ncu --nvtx-include "model@[backbone/layer1"
 * @endcode
 */
template <class D>
inline void set_module_domain() noexcept {
  static_assert(std::is_convertible_v<decltype(D::name), char const*>,
                "nsightkit::set_module_domain<D>: D must have `static constexpr char const* name`");
#if NSIGHTKIT_ENABLED
  detail::module::registry().domain.store(&detail::module::domain_ops<D>,
                                          std::memory_order_release);
#endif
}

/// The name of the domain module ranges go to ("" for NVTX's global domain).
inline char const* module_domain() noexcept {
#if NSIGHTKIT_ENABLED
  return detail::module::registry().domain.load(std::memory_order_acquire)->name;
#else
  return DefaultDomain::name;
#endif
}

/**
 * @brief Turns the default module ranges on (the default) or off; user hooks are unaffected.
 * @param on false: module scopes push no range (only user hooks run).
 */
inline void set_module_ranges(bool on) noexcept {
#if NSIGHTKIT_ENABLED
  auto& mode = detail::module::registry().mode;
  if (on) {
    mode.fetch_or(detail::module::mode_ranges, std::memory_order_relaxed);
  } else {
    mode.fetch_and(~detail::module::mode_ranges, std::memory_order_relaxed);
  }
#else
  (void)on;
#endif
}

/// True when module scopes push their default range (always false under `NSIGHTKIT_DISABLE`).
inline bool module_ranges() noexcept {
#if NSIGHTKIT_ENABLED
  return (detail::module::registry().mode.load(std::memory_order_relaxed) &
          detail::module::mode_ranges) != 0;
#else
  return false;
#endif
}

/**
 * @brief The path of the innermost module running on the calling thread ("" outside modules,
 *        and always "" under `NSIGHTKIT_DISABLE`).
 *
 * Module scopes keep the per-thread module stack only once something observes modules (a hook
 * installed, an NVTX tool attached, a sink registered, or track_module_paths()); before that,
 * with nothing observing, scopes keep no state at all and this returns "". The view stays valid
 * for the rest of the process. The first call for a path creates its entry in the path table;
 * later calls allocate nothing.
 *
 * @code
 * void launch(Kernel k) { counts[std::string{nsightkit::current_module_path()}] += 1; ... }
 * @endcode
 */
inline std::string_view current_module_path() noexcept {
#if NSIGHTKIT_ENABLED
  detail::module::Frame* f = detail::module::current_frame;
  if (f == nullptr) return {};
  detail::module::PathNode const* n = f->node != nullptr ? f->node : detail::module::resolve(f);
  char const* path = n != nullptr ? detail::module::node_path(*n) : nullptr;
  return path != nullptr ? std::string_view{path, n->path_size} : std::string_view{};
#else
  return {};
#endif
}

/**
 * @brief From now on, module scopes keep the per-thread module stack even when nothing else
 *        observes them, so current_module_path() and hooks added later see complete paths.
 *
 * Tracking also starts by itself with the first hook, NVTX tool or sink, and never stops (hooks
 * coming and going do not leave gaps in paths). Scopes already running when it starts are not
 * part of any path. Costs a few nanoseconds per module call (an out-of-line call and two
 * thread-local stores); without it, a module scope that nobody observes costs about what a
 * ScopedRange with no tool attached costs. No effect under `NSIGHTKIT_DISABLE`.
 *
 * @code
 * int main() {
 *   nsightkit::track_module_paths();   // before the first forward
 *   ...
 * }
 * @endcode
 */
inline void track_module_paths() noexcept {
#if NSIGHTKIT_ENABLED
  detail::module::start_tracking();
#endif
}

/**
 * @brief The `ncu --nvtx-include` value that selects the kernels of the module at `path`
 *        (its sub-modules included): `"<domain>@<path>/"` in the current module domain.
 *
 * Characters that ncu treats as quantifiers (`@ , [ ] * +`) are escaped with '\'. For NVTX's
 * global domain there is no `domain@` part (ncu's `<default domain>`).
 *
 * @param path a module path as in ModuleInfo::path.
 * @throws std::invalid_argument when `path` is empty; std::bad_alloc.
 *
 * @code
 * std::printf("ncu --nvtx --nvtx-include \"%s\" ./app\n",
 *             nsightkit::ncu_nvtx_include("backbone/layer1").c_str());
 * // ncu --nvtx --nvtx-include "nsightkit@backbone/layer1/" ./app
 * @endcode
 */
inline std::string ncu_nvtx_include(std::string_view path) {
  if (path.empty()) throw std::invalid_argument("nsightkit::ncu_nvtx_include: empty module path");
  std::string out;
  std::string_view const domain = module_domain();
  if (!domain.empty()) {
    for (char c : domain) {
      if (std::string_view{"@,[]/*+"}.find(c) != std::string_view::npos) out += '\\';
      out += c;
    }
    out += '@';
  }
  for (char c : path) {
    if (std::string_view{"@,[]*+"}.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  out += '/';
  return out;
}

namespace detail {

/// Overload ranking: a PreferFirst argument picks the overload taking it over the one taking
/// PreferSecond when both are viable.
struct PreferSecond {};
struct PreferFirst : PreferSecond {};

// Hooked's operator(): the module's call operator first, else its forward().
template <class M, class... A>
inline auto call_op_first(PreferFirst, M& m, A&&... a) -> decltype(m(std::forward<A>(a)...)) {
  return m(std::forward<A>(a)...);
}
template <class M, class... A>
inline auto call_op_first(PreferSecond, M& m, A&&... a)
    -> decltype(m.forward(std::forward<A>(a)...)) {
  return m.forward(std::forward<A>(a)...);
}

// Hooked's forward(): the module's forward() first, else its call operator.
template <class M, class... A>
inline auto call_forward_first(PreferFirst, M& m, A&&... a)
    -> decltype(m.forward(std::forward<A>(a)...)) {
  return m.forward(std::forward<A>(a)...);
}
template <class M, class... A>
inline auto call_forward_first(PreferSecond, M& m, A&&... a) -> decltype(m(std::forward<A>(a)...)) {
  return m(std::forward<A>(a)...);
}

/// Builds a module with parentheses when it has such a constructor, else with braces
/// (aggregates). Returns a prvalue: no copy or move of M.
template <class M, class... A>
inline M construct_module(A&&... a) {
  if constexpr (std::is_constructible_v<M, A...>) {
    return M(std::forward<A>(a)...);
  } else {
    return M{std::forward<A>(a)...};
  }
}

/// Throws std::invalid_argument unless `name` is a valid module name.
inline std::string checked_module_name(std::string name, char const* who) {
  if (name.empty()) throw std::invalid_argument(std::string{who} + ": empty module name");
  if (name.find('/') != std::string::npos) {
    throw std::invalid_argument(std::string{who} + ": module name \"" + name +
                                "\" contains '/' (names are path components)");
  }
  return name;
}

#if NSIGHTKIT_ENABLED
/// A Hooked instance's own hook set: a copy gets a fresh (empty) set, a move takes the set
/// along (handles stay attached to the moved-to instance).
class InstanceHooks {
 public:
  InstanceHooks() : set_{std::make_shared<module::HookSet>()} {}
  InstanceHooks(InstanceHooks const&) : InstanceHooks() {}
  InstanceHooks(InstanceHooks&&) noexcept = default;
  InstanceHooks& operator=(InstanceHooks const&) noexcept { return *this; }
  InstanceHooks& operator=(InstanceHooks&&) noexcept = default;
  ~InstanceHooks() = default;

  [[nodiscard]] module::HookSet* get() const noexcept { return set_.get(); }

  /// The set, recreated for a moved-from instance (not concurrently with calls on it).
  std::shared_ptr<module::HookSet> const& shared() {
    if (!set_) set_ = std::make_shared<module::HookSet>();
    return set_;
  }

 private:
  std::shared_ptr<module::HookSet> set_;
};
#endif

}  // namespace detail

/**
 * @brief Wraps a module type so that every call runs inside a ModuleScope named `name`,
 *        without touching the module's code.
 *
 * `h(args...)` calls the module's `operator()` (else its `forward`), `h.forward(args...)` its
 * `forward` (else its `operator()`), forwarding arguments and the result exactly: references,
 * move-only types and `void` included. `get()`, `*` and `->` reach the module itself.
 *
 * Copying a Hooked copies the module and the name, not the instance's hooks; moving takes them
 * along. Under `NSIGHTKIT_DISABLE` it still forwards every call to the module.
 *
 * @tparam M the module type (any class; aggregates are built with braces).
 *
 * @code
 * struct Conv { Tensor forward(Tensor const& x); int in, out; };
 * nsightkit::Hooked<Conv> conv1{"conv1", 64, 128};  // Conv{64, 128}
 * Tensor y = conv1(x);                              // range "conv1", hooks
 * auto h = conv1.add_post_hook([](nsightkit::ModuleInfo const& m) { ... });  // this one only
 * @endcode
 */
template <class M>
class Hooked {
 public:
  /// Builds the module from `args` and names it `name`.
  /// @throws std::invalid_argument when `name` is empty or contains '/'; whatever M's
  ///         constructor throws; std::bad_alloc.
  template <class... Args>
  explicit Hooked(std::string name, Args&&... args)
      : name_{detail::checked_module_name(std::move(name), "nsightkit::Hooked")},
        module_(detail::construct_module<M>(std::forward<Args>(args)...)) {}

  /// Calls the module's `operator()` (else `forward`) inside the module scope.
  template <class... Args>
  auto operator()(Args&&... args)
      -> decltype(detail::call_op_first(detail::PreferFirst{}, std::declval<M&>(),
                                        std::forward<Args>(args)...)) {
#if NSIGHTKIT_ENABLED
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), hooks_.get(), &module_};
#endif
    return detail::call_op_first(detail::PreferFirst{}, module_, std::forward<Args>(args)...);
  }

  /// Const call: the module's const `operator()` (else const `forward`).
  template <class... Args>
  auto operator()(Args&&... args) const
      -> decltype(detail::call_op_first(detail::PreferFirst{}, std::declval<M const&>(),
                                        std::forward<Args>(args)...)) {
#if NSIGHTKIT_ENABLED
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), hooks_.get(), &module_};
#endif
    return detail::call_op_first(detail::PreferFirst{}, module_, std::forward<Args>(args)...);
  }

  /// Calls the module's `forward` (else `operator()`) inside the module scope.
  template <class... Args>
  auto forward(Args&&... args)
      -> decltype(detail::call_forward_first(detail::PreferFirst{}, std::declval<M&>(),
                                             std::forward<Args>(args)...)) {
#if NSIGHTKIT_ENABLED
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), hooks_.get(), &module_};
#endif
    return detail::call_forward_first(detail::PreferFirst{}, module_, std::forward<Args>(args)...);
  }

  /// Const forward: the module's const `forward` (else const `operator()`).
  template <class... Args>
  auto forward(Args&&... args) const
      -> decltype(detail::call_forward_first(detail::PreferFirst{}, std::declval<M const&>(),
                                             std::forward<Args>(args)...)) {
#if NSIGHTKIT_ENABLED
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), hooks_.get(), &module_};
#endif
    return detail::call_forward_first(detail::PreferFirst{}, module_, std::forward<Args>(args)...);
  }

  /// The module itself (calls through it run no hooks).
  [[nodiscard]] M& get() noexcept { return module_; }
  /// The module itself.
  [[nodiscard]] M const& get() const noexcept { return module_; }
  /// Member access to the module.
  M* operator->() noexcept { return &module_; }
  /// Member access to the module.
  M const* operator->() const noexcept { return &module_; }
  /// The module itself.
  M& operator*() noexcept { return module_; }
  /// The module itself.
  M const& operator*() const noexcept { return module_; }

  /// The module's name (its path component and NVTX range name).
  [[nodiscard]] std::string const& name() const noexcept { return name_; }

  /**
   * @brief A pre hook for this instance only; runs after the global pre hooks.
   * @param fn any callable `void(ModuleInfo const&)`.
   * @return the handle that owns the hook (RAII).
   * @throws std::invalid_argument when `fn` is empty; std::bad_alloc.
   */
  template <class F>
  HookHandle add_pre_hook(F&& fn) {
    ModuleHook h = detail::make_hook(std::forward<F>(fn), "nsightkit::Hooked::add_pre_hook");
#if NSIGHTKIT_ENABLED
    return detail::add_hook(hooks_.shared(), std::move(h), false);
#else
    (void)h;
    return HookHandle{};
#endif
  }

  /**
   * @brief A post hook for this instance only; runs after the global post hooks.
   * @param fn any callable `void(ModuleInfo const&)`.
   * @return the handle that owns the hook (RAII).
   * @throws std::invalid_argument when `fn` is empty; std::bad_alloc.
   */
  template <class F>
  HookHandle add_post_hook(F&& fn) {
    ModuleHook h = detail::make_hook(std::forward<F>(fn), "nsightkit::Hooked::add_post_hook");
#if NSIGHTKIT_ENABLED
    return detail::add_hook(hooks_.shared(), std::move(h), true);
#else
    (void)h;
    return HookHandle{};
#endif
  }

 private:
  std::string name_;
  M module_;
#if NSIGHTKIT_ENABLED
  detail::InstanceHooks hooks_;
#endif
};

/**
 * @brief One call site's name for an instrumented function: what Instrumented::as() returns.
 *
 * Calls the Instrumented's function (the same object: its state, and ModuleInfo::module, are
 * shared with every other name it is called under) inside a module scope named by this call
 * site. Holds a pointer to the function and to the name: use it within the expression that made
 * it, or while both live.
 *
 * @tparam F the function type (`G const` for a const Instrumented).
 *
 * @code
 * auto fetch = nsightkit::instrument(&Loader::next, "fetch");
 * Batch b = fetch.as("prefetch")(loader);   // range "prefetch", the same function
 * @endcode
 */
template <class F>
class InstrumentedCall {
 public:
  /// Calls the function (std::invoke) inside a module scope named by this call site.
  template <class... Args>
  auto operator()(Args&&... args) const -> std::invoke_result_t<F&, Args...> {
#if NSIGHTKIT_ENABLED
    ModuleScope const scope{detail::ModuleCall{}, name_, nullptr, fn_};
#endif
    return std::invoke(*fn_, std::forward<Args>(args)...);
  }

  /// The module name the call runs under.
  [[nodiscard]] char const* name() const noexcept { return name_; }

 private:
  template <class>
  friend class Instrumented;
  InstrumentedCall(F& fn, char const* name) noexcept : fn_{&fn}, name_{name} {}

  F* fn_;
  char const* name_;
};

/**
 * @brief A callable that runs a wrapped function inside a module scope (see instrument()).
 *
 * Calls forward arguments and the result exactly and let exceptions through (the scope ends,
 * post hooks run and the range is popped on the way). Copyable and movable when F is. as()
 * names one call site differently.
 *
 * @code
 * auto fetch = nsightkit::instrument([&](int i) { return loader.fetch(i); }, "fetch");
 * Batch b = fetch(3);                  // range "fetch", hooks
 * Batch w = fetch.as("warmup")(0);     // the same function, range "warmup"
 * @endcode
 */
template <class F>
class Instrumented {
 public:
  /// Wraps `fn` under the module name `name`.
  /// @throws std::invalid_argument when `name` is empty or contains '/'.
  Instrumented(F fn, std::string name)
      : fn_(std::move(fn)),
        name_{detail::checked_module_name(std::move(name), "nsightkit::instrument")} {}

  /// Calls the function (std::invoke) inside the scope.
  template <class... Args>
  auto operator()(Args&&... args) -> std::invoke_result_t<F&, Args...> {
#if NSIGHTKIT_ENABLED
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), nullptr, &fn_};
#endif
    return std::invoke(fn_, std::forward<Args>(args)...);
  }

  /// Calls a const function object inside the scope.
  template <class... Args>
  auto operator()(Args&&... args) const -> std::invoke_result_t<F const&, Args...> {
#if NSIGHTKIT_ENABLED
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), nullptr, &fn_};
#endif
    return std::invoke(fn_, std::forward<Args>(args)...);
  }

  /**
   * @brief The same function under another module name, for one call site:
   *        `fetch.as("prefetch")(args...)`.
   *
   * Costs what a call does (no allocation, no copy of the function); the name is not copied
   * either. Like a ModuleScope name, a malformed name is reported once on stderr instead of
   * thrown.
   *
   * @param name the call site's module name: a string that outlives the call (a literal).
   * @return a callable that calls this Instrumented's function inside a scope named `name`.
   */
  [[nodiscard]] InstrumentedCall<F> as(char const* name) & noexcept { return {fn_, name}; }

  /// as() on a const Instrumented: calls the const function object.
  [[nodiscard]] InstrumentedCall<F const> as(char const* name) const& noexcept {
    return {fn_, name};
  }

  /// as() with a name held in a string that outlives the call.
  [[nodiscard]] InstrumentedCall<F> as(std::string const& name) & noexcept {
    return as(name.c_str());
  }

  /// as() on a const Instrumented, with a name held in a string that outlives the call.
  [[nodiscard]] InstrumentedCall<F const> as(std::string const& name) const& noexcept {
    return as(name.c_str());
  }

  /// Rejected: the name would die before the call.
  void as(std::string&& name) const = delete;

  /// Rejected: the call would outlive the temporary Instrumented (keep it in a variable).
  void as(char const* name) && = delete;

  /// Rejected: the call would outlive the temporary Instrumented (keep it in a variable).
  void as(std::string const& name) && = delete;

  /// The module name the calls run under.
  [[nodiscard]] std::string const& name() const noexcept { return name_; }

  /// The wrapped function.
  [[nodiscard]] F const& function() const noexcept { return fn_; }

 private:
  F fn_;
  std::string name_;
};

/**
 * @brief Wraps any callable so each call runs inside a module scope named `name` — the C++
 *        form of "monkey patching" a data loader's fetch.
 *
 * @param fn a function object, function pointer or member pointer (called with std::invoke).
 * @param name the module name (non-empty, no '/').
 * @return an Instrumented<F> holding a copy (or the moved) `fn`.
 * @throws std::invalid_argument when `name` is empty or contains '/'.
 *
 * @code
 * auto next_batch = nsightkit::instrument(&Loader::next, "loader");
 * Batch b = next_batch(loader);    // range "loader"; exceptions pass through
 * @endcode
 */
template <class F>
inline Instrumented<std::decay_t<F>> instrument(F&& fn, std::string name) {
  return Instrumented<std::decay_t<F>>(std::forward<F>(fn), std::move(name));
}

NSIGHTKIT_DETAIL_END_NAMESPACE

#if NSIGHTKIT_ENABLED
/**
 * @brief A module scope for the rest of the enclosing block: `NSIGHTKIT_MODULE("h{}", l);`.
 *
 * The first argument must be a string literal; with more arguments it is a format string checked
 * at compile time (also in C++17), formatted only when something observes modules, and owned by
 * the scope (see ModuleScope's formatted constructor). Without arguments the literal is the name.
 * Several may share one block (they nest in order). Under `NSIGHTKIT_DISABLE` it expands to
 * nothing and its arguments are not evaluated.
 */
#define NSIGHTKIT_MODULE(...)                                                                      \
  ::nsightkit::ModuleScope const NSIGHTKIT_DETAIL_UNIQUE(nsightkit_module_) {                      \
    ::nsightkit::detail::make_site([] {}), FMT_STRING(NSIGHTKIT_DETAIL_FIRST(__VA_ARGS__)),        \
        __VA_ARGS__                                                                                \
  }
#else
#define NSIGHTKIT_MODULE(...) static_cast<void>(0)
#endif

#undef NSIGHTKIT_DETAIL_MODULE_COLD
#undef NSIGHTKIT_DETAIL_MODULE_HOT
