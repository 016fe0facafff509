// Internal: the cold part of a Hooked instance's hook set (hooked.hpp); installing a hook is in
// install_impl.hpp. They build shared_ptrs: header-only, hooked.hpp includes them at its end;
// in the compiled mode (detail/compiled.hpp) src/nsightkit.cpp defines them once, so that a
// translation unit that includes hooked.hpp instantiates none of it. (What throws for a caller's
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
NSIGHTKIT_DETAIL_MEMBER InstanceHooks::InstanceHooks()
    : set_{std::make_shared<module::HookSet>()} {}

NSIGHTKIT_DETAIL_MEMBER std::shared_ptr<module::HookSet> const& InstanceHooks::shared() {
  if (!set_) set_ = std::make_shared<module::HookSet>();
  return set_;
}
#endif

}  // namespace detail

NSIGHTKIT_DETAIL_END_NAMESPACE
