// Internal: the cold part of module hooks that module.hpp declares — installing a hook in a hook
// set and the global set. They build shared_ptrs: header-only, module.hpp includes this at its
// end; in the compiled mode (detail/compiled.hpp) src/nsightkit.cpp defines them once.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/module.hpp>

#include <memory>
#include <utility>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

#if NSIGHTKIT_ENABLED
NSIGHTKIT_DETAIL_ENTRY module::HandleState add_hook(std::shared_ptr<module::HookSet> set,
                                                    ModuleHook fn, bool post) {
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
  return module::HandleState{std::move(e), std::move(set)};
}

NSIGHTKIT_DETAIL_ENTRY std::shared_ptr<module::HookSet> global_hook_set() noexcept {
  return std::shared_ptr<module::HookSet>(std::shared_ptr<module::HookSet>{},
                                          &detail::module::registry().global);
}
#endif

}  // namespace detail

NSIGHTKIT_DETAIL_END_NAMESPACE
