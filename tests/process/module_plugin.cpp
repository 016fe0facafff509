// A shared library that embeds nsightkit's module hooks, built with -fvisibility=hidden like many
// real plugins: its modules must join the host's per-thread module stack (paths continue across
// the library boundary) and the host's hooks must run for them (one registry per process).
#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>

#include <atomic>

#define NSK_PLUGIN_API extern "C" __attribute__((visibility("default")))

namespace {
struct Linear {
  int forward(int x) const { return 2 * x; }
};
nsightkit::Hooked<Linear> linear{"linear"};
std::atomic<int> plugin_hook_calls{0};
nsightkit::HookHandle plugin_hook;
}  // namespace

/// Runs module "plugin" > "linear" inside whatever module the caller is in.
NSK_PLUGIN_API int module_plugin_forward(int x) {
  nsightkit::ModuleScope scope{"plugin"};
  return linear(x);
}

/// Installs (1) or removes (0) a global pre hook from inside the plugin.
NSK_PLUGIN_API void module_plugin_hook(int on) {
  if (on != 0) {
    plugin_hook =
        nsightkit::add_pre_hook([](nsightkit::ModuleInfo const&) { ++plugin_hook_calls; });
  } else {
    plugin_hook.remove();
  }
}

NSK_PLUGIN_API int module_plugin_hook_calls() { return plugin_hook_calls.load(); }
