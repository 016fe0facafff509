// Internal: the cold parts of module hooks (module.hpp, hooked.hpp) — installing a hook, a Hooked
// instance's hook set. They build shared_ptrs: header-only, hooked.hpp includes them at its end;
// in the compiled mode (detail/compiled.hpp) src/nsightkit.cpp defines them once, so that a
// translation unit that includes module.hpp instantiates none of it. (What throws for a caller's
// mistake, such as a bad module name, stays inline: built with -fno-exceptions, the caller's own
// code prints the error and aborts, config.hpp.)
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>

#include <memory>
#include <utility>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

#if NSIGHTKIT_ENABLED
NSIGHTKIT_DETAIL_ENTRY HookHandle add_hook(std::shared_ptr<module::HookSet> set, ModuleHook fn,
                                           bool post) {
  auto e = std::make_shared<detail::module::HookEntry>();
  e->fn = std::move(fn);
  detail::module::Registry& reg = detail::module::registry();
  bool const instance = set.get() != &reg.global;
  detail::module::
      start_tracking();  // hooks need paths: module scopes keep the per-thread stack from now on
  // Counted before the set holds it, so a scope that sees the hook also sees the count.
  if (instance) reg.instance_hooks.fetch_add(1, std::memory_order_relaxed);
  NSIGHTKIT_DETAIL_TRY { set->add(e, post); }
  NSIGHTKIT_DETAIL_CATCH(...) {
    if (instance) reg.instance_hooks.fetch_sub(1, std::memory_order_relaxed);
    NSIGHTKIT_DETAIL_RETHROW();  // std::bad_alloc: adding a hook may throw
  }
  return HookHandle{std::move(e), std::move(set)};
}

NSIGHTKIT_DETAIL_ENTRY std::shared_ptr<module::HookSet> global_hook_set() noexcept {
  return std::shared_ptr<module::HookSet>(std::shared_ptr<module::HookSet>{},
                                          &detail::module::registry().global);
}

NSIGHTKIT_DETAIL_MEMBER InstanceHooks::InstanceHooks()
    : set_{std::make_shared<module::HookSet>()} {}

NSIGHTKIT_DETAIL_MEMBER std::shared_ptr<module::HookSet> const& InstanceHooks::shared() {
  if (!set_) set_ = std::make_shared<module::HookSet>();
  return set_;
}
#endif

}  // namespace detail

NSIGHTKIT_DETAIL_END_NAMESPACE
