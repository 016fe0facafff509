/**
 * @file hooked.hpp
 * @brief nsightkit::Hooked<M> and nsightkit::instrument(): module scopes around a module type's
 *        calls, or around any callable, without editing its code.
 *
 * @code
 * struct Block {                                         // plain C++, no nsightkit inside
 *   nsightkit::Hooked<Conv> conv1{"conv1", 64, 64};      // calls run inside a ModuleScope
 *   nsightkit::Hooked<Relu> relu{"relu"};
 *   Tensor forward(Tensor x) { return relu(conv1(x)); }
 * };
 * auto fetch = nsightkit::instrument(&Loader::next, "loader");   // a function, per call
 * @endcode
 *
 * Built on ModuleScope and the hooks of module.hpp (which also includes this header, where these
 * used to live). Under `NSIGHTKIT_DISABLE` both still call the wrapped module or function and
 * return its result.
 */
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/function.hpp>
#include <nsightkit/module.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

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
  if (name.empty()) {
    NSIGHTKIT_DETAIL_THROW(std::invalid_argument(std::string{who} + ": empty module name"));
  }
  if (name.find('/') != std::string::npos) {
    NSIGHTKIT_DETAIL_THROW(std::invalid_argument(std::string{who} + ": module name \"" + name +
                                                 "\" contains '/' (names are path components)"));
  }
  return name;
}

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
 * Thread safety: calls are as thread-safe as the module's own; hooks may be added and removed
 * while other threads call the module.
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
  /// @param name the module's name: non-empty, no '/'.
  /// @param args M's constructor arguments (braces for an aggregate).
  /// @throws std::invalid_argument when `name` is empty or contains '/'; whatever M's
  ///         constructor throws; std::bad_alloc.
  template <class... Args>
  explicit Hooked(std::string name, Args&&... args)
      : name_{detail::checked_module_name(std::move(name), "nsightkit::Hooked")},
        module_(detail::construct_module<M>(std::forward<Args>(args)...)) {}

  /// Calls the module's `operator()` (else `forward`) inside the module scope.
  /// @param args forwarded to the module.
  /// @return what the module returns, exactly (references and `void` included).
  /// @throws whatever the module throws (the scope ends, post hooks run).
  template <class... Args>
  auto operator()(Args&&... args)
      -> decltype(detail::call_op_first(detail::PreferFirst{}, std::declval<M&>(),
                                        std::forward<Args>(args)...)) {
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), hooks_.get(), &module_};
    return detail::call_op_first(detail::PreferFirst{}, module_, std::forward<Args>(args)...);
  }

  /// Const call: the module's const `operator()` (else const `forward`).
  /// @param args forwarded to the module. @return what the module returns.
  /// @throws whatever the module throws.
  template <class... Args>
  auto operator()(Args&&... args) const
      -> decltype(detail::call_op_first(detail::PreferFirst{}, std::declval<M const&>(),
                                        std::forward<Args>(args)...)) {
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), hooks_.get(), &module_};
    return detail::call_op_first(detail::PreferFirst{}, module_, std::forward<Args>(args)...);
  }

  /// Calls the module's `forward` (else `operator()`) inside the module scope.
  /// @param args forwarded to the module. @return what the module returns.
  /// @throws whatever the module throws.
  template <class... Args>
  auto forward(Args&&... args)
      -> decltype(detail::call_forward_first(detail::PreferFirst{}, std::declval<M&>(),
                                             std::forward<Args>(args)...)) {
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), hooks_.get(), &module_};
    return detail::call_forward_first(detail::PreferFirst{}, module_, std::forward<Args>(args)...);
  }

  /// Const forward: the module's const `forward` (else const `operator()`).
  /// @param args forwarded to the module. @return what the module returns.
  /// @throws whatever the module throws.
  template <class... Args>
  auto forward(Args&&... args) const
      -> decltype(detail::call_forward_first(detail::PreferFirst{}, std::declval<M const&>(),
                                             std::forward<Args>(args)...)) {
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), hooks_.get(), &module_};
    return detail::call_forward_first(detail::PreferFirst{}, module_, std::forward<Args>(args)...);
  }

  /// The module itself. @return the wrapped module (calls through it run no hooks).
  [[nodiscard]] M& get() noexcept { return module_; }
  /// The module itself. @return the wrapped module.
  [[nodiscard]] M const& get() const noexcept { return module_; }
  /// Member access to the module. @return its address.
  M* operator->() noexcept { return &module_; }
  /// Member access to the module. @return its address.
  M const* operator->() const noexcept { return &module_; }
  /// The module itself. @return the wrapped module.
  M& operator*() noexcept { return module_; }
  /// The module itself. @return the wrapped module.
  M const& operator*() const noexcept { return module_; }

  /// The module's name. @return its path component and NVTX range name.
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
    return HookHandle{detail::add_hook(hooks_.shared(), std::move(h), false)};
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
    return HookHandle{detail::add_hook(hooks_.shared(), std::move(h), true)};
  }

 private:
  std::string name_;
  M module_;
  [[no_unique_address]] detail::InstanceHooks hooks_;  // empty when disabled
};

/**
 * @brief One call site's name for an instrumented function: what Instrumented::as() returns.
 *
 * Calls the Instrumented's function (the same object: its state, and ModuleInfo::module, are
 * shared with every other name it is called under) inside a module scope named by this call
 * site. Holds a pointer to the function and to the name: use it within the expression that made
 * it, or while both live. Calls are as thread-safe as the function's own.
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
  /// Calls the function (as std::invoke does) inside a module scope named by this call site.
  /// @param args forwarded to the function. @return what the function returns.
  /// @throws whatever the function throws.
  template <class... Args>
  auto operator()(Args&&... args) const -> std::invoke_result_t<F&, Args...> {
    ModuleScope const scope{detail::ModuleCall{}, name_, nullptr, fn_};
    return detail::invoke(*fn_, std::forward<Args>(args)...);
  }

  /// The call site's name. @return the module name the call runs under.
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
 * names one call site differently. Calls are as thread-safe as the function's own.
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
  /// @param fn the function (moved in).
  /// @param name the module name: non-empty, no '/'.
  /// @throws std::invalid_argument when `name` is empty or contains '/'.
  Instrumented(F fn, std::string name)
      : fn_(std::move(fn)),
        name_{detail::checked_module_name(std::move(name), "nsightkit::instrument")} {}

  /// Calls the function (as std::invoke does) inside the scope.
  /// @param args forwarded to the function. @return what the function returns.
  /// @throws whatever the function throws.
  template <class... Args>
  auto operator()(Args&&... args) -> std::invoke_result_t<F&, Args...> {
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), nullptr, &fn_};
    return detail::invoke(fn_, std::forward<Args>(args)...);
  }

  /// Calls a const function object inside the scope.
  /// @param args forwarded to the function. @return what the function returns.
  /// @throws whatever the function throws.
  template <class... Args>
  auto operator()(Args&&... args) const -> std::invoke_result_t<F const&, Args...> {
    ModuleScope const scope{detail::ModuleCall{}, name_.c_str(), nullptr, &fn_};
    return detail::invoke(fn_, std::forward<Args>(args)...);
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
  /// @param name the call site's module name (outlives the call).
  /// @return a callable for one call site.
  [[nodiscard]] InstrumentedCall<F const> as(char const* name) const& noexcept {
    return {fn_, name};
  }

  /// as() with a name held in a string that outlives the call.
  /// @param name the call site's module name. @return a callable for one call site.
  [[nodiscard]] InstrumentedCall<F> as(std::string const& name) & noexcept {
    return as(name.c_str());
  }

  /// as() on a const Instrumented, with a name held in a string that outlives the call.
  /// @param name the call site's module name. @return a callable for one call site.
  [[nodiscard]] InstrumentedCall<F const> as(std::string const& name) const& noexcept {
    return as(name.c_str());
  }

  /// Rejected: the name would die before the call.
  void as(std::string&& name) const = delete;

  /// Rejected: the call would outlive the temporary Instrumented (keep it in a variable).
  void as(char const* name) && = delete;

  /// Rejected: the call would outlive the temporary Instrumented (keep it in a variable).
  void as(std::string const& name) && = delete;

  /// The module name. @return the name the calls run under.
  [[nodiscard]] std::string const& name() const noexcept { return name_; }

  /// The wrapped function. @return the function object (or pointer) stored.
  [[nodiscard]] F const& function() const noexcept { return fn_; }

 private:
  F fn_;
  std::string name_;
};

/**
 * @brief Wraps any callable so each call runs inside a module scope named `name` — the C++
 *        form of "monkey patching" a data loader's fetch.
 *
 * @param fn a function object, function pointer or member pointer (called as std::invoke calls it).
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

// The cold parts (installing hooks, checking names): here header-only, in src/nsightkit.cpp
// compiled (detail/compiled.hpp).
#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/module/hooks_impl.hpp>
#endif
