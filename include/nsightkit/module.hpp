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
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/function.hpp>
#include <nsightkit/detail/module/control.hpp>
#include <nsightkit/detail/module/scope.hpp>
#include <nsightkit/module_types.hpp>
#include <nsightkit/range.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

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
 * from inside the hook itself, it does not wait for that call. Handles of different hooks may be
 * used on different threads at once; one handle must not be used by two threads at once.
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
  /// @param other the handle to take over.
  HookHandle(HookHandle&& other) noexcept;

  /// Removes this handle's hook, then takes over `other`'s.
  /// @param other the handle to take over.
  /// @return `*this`.
  HookHandle& operator=(HookHandle&& other) noexcept;

  HookHandle(HookHandle const&) = delete;
  HookHandle& operator=(HookHandle const&) = delete;

  /// Removes the hook (see remove()).
  ~HookHandle();

  /// Removes the hook now and waits until no other thread runs it. Idempotent.
  void remove() noexcept;

  /// Leaves the hook installed for the rest of the process; the handle becomes empty.
  void release() noexcept;

  /// Whether the handle owns a hook.
  /// @return true while it owns an installed hook (always false under `NSIGHTKIT_DISABLE`).
  [[nodiscard]] bool active() const noexcept { return state_.active(); }

  /// Same as active(). @return true while the handle owns an installed hook.
  explicit operator bool() const noexcept { return active(); }

  /// Internal: used by the add_*_hook functions.
  /// @param state the installed hook and its set.
  explicit HookHandle(detail::module::HandleState state) noexcept : state_{std::move(state)} {}

 private:
  detail::module::HandleState state_;
};

namespace detail {

/// A hook from any callable; an empty std::function or null pointer is an error.
template <class F>
inline ModuleHook make_hook(F&& fn, char const* who) {
  static_assert(std::is_invocable_v<std::decay_t<F>&, ModuleInfo const&>,
                "nsightkit: a module hook must be callable as hook(nsightkit::ModuleInfo const&)");
  ModuleHook h(std::forward<F>(fn));
  if (!h) {
    NSIGHTKIT_DETAIL_THROW(
        std::invalid_argument(std::string{who} + ": the hook is empty (null function)"));
  }
  return h;
}

}  // namespace detail

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
class ModuleScope : private detail::module::Scope {
 public:
  /**
   * @brief A module scope named `name`.
   * @param name a string that outlives the scope (a null pointer names it "").
   */
  NSIGHTKIT_DETAIL_MODULE_SCOPE_INLINE explicit ModuleScope(char const* name) noexcept
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
    begin_formatted(detail::format_text(format), a0, as...);
  }

  /// Internal (NSIGHTKIT_MODULE): without arguments the name is the literal itself.
  /// @param literal the macro's first argument (also checked as a format string).
  /// @param as the format arguments, if any.
  template <class Site, class S, class... As>
  ModuleScope(detail::SiteTag<Site> /*site*/, S const& /*checked*/, char const* literal,
              As&&... as) noexcept {
    if constexpr (sizeof...(As) == 0) {
      begin(literal, nullptr, nullptr);
    } else {
      // Checked at compile time in C++17 too. From a fresh S (an empty literal type): in C++20
      // the constructor is consteval, and a function parameter is not a constant expression.
      fmt::format_string<As...> const format{S{}};
      (void)literal;
      begin_formatted(detail::format_text(format), as...);
    }
  }

  /// Internal (Hooked, instrument): with a Hooked instance's hooks and the module object.
  /// @param name the module name (outlives the scope).
  /// @param hooks the instance's hooks, or null.
  /// @param module what ModuleInfo::module shows.
  NSIGHTKIT_DETAIL_MODULE_SCOPE_INLINE ModuleScope(detail::ModuleCall, char const* name,
                                                   detail::module::HookSet* hooks,
                                                   void const* module) noexcept {
    begin(name, hooks, module);
  }

  ModuleScope(ModuleScope const&) = delete;
  ModuleScope(ModuleScope&&) = delete;
  ModuleScope& operator=(ModuleScope const&) = delete;
  ModuleScope& operator=(ModuleScope&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;
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
  return HookHandle{detail::add_hook(detail::global_hook_set(), std::move(h), false)};
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
  return HookHandle{detail::add_hook(detail::global_hook_set(), std::move(h), true)};
}

/**
 * @brief Puts the default module ranges in domain D from now on (default: DefaultDomain).
 *
 * A run-time choice: scopes already open pop in the domain they pushed in. Call it from the
 * executable (the push functions are instantiated where it is called). Safe from any thread (one
 * atomic store).
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
  detail::module::set_domain<D>();
}

/// The domain module ranges go to (see set_module_domain()). Safe from any thread.
/// @return its name ("" for NVTX's global domain).
inline char const* module_domain() noexcept { return detail::module::domain_name(); }

/**
 * @brief Turns the default module ranges on (the default) or off; user hooks are unaffected.
 *
 * Safe from any thread (one atomic operation); scopes already open still pop their range.
 * @param on false: module scopes push no range (only user hooks run).
 */
inline void set_module_ranges(bool on) noexcept { detail::module::set_ranges(on); }

/// Whether module scopes push their default range. Safe from any thread.
/// @return true unless the last set_module_ranges() call passed false (always false under
///         `NSIGHTKIT_DISABLE`).
inline bool module_ranges() noexcept { return detail::module::ranges_on(); }

/**
 * @brief The path of the innermost module running on the calling thread ("" outside modules,
 *        and always "" under `NSIGHTKIT_DISABLE`).
 *
 * Module scopes keep the per-thread module stack only once something observes modules (a hook
 * installed, an NVTX tool attached, a sink registered, or track_module_paths()); before that,
 * with nothing observing, scopes keep no state at all and this returns "". The view stays valid
 * for the rest of the process. The first call for a path creates its entry in the path table;
 * later calls allocate nothing.
 * @return the path of the calling thread's innermost module; "" outside modules, before module
 *         paths are tracked, or when its text cannot be allocated.
 *
 * @code
 * void launch(Kernel k) { counts[std::string{nsightkit::current_module_path()}] += 1; ... }
 * @endcode
 */
inline std::string_view current_module_path() noexcept { return detail::module::current_path(); }

/**
 * @brief From now on, module scopes keep the per-thread module stack even when nothing else
 *        observes them, so current_module_path() and hooks added later see complete paths.
 *
 * Safe from any thread.
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
inline void track_module_paths() noexcept { detail::module::track_paths(); }

/**
 * @brief The `ncu --nvtx-include` value that selects the kernels of the module at `path`
 *        (its sub-modules included): `"<domain>@<path>/"` in the current module domain.
 *
 * Characters that ncu treats as quantifiers (`@ , [ ] * +`) are escaped with '\'. For NVTX's
 * global domain there is no `domain@` part (ncu's `<default domain>`).
 *
 * @param path a module path as in ModuleInfo::path.
 * @return the filter, e.g. `nsightkit@backbone/layer1/`.
 * @throws std::invalid_argument when `path` is empty; std::bad_alloc.
 *
 * @code
 * std::printf("ncu --nvtx --nvtx-include \"%s\" ./app\n",
 *             nsightkit::ncu_nvtx_include("backbone/layer1").c_str());
 * // ncu --nvtx --nvtx-include "nsightkit@backbone/layer1/" ./app
 * @endcode
 */
inline std::string ncu_nvtx_include(std::string_view path) {
  if (path.empty()) {
    NSIGHTKIT_DETAIL_THROW(std::invalid_argument("nsightkit::ncu_nvtx_include: empty module path"));
  }
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

NSIGHTKIT_DETAIL_END_NAMESPACE

/**
 * @brief A module scope for the rest of the enclosing block: `NSIGHTKIT_MODULE("h{}", l);`.
 *
 * The first argument must be a string literal; with more arguments it is a format string checked
 * at compile time (also in C++17), formatted only when something observes modules, and owned by
 * the scope (see ModuleScope's formatted constructor). Without arguments the literal is the name.
 * Several may share one block (they nest in order). Under `NSIGHTKIT_DISABLE` it expands to
 * nothing and its arguments are not evaluated.
 */
#define NSIGHTKIT_MODULE(...) NSIGHTKIT_DETAIL_MODULE(__VA_ARGS__)

// HookHandle's members: inline header-only and disabled; in src/nsightkit.cpp compiled and
// enabled (detail/compiled.hpp).
#if !NSIGHTKIT_DETAIL_COMPILED || !NSIGHTKIT_ENABLED
#include <nsightkit/detail/module/handle_impl.hpp>
#endif
// Installing hooks: header-only here, in src/nsightkit.cpp compiled.
#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/module/install_impl.hpp>
#endif
