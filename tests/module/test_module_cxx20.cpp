// Formatted module names compiled as C++20, where {fmt}'s format strings are checked by a
// consteval constructor: ModuleScope{"h{}", l} and NSIGHTKIT_MODULE must both compile (a format
// string passed on through a function parameter is not a constant expression there) and name
// their scopes as in C++17. module.cmake builds this file with CXX_STANDARD 20.
#include "support.hpp"

#include <nsightkit/module.hpp>

#include <string>
#include <vector>

#if __cplusplus < 202002L
#error "test_module_cxx20.cpp must be compiled as C++20 (see tests/module/module.cmake)"
#endif

namespace nsk = nsightkit;
using nsightkit::testing::Recorder;
using nsk_test::expect;

TEST_CASE("C++20: formatted module names, by constructor and by macro") {
  Recorder rec;
  std::vector<std::string> paths;
  auto pre = nsk::add_pre_hook([&](nsk::ModuleInfo const& m) { paths.emplace_back(m.path); });
  int evaluated = 0;
  {
    nsk::ModuleScope model{"model"};
    for (int l = 0; l < 2; ++l) {
      nsk::ModuleScope layer{"h{}", l};
      NSIGHTKIT_MODULE("attn{}_{}", l, "q");
      NSIGHTKIT_MODULE("mlp");
      NSIGHTKIT_MODULE("n{}", ++evaluated);
    }
  }
  CHECK(evaluated == (nsk::enabled ? 2 : 0));
  CHECK(rec.lines() ==
        expect({"push nsightkit model", "push nsightkit h0", "push nsightkit attn0_q",
                "push nsightkit mlp", "push nsightkit n1", "pop nsightkit", "pop nsightkit",
                "pop nsightkit", "pop nsightkit", "push nsightkit h1", "push nsightkit attn1_q",
                "push nsightkit mlp", "push nsightkit n2", "pop nsightkit", "pop nsightkit",
                "pop nsightkit", "pop nsightkit", "pop nsightkit"}));
  if (nsk::enabled) {
    CHECK(paths == std::vector<std::string>{"model", "model/h0", "model/h0/attn0_q",
                                            "model/h0/attn0_q/mlp", "model/h0/attn0_q/mlp/n1",
                                            "model/h1", "model/h1/attn1_q", "model/h1/attn1_q/mlp",
                                            "model/h1/attn1_q/mlp/n2"});
  } else {
    CHECK(paths.empty());
  }
}
