// Module scopes in a binary with no NVTX tool (no Recorder linked) and no sink: with nothing
// observing, a scope keeps no state at all; the per-thread module stack ("tracking") starts with
// the first observer (here: a hook) or track_module_paths(), and then stays on.
// One test case on purpose: tracking is process-wide and sticky, so the steps must run in order.
#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace nsk = nsightkit;

namespace {
/// A format argument with a side effect: counts how often {fmt} formats it.
struct Counted {
  int value;
};
int format_calls = 0;
}  // namespace

template <>
struct fmt::formatter<Counted> : fmt::formatter<int> {
  template <class FormatContext>
  auto format(Counted const& c, FormatContext& ctx) const -> decltype(ctx.out()) {
    ++format_calls;
    return fmt::formatter<int>::format(c.value, ctx);
  }
};

TEST_CASE("tracking starts with the first observer and then stays on") {
#if NSIGHTKIT_ENABLED
  REQUIRE_FALSE(nsk::detail::nvtx_tool_listening<nsk::GlobalDomain>());  // no tool in this binary
  REQUIRE_FALSE(nsk::detail::sinks_active());
#endif
  std::vector<std::string> paths;
  auto record = [&paths](nsk::ModuleInfo const& m) { paths.emplace_back(m.path); };

  // 1. Nobody observes: scopes keep no module stack, and formatted names are not formatted.
  {
    nsk::ModuleScope a{"a"};
    nsk::ModuleScope b{"b"};
    nsk::ModuleScope h{"h{}", Counted{1}};
    NSIGHTKIT_MODULE("m{}", Counted{2});
    CHECK(nsk::current_module_path().empty());
  }
  CHECK(format_calls == 0);

  // 2. The first hook arrives while "outer" runs untracked: paths start after it.
  {
    nsk::ModuleScope outer{"outer"};
    auto h = nsk::add_pre_hook(record);
    {
      nsk::ModuleScope inner{"inner"};
      nsk::ModuleScope leaf{"leaf"};
      CHECK(nsk::current_module_path() == (nsk::enabled ? "inner/leaf" : ""));
      nsk::ModuleScope layer{"h{}", Counted{3}};  // observed now: formatted, once
      CHECK(format_calls == (nsk::enabled ? 1 : 0));
      CHECK(nsk::current_module_path() == (nsk::enabled ? "inner/leaf/h3" : ""));
    }
  }
  if (nsk::enabled) {
    CHECK(paths == std::vector<std::string>{"inner", "inner/leaf", "inner/leaf/h3"});
  } else {
    CHECK(paths.empty());
  }

  // 3. Sticky: with no hook installed any more, scopes still keep the stack (so formatted names
  //    are formatted: current_module_path() may ask for them), and a hook added in the middle of
  //    a call sees complete paths.
  paths.clear();
  {
    nsk::ModuleScope a{"a"};
    CHECK(nsk::current_module_path() == (nsk::enabled ? "a" : ""));
    {
      NSIGHTKIT_MODULE("m{}", Counted{4});
      CHECK(format_calls == (nsk::enabled ? 2 : 0));
      CHECK(nsk::current_module_path() == (nsk::enabled ? "a/m4" : ""));
    }
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
