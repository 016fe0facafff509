// Module scopes in a binary with no NVTX tool (no Recorder linked) and no sink: with nothing
// observing, a scope keeps no state at all; the per-thread module stack ("tracking") starts with
// the first observer (here: a hook) or track_module_paths(), and then stays on.
// One test case on purpose: tracking is process-wide and sticky, so the steps must run in order.
#include <nsightkit/module.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace nsk = nsightkit;

TEST_CASE("tracking starts with the first observer and then stays on") {
#if NSIGHTKIT_ENABLED
  REQUIRE_FALSE(nsk::detail::nvtx_listening<nsk::GlobalDomain>());  // no tool in this binary
  REQUIRE_FALSE(nsk::detail::sinks_active());
#endif
  std::vector<std::string> paths;
  auto record = [&paths](nsk::ModuleInfo const& m) { paths.emplace_back(m.path); };

  // 1. Nobody observes: scopes keep no module stack.
  {
    nsk::ModuleScope a{"a"};
    nsk::ModuleScope b{"b"};
    CHECK(nsk::current_module_path().empty());
  }

  // 2. The first hook arrives while "outer" runs untracked: paths start after it.
  {
    nsk::ModuleScope outer{"outer"};
    auto h = nsk::add_pre_hook(record);
    {
      nsk::ModuleScope inner{"inner"};
      nsk::ModuleScope leaf{"leaf"};
      CHECK(nsk::current_module_path() == (nsk::enabled ? "inner/leaf" : ""));
    }
  }
  if (nsk::enabled) {
    CHECK(paths == std::vector<std::string>{"inner", "inner/leaf"});
  } else {
    CHECK(paths.empty());
  }

  // 3. Sticky: with no hook installed any more, scopes still keep the stack, so a hook added in
  //    the middle of a call sees complete paths.
  paths.clear();
  {
    nsk::ModuleScope a{"a"};
    CHECK(nsk::current_module_path() == (nsk::enabled ? "a" : ""));
    auto h = nsk::add_pre_hook(record);
    nsk::ModuleScope b{"b"};
  }
  if (nsk::enabled) {
    CHECK(paths == std::vector<std::string>{"a/b"});
  } else {
    CHECK(paths.empty());
  }
  nsk::track_module_paths();  // already on: no effect, no harm
  {
    nsk::Hooked<std::vector<int>> v{"v", 2u, 1};
    CHECK(v->size() == 2u);
  }
}
