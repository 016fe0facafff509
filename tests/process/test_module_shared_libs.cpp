// Module hooks across shared libraries (docs/design.md, "Process-wide state in a header-only
// library"): a plugin linked to the executable and a copy loaded with dlopen(RTLD_LOCAL), both
// built with -fvisibility=hidden, share the executable's hook registry and per-thread module
// stack.
#include <nsightkit/module.hpp>

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <string>
#include <vector>

extern "C" int module_plugin_forward(int x);  // from the linked plugin
extern "C" void module_plugin_hook(int on);
extern "C" int module_plugin_hook_calls();

TEST_CASE("module paths and hooks span the executable and its plugins") {
  void* loaded = dlopen(NSK_DLOPEN_MODULE_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(loaded != nullptr);
  auto* forward_loaded = reinterpret_cast<int (*)(int)>(dlsym(loaded, "module_plugin_forward"));
  REQUIRE(forward_loaded != nullptr);

  std::vector<std::string> paths;
  auto hook =
      nsightkit::add_pre_hook([&](nsightkit::ModuleInfo const& m) { paths.emplace_back(m.path); });
  module_plugin_hook(1);  // a hook installed by the plugin runs for the host's modules too
  {
    nsightkit::ModuleScope host{"host"};
    CHECK(module_plugin_forward(1) == 2);
    CHECK(forward_loaded(2) == 4);
  }
  module_plugin_hook(0);
  dlclose(loaded);
  if constexpr (nsightkit::enabled) {
    CHECK(paths == std::vector<std::string>{"host", "host/plugin", "host/plugin/linear",
                                            "host/plugin", "host/plugin/linear"});
    CHECK(module_plugin_hook_calls() == 5);
  } else {
    CHECK(paths.empty());
    CHECK(module_plugin_hook_calls() == 0);
  }
}
