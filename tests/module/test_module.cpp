// Module hooks: ModuleScope, hooks, handles, domains (module.hpp); Hooked, instrument (hooked.hpp).
// Every NVTX emission is asserted through the Recorder; under NSIGHTKIT_DISABLE the same tests
// prove that nothing is emitted, no hook runs, and Hooked/instrument still call through.
#include "support.hpp"

#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>

#include <fmt/format.h>  // the formatter below derives from formatter<int>, defined there

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

// Allocation counter (alloc_counter.cpp replaces operator new): proves the per-call path
// allocates nothing once a model's paths are known.
namespace nsk_test {
extern std::atomic<bool> count_allocations;
extern std::atomic<long> allocations;
extern bool const allocation_counting;  // false where a sanitizer owns operator new
}  // namespace nsk_test
using nsk_test::allocations;
using nsk_test::count_allocations;

namespace nsk = nsightkit;
using nsightkit::testing::EventKind;
using nsightkit::testing::Recorder;
using nsk::Hooked;
using nsk::ModuleInfo;
using nsk::ModuleScope;
using nsk_test::expect;
using Lines = std::vector<std::string>;

namespace {

struct ModelDomain {
  static constexpr char const* name{"model"};
};

/// Restores the default module domain and ranges when a test ends, whatever happened.
struct DomainGuard {
  DomainGuard() = default;
  DomainGuard(DomainGuard const&) = delete;
  DomainGuard& operator=(DomainGuard const&) = delete;
  ~DomainGuard() {
    nsk::set_module_domain<nsk::DefaultDomain>();
    nsk::set_module_ranges(true);
  }
};

// ---- a ResNet-shaped model of plain C++ structs (no nsightkit inside the leaf modules) ----

struct Conv {  // aggregate, forward()
  int scale;
  int forward(int x) const { return x * scale; }
};
struct BatchNorm {  // aggregate, operator()
  int shift;
  int operator()(int x) const { return x + shift; }
};
struct ReLU {
  int operator()(int x) const { return x < 0 ? 0 : x; }
};

struct ThrowingConv {
  int forward(int) const { throw std::runtime_error("conv2 failed"); }
};

struct BasicBlock {
  Hooked<Conv> conv1{"conv1", 2};
  Hooked<BatchNorm> bn1{"bn1", -1};
  Hooked<ReLU> relu{"relu"};  // called twice per block, like torchvision's BasicBlock
  Hooked<Conv> conv2{"conv2", 1};
  Hooked<BatchNorm> bn2{"bn2", 0};
  std::optional<Hooked<Conv>> downsample;
  std::optional<Hooked<ThrowingConv>> failing;  // replaces conv2 when set

  int forward(int x) {
    int out = bn1(conv1.forward(x));
    out = relu(out);
    out = failing ? (*failing)(out) : conv2(out);
    out = bn2(out);
    int const identity = downsample ? (*downsample)(x) : x;
    return relu(out + identity);
  }
};

struct Stem {
  Hooked<Conv> conv{"conv", 2};
  Hooked<BatchNorm> bn{"bn", 1};
  Hooked<ReLU> relu{"relu"};
  int operator()(int x) { return relu(bn(conv(x))); }
};

struct Layer {
  std::vector<Hooked<BasicBlock>> blocks;
  explicit Layer(int n, bool downsample_first) {
    blocks.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) blocks.emplace_back(std::to_string(i));
    if (downsample_first) blocks[0]->downsample.emplace("downsample", 3);
  }
  int forward(int x) {
    for (auto& b : blocks) x = b(x);
    return x;
  }
};

struct Backbone {  // edits its own forward: one ModuleScope line
  Hooked<Stem> stem{"stem"};
  Hooked<Layer> layer1{"layer1", 2, false};
  Hooked<Layer> layer2{"layer2", 2, true};
  int forward(int x) {
    ModuleScope scope{"backbone"};
    return layer2(layer1(stem(x)));
  }
};

struct Head {  // modules as member functions with their own scopes
  int pool(int x) const {
    ModuleScope scope{"pool"};
    return x / 2;
  }
  int fc(int x) const {
    ModuleScope scope{"fc"};
    return x + 100;
  }
  int forward(int x) const {
    ModuleScope scope{"head"};
    return fc(pool(x));
  }
};

struct Model {  // not a module itself: "backbone" and "head" are outermost
  Backbone backbone;
  Head head;
  int forward(int x) { return head.forward(backbone.forward(x)); }
};

/// The model's arithmetic, written out without nsightkit.
int expected_output(int x) {
  auto block = [](int v, int ds_scale) { return (2 * v - 1) + (ds_scale == 0 ? v : ds_scale * v); };
  int v = 2 * x + 1;          // stem
  v = block(block(v, 0), 0);  // layer1
  v = block(block(v, 3), 0);  // layer2, block 0 downsamples
  return v / 2 + 100;         // head
}

/// Builds the expected range sequence and module paths of one Model::forward, by hand.
struct Expected {
  std::string domain{"nsightkit"};
  Lines lines;
  std::vector<std::string> paths;  // pre-hook order
  std::vector<int> depths;
  std::vector<std::string> stack;

  void push(std::string const& n) {
    lines.push_back("push " + domain + " " + n);
    std::string p;
    for (auto const& s : stack) p += s + "/";
    paths.push_back(p + n);
    depths.push_back(static_cast<int>(stack.size()));
    stack.push_back(n);
  }
  void pop() {
    lines.push_back("pop " + domain);
    stack.pop_back();
  }
  void leaf(std::string const& n) {
    push(n);
    pop();
  }
  void block(std::string const& n, bool downsample) {
    push(n);
    for (char const* m : {"conv1", "bn1", "relu", "conv2", "bn2"}) leaf(m);
    if (downsample) leaf("downsample");
    leaf("relu");
    pop();
  }
  void model() {
    push("backbone");
    push("stem");
    for (char const* m : {"conv", "bn", "relu"}) leaf(m);
    pop();
    push("layer1");
    block("0", false);
    block("1", false);
    pop();
    push("layer2");
    block("0", true);
    block("1", false);
    pop();
    pop();
    push("head");
    leaf("pool");
    leaf("fc");
    pop();
  }
};

/// Records every ModuleInfo the global pre (and optionally post) hooks see.
struct InfoLog {
  std::vector<std::string> paths;
  std::vector<std::string> names;
  std::vector<int> depths;
  std::vector<std::uint64_t> counts;
  std::vector<std::thread::id> threads;
  std::vector<void const*> modules;
};

}  // namespace

TEST_CASE("module types keep their shape") {
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<ModuleScope>);
  STATIC_REQUIRE_FALSE(std::is_move_constructible_v<ModuleScope>);
  STATIC_REQUIRE(std::is_nothrow_constructible_v<ModuleScope, char const*>);
  STATIC_REQUIRE(std::is_nothrow_destructible_v<ModuleScope>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<ModuleScope, std::string&&>);  // would dangle
  STATIC_REQUIRE(std::is_constructible_v<ModuleScope, std::string const&>);
  STATIC_REQUIRE(std::is_constructible_v<ModuleScope, char const(&)[4], int>);  // {"h{}", l}
  STATIC_REQUIRE(std::is_constructible_v<ModuleScope, char const(&)[7], int, char const*>);
  STATIC_REQUIRE(std::is_move_constructible_v<nsk::HookHandle>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<nsk::HookHandle>);
  STATIC_REQUIRE(std::is_copy_constructible_v<Hooked<Conv>>);
  STATIC_REQUIRE(std::is_move_constructible_v<Hooked<Conv>>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<Hooked<std::unique_ptr<int>>>);
  STATIC_REQUIRE(std::is_move_constructible_v<Hooked<std::unique_ptr<int>>>);
#if !NSIGHTKIT_ENABLED
  STATIC_REQUIRE(std::is_empty_v<ModuleScope>);
  STATIC_REQUIRE(std::is_trivially_destructible_v<ModuleScope>);
#endif
}

TEST_CASE("a ResNet-shaped tree emits the nested module ranges, named by module name") {
  Recorder rec;
  Model model;
  int const y = model.forward(3);
  CHECK(y == expected_output(3));
  Expected e;
  e.model();
  REQUIRE(rec.lines() == expect(e.lines));
  CHECK(rec.open_ranges() == 0);
  // NVTX's own nesting depth follows the module depth.
  std::vector<int> push_depths;
  for (auto const& ev : rec.range_events()) {
    if (ev.kind == EventKind::push) push_depths.push_back(ev.depth - 1);
  }
  if (nsk::enabled) CHECK(push_depths == e.depths);
}

TEST_CASE("hooks see name, path, depth, per-path call count and thread") {
  Model model;
  InfoLog log;
  std::map<std::string, std::uint64_t> last_count;
  auto pre = nsk::add_pre_hook([&](ModuleInfo const& m) {
    log.paths.emplace_back(m.path);
    log.names.emplace_back(m.name);
    log.depths.push_back(m.depth);
    log.counts.push_back(m.call_count);
    log.threads.push_back(m.thread);
    last_count[std::string{m.path}] = m.call_count;
  });
  REQUIRE(model.forward(3) == expected_output(3));
  REQUIRE(model.forward(4) == expected_output(4));
  Expected e;
  e.model();
  e.model();
  if (!nsk::enabled) {
    CHECK(log.paths.empty());
    return;
  }
  REQUIRE(log.paths == e.paths);
  CHECK(log.depths == e.depths);
  for (std::size_t i = 0; i < log.paths.size(); ++i) {
    std::string const& p = log.paths[i];
    CHECK(log.names[i] == p.substr(p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1));
    CHECK(log.threads[i] == std::this_thread::get_id());
  }
  // Counts are per path: each path numbers its own calls 1, 2, 3, ... however the calls of
  // different paths interleave ("relu" of a block runs twice per forward). Relative to the first
  // call seen, so the test also holds when other tests of this process ran the model with hooks.
  std::map<std::string, std::vector<std::uint64_t>> by_path;
  for (std::size_t i = 0; i < log.paths.size(); ++i) by_path[log.paths[i]].push_back(log.counts[i]);
  for (auto const& [path, counts] : by_path) {
    INFO(path);
    CHECK(counts.front() >= 1u);
    for (std::size_t i = 0; i < counts.size(); ++i) CHECK(counts[i] == counts.front() + i);
  }
  CHECK(by_path.at("backbone").size() == 2u);
  CHECK(by_path.at("backbone/layer1/0/relu").size() == 4u);
  CHECK(by_path.at("backbone/layer2/0/downsample").size() == 2u);
  CHECK(last_count.at("head/fc") == by_path.at("head/fc").back());
}

TEST_CASE("ModuleInfo::module is the wrapped object, and post hooks see the same info") {
  Hooked<Conv> conv{"conv", 3};
  std::vector<void const*> pre_modules;
  std::vector<std::string> post_paths;
  std::vector<bool> post_unwinding;
  auto pre = nsk::add_pre_hook([&](ModuleInfo const& m) { pre_modules.push_back(m.module); });
  auto post = nsk::add_post_hook([&](ModuleInfo const& m) {
    post_paths.emplace_back(m.path);
    post_unwinding.push_back(m.unwinding);
  });
  {
    ModuleScope outer{"outer"};
    CHECK(conv(2) == 6);
  }
  if (nsk::enabled) {
    CHECK(pre_modules == std::vector<void const*>{nullptr, &conv.get()});
    CHECK(post_paths == std::vector<std::string>{"outer/conv", "outer"});
    CHECK(post_unwinding == std::vector<bool>{false, false});
  } else {
    CHECK(pre_modules.empty());
    CHECK(post_paths.empty());
  }
}

namespace {
struct RegistrationDomain {
  static constexpr char const* name{"registration-test"};
};
}  // namespace

TEST_CASE("module names are registered NVTX strings, registered once per domain") {
  Recorder rec;
  DomainGuard guard;
  nsk::set_module_domain<RegistrationDomain>();  // a domain no other test uses
  Model model;
  (void)model.forward(1);
  (void)model.forward(2);
  std::map<std::string, int> registrations;
  for (auto const& ev : rec.events()) {
    if (ev.kind == EventKind::register_string && ev.domain == "registration-test") {
      ++registrations[ev.message];
    }
  }
  Expected e;
  e.domain = "registration-test";
  e.model();
  std::size_t expected_pushes = 0;
  std::map<std::string, int> expected_registrations;
  for (auto const& l : e.lines) {
    if (l.rfind("push ", 0) == 0) {
      ++expected_pushes;
      expected_registrations[l.substr(l.rfind(' ') + 1)] = 1;  // each distinct name once
    }
  }
  if (nsk::enabled) {
    CHECK(registrations == expected_registrations);
  } else {
    CHECK(registrations.empty());
  }
  std::size_t pushes = 0;
  for (auto const& ev : rec.range_events()) {
    if (ev.kind != EventKind::push) continue;
    ++pushes;
    CHECK(ev.registered);
  }
  CHECK(pushes == (nsk::enabled ? 2 * expected_pushes : 0u));
}

TEST_CASE("the same module called from two parents gets two paths") {
  Recorder rec;
  Hooked<Conv> shared{"shared", 1};
  std::vector<std::string> paths;
  std::vector<std::uint64_t> counts;
  auto pre = nsk::add_pre_hook([&](ModuleInfo const& m) {
    if (m.name == "shared") {
      paths.emplace_back(m.path);
      counts.push_back(m.call_count);
    }
  });
  for (int i = 0; i < 2; ++i) {
    {
      ModuleScope a{"encoder"};
      (void)shared(i);
    }
    {
      ModuleScope b{"decoder"};
      (void)shared(i);
    }
  }
  REQUIRE(rec.lines() == expect({"push nsightkit encoder", "push nsightkit shared", "pop nsightkit",
                                 "pop nsightkit", "push nsightkit decoder", "push nsightkit shared",
                                 "pop nsightkit", "pop nsightkit", "push nsightkit encoder",
                                 "push nsightkit shared", "pop nsightkit", "pop nsightkit",
                                 "push nsightkit decoder", "push nsightkit shared", "pop nsightkit",
                                 "pop nsightkit"}));
  if (nsk::enabled) {
    CHECK(paths == std::vector<std::string>{"encoder/shared", "decoder/shared", "encoder/shared",
                                            "decoder/shared"});
    CHECK(counts == std::vector<std::uint64_t>{1, 1, 2, 2});
  } else {
    CHECK(paths.empty());
  }
}

namespace {
int fib(int n) {
  ModuleScope scope{"fib"};
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}
}  // namespace

TEST_CASE("recursion: a module inside itself nests its path") {
  Recorder rec;
  std::vector<std::string> paths;
  std::vector<std::uint64_t> counts;
  auto pre = nsk::add_pre_hook([&](ModuleInfo const& m) {
    paths.emplace_back(m.path);
    counts.push_back(m.call_count);
  });
  CHECK(fib(3) == 2);
  // fib(3) -> fib(2) -> {fib(1), fib(0)}, then fib(1)
  REQUIRE(rec.lines() ==
          expect({"push nsightkit fib", "push nsightkit fib", "push nsightkit fib", "pop nsightkit",
                  "push nsightkit fib", "pop nsightkit", "pop nsightkit", "push nsightkit fib",
                  "pop nsightkit", "pop nsightkit"}));
  if (nsk::enabled) {
    CHECK(paths ==
          std::vector<std::string>{"fib", "fib/fib", "fib/fib/fib", "fib/fib/fib", "fib/fib"});
    CHECK(counts[2] + 1 == counts[3]);  // fib(1) and fib(0) under fib(2): same path, next call
    CHECK(counts[1] + 1 == counts[4]);  // fib(2) and fib(1) under fib(3)
  }
}

TEST_CASE("an exception thrown in a deep module pops every range on the way out") {
  Recorder rec;
  Model model;
  model.backbone.layer2->blocks[1]->failing.emplace("conv2");
  std::vector<std::string> unwound;
  auto post = nsk::add_post_hook([&](ModuleInfo const& m) {
    if (m.unwinding) unwound.emplace_back(m.path);
  });
  REQUIRE_THROWS_WITH(model.forward(3), "conv2 failed");
  Expected e;
  e.push("backbone");
  e.push("stem");
  for (char const* m : {"conv", "bn", "relu"}) e.leaf(m);
  e.pop();
  e.push("layer1");
  e.block("0", false);
  e.block("1", false);
  e.pop();
  e.push("layer2");
  e.block("0", true);
  e.push("1");
  for (char const* m : {"conv1", "bn1", "relu"}) e.leaf(m);
  e.push("conv2");  // throws: everything below pops
  for (int i = 0; i < 4; ++i) e.pop();
  REQUIRE(rec.lines() == expect(e.lines));
  CHECK(rec.open_ranges() == 0);
  if (nsk::enabled) {
    CHECK(unwound == std::vector<std::string>{"backbone/layer2/1/conv2", "backbone/layer2/1",
                                              "backbone/layer2", "backbone"});
  } else {
    CHECK(unwound.empty());
  }
  // The thread's module stack is intact: the next module is outermost again.
  CHECK(nsk::current_module_path().empty());
  {
    ModuleScope after{"after"};
    CHECK(nsk::current_module_path() == (nsk::enabled ? "after" : ""));
  }
}

TEST_CASE("hook order: range push, global pre, instance pre ... global post, instance post, pop") {
  Recorder rec;
  std::vector<std::string> order;
  Hooked<Conv> conv{"conv", 1};
  auto g1 = nsk::add_pre_hook([&](ModuleInfo const&) { order.emplace_back("global pre 1"); });
  auto i1 = conv.add_pre_hook([&](ModuleInfo const&) { order.emplace_back("instance pre 1"); });
  auto g2 = nsk::add_pre_hook([&](ModuleInfo const&) { order.emplace_back("global pre 2"); });
  auto gp = nsk::add_post_hook([&](ModuleInfo const&) { order.emplace_back("global post"); });
  auto ip = conv.add_post_hook([&](ModuleInfo const&) { order.emplace_back("instance post"); });
  auto probe = conv.add_pre_hook([&](ModuleInfo const&) {
    // The range is already open when pre hooks run.
    if (nsk::enabled) CHECK(rec.lines() == Lines{"push nsightkit conv"});
  });
  (void)conv(1);
  if (nsk::enabled) {
    CHECK(order == std::vector<std::string>{"global pre 1", "global pre 2", "instance pre 1",
                                            "global post", "instance post"});
  } else {
    CHECK(order.empty());
  }
  CHECK(rec.lines() == expect({"push nsightkit conv", "pop nsightkit"}));
}

TEST_CASE("instance hooks run only for their instance, and copies do not share them") {
  Hooked<Conv> a{"conv", 1};
  Hooked<Conv> b{"conv", 1};
  int a_calls = 0;
  auto h = a.add_pre_hook([&](ModuleInfo const& m) {
    ++a_calls;
    CHECK(m.module == &a.get());
  });
  (void)a(1);
  (void)b(1);
  Hooked<Conv> copy = a;
  (void)copy(1);
  CHECK(a_calls == (nsk::enabled ? 1 : 0));
  Hooked<Conv> moved = std::move(a);  // a move takes the instance's hooks along
  h.remove();
  (void)moved(1);
  CHECK(a_calls == (nsk::enabled ? 1 : 0));
}

TEST_CASE("a move takes instance hooks along, and the handle still removes them") {
  Hooked<Conv> a{"conv", 1};
  int calls = 0;
  auto h = a.add_post_hook([&](ModuleInfo const&) { ++calls; });
  Hooked<Conv> moved = std::move(a);
  (void)moved(1);
  CHECK(calls == (nsk::enabled ? 1 : 0));
  h.remove();
  (void)moved(1);
  CHECK(calls == (nsk::enabled ? 1 : 0));
}

TEST_CASE("handles: RAII removal, explicit remove, move, release, empty") {
  int calls = 0;
  auto count = [&](ModuleInfo const&) { ++calls; };
  auto run = [] { ModuleScope s{"m"}; };
  int const on = nsk::enabled ? 1 : 0;
  {
    auto h = nsk::add_pre_hook(count);
    CHECK(h.active() == nsk::enabled);
    run();
    CHECK(calls == on);
  }  // destroyed: removed
  run();
  CHECK(calls == on);

  auto h = nsk::add_pre_hook(count);
  run();
  CHECK(calls == 2 * on);
  h.remove();
  h.remove();  // idempotent
  CHECK_FALSE(h.active());
  run();
  CHECK(calls == 2 * on);

  nsk::HookHandle moved;
  CHECK_FALSE(moved);
  {
    auto h2 = nsk::add_pre_hook(count);
    moved = std::move(h2);
    CHECK_FALSE(h2.active());
  }  // the moved-from handle removes nothing
  run();
  CHECK(calls == 3 * on);
  moved = nsk::HookHandle{};  // assignment removes the previous hook
  run();
  CHECK(calls == 3 * on);

  // release(): the hook stays for the life of its set (here an instance's set).
  {
    Hooked<Conv> conv{"conv", 1};
    {
      auto r = conv.add_pre_hook(count);
      r.release();
      CHECK_FALSE(r.active());
    }
    (void)conv(1);
    (void)conv(1);
    CHECK(calls == 5 * on);
  }
#if NSIGHTKIT_ENABLED
  // The released hook died with its instance: no instance hook is left installed anywhere, so
  // Hooked calls are back on the fast path (the process-wide count is exact).
  CHECK(nsk::detail::module::registry().instance_hooks.load() == 0);
  CHECK(nsk::detail::module::registry().global.count() == 0);
#endif
}

TEST_CASE("a handle may outlive the Hooked instance it was added to") {
  nsk::HookHandle h;
  {
    Hooked<Conv> conv{"conv", 1};
    h = conv.add_pre_hook([](ModuleInfo const&) {});
  }
  h.remove();  // the instance is gone: nothing to do, nothing breaks
  CHECK_FALSE(h.active());
}

TEST_CASE("a hook may remove itself while it runs") {
  int calls = 0;
  nsk::HookHandle self;
  self = nsk::add_pre_hook([&](ModuleInfo const&) {
    ++calls;
    self.remove();  // must not wait for itself
  });
  { ModuleScope s{"m"}; }
  { ModuleScope s{"m"}; }
  CHECK(calls == (nsk::enabled ? 1 : 0));
}

TEST_CASE("hooks do not run for modules called from inside a hook, their ranges do") {
  Recorder rec;
  Hooked<Conv> helper{"helper", 1};
  int calls = 0;
  auto h = nsk::add_pre_hook([&](ModuleInfo const& m) {
    ++calls;
    if (m.name == "outer") (void)helper(1);  // would recurse forever if hooks ran here
  });
  { ModuleScope s{"outer"}; }
  CHECK(calls == (nsk::enabled ? 1 : 0));
  CHECK(rec.lines() == expect({"push nsightkit outer", "push nsightkit helper", "pop nsightkit",
                               "pop nsightkit"}));
}

TEST_CASE("a throwing hook does not break the module or the other hooks") {
  Recorder rec;
  Hooked<Conv> conv{"conv", 5};
  int after = 0;
  auto bad = nsk::add_pre_hook([](ModuleInfo const&) { throw std::runtime_error("hook bug"); });
  auto bad_post = nsk::add_post_hook([](ModuleInfo const&) { throw 42; });
  auto good = nsk::add_pre_hook([&](ModuleInfo const&) { ++after; });
  int result = 0;
  REQUIRE_NOTHROW(result = conv(2));
  CHECK(result == 10);
  CHECK(after == (nsk::enabled ? 1 : 0));
  CHECK(rec.lines() == expect({"push nsightkit conv", "pop nsightkit"}));
}

TEST_CASE("empty hooks and bad module names are clear errors") {
  CHECK_THROWS_AS(nsk::add_pre_hook(nsk::ModuleHook{}), std::invalid_argument);
  void (*null_fn)(ModuleInfo const&) = nullptr;
  CHECK_THROWS_AS(nsk::add_post_hook(null_fn), std::invalid_argument);
  Hooked<Conv> conv{"conv", 1};
  CHECK_THROWS_AS(conv.add_pre_hook(nsk::ModuleHook{}), std::invalid_argument);
  CHECK_THROWS_WITH(Hooked<Conv>("", 1), Catch::Contains("empty module name"));
  CHECK_THROWS_WITH(Hooked<Conv>("layer1/conv", 1),
                    Catch::Contains("\"layer1/conv\" contains '/'"));
  CHECK_THROWS_AS(nsk::instrument([] {}, "a/b"), std::invalid_argument);
  CHECK_THROWS_AS(nsk::instrument([] {}, ""), std::invalid_argument);
}

TEST_CASE("set_module_domain chooses the domain of module ranges at run time") {
  Recorder rec;
  DomainGuard guard;
  CHECK(std::string{nsk::module_domain()} == (nsk::enabled ? "nsightkit" : "nsightkit"));
  Hooked<Conv> conv{"conv", 1};
  {
    ModuleScope outer{"outer"};
    nsk::set_module_domain<ModelDomain>();  // outer still pops in its own domain
    (void)conv(1);
  }
  (void)conv(1);
  nsk::set_module_domain<nsk::GlobalDomain>();
  (void)conv(1);
  REQUIRE(rec.lines() ==
          expect({"push nsightkit outer", "push model conv", "pop model", "pop nsightkit",
                  "push model conv", "pop model", "push <global> conv", "pop <global>"}));
  if (nsk::enabled) CHECK(std::string{nsk::module_domain()}.empty());
}

TEST_CASE("set_module_ranges(false): no ranges, user hooks still run") {
  Recorder rec;
  DomainGuard guard;
  int calls = 0;
  auto h = nsk::add_pre_hook([&](ModuleInfo const&) { ++calls; });
  nsk::set_module_ranges(false);
  CHECK_FALSE(nsk::module_ranges());
  { ModuleScope s{"quiet"}; }
  nsk::set_module_ranges(true);
  CHECK(nsk::module_ranges() == nsk::enabled);
  { ModuleScope s{"loud"}; }
  CHECK(calls == (nsk::enabled ? 2 : 0));
  CHECK(rec.lines() == expect({"push nsightkit loud", "pop nsightkit"}));
}

TEST_CASE("current_module_path names the innermost module of the thread") {
  CHECK(nsk::current_module_path().empty());
  {
    ModuleScope a{"a"};
    {
      ModuleScope b{"b"};
      CHECK(nsk::current_module_path() == (nsk::enabled ? "a/b" : ""));
    }
    CHECK(nsk::current_module_path() == (nsk::enabled ? "a" : ""));
  }
  CHECK(nsk::current_module_path().empty());
}

TEST_CASE("a hook installed while a module runs sees full paths of modules begun after") {
  std::vector<std::string> paths;
  nsk::HookHandle h;
  {
    ModuleScope a{"a"};  // no hook yet: nothing is resolved here
    ModuleScope b{"b"};
    h = nsk::add_pre_hook([&](ModuleInfo const& m) { paths.emplace_back(m.path); });
    ModuleScope c{"c"};
  }
  if (nsk::enabled) {
    CHECK(paths == std::vector<std::string>{"a/b/c"});
  } else {
    CHECK(paths.empty());
  }
}

TEST_CASE("Hooked forwards references, move-only types, void and const calls exactly") {
  struct RefModule {
    int& forward(int& x) { return x; }
    std::string&& operator()(std::string&& s) { return std::move(s); }
  };
  struct MoveOnly {
    std::unique_ptr<int> forward(std::unique_ptr<int> p) {
      *p += 1;
      return p;
    }
  };
  struct VoidModule {
    int* seen;
    void operator()(int v) { *seen = v; }
  };
  struct ConstAware {
    int operator()() const { return 1; }
    int operator()() { return 2; }
  };
  Hooked<RefModule> ref{"ref"};
  int x = 1;
  STATIC_REQUIRE(std::is_same_v<decltype(ref.forward(x)), int&>);
  CHECK(&ref.forward(x) == &x);
  std::string s = "payload";
  STATIC_REQUIRE(std::is_same_v<decltype(ref(std::move(s))), std::string&&>);
  std::string&& r = ref(std::move(s));
  CHECK(&r == &s);

  Hooked<MoveOnly> mo{"mo"};
  STATIC_REQUIRE(std::is_same_v<decltype(mo(std::unique_ptr<int>{})), std::unique_ptr<int>>);
  auto p = mo(std::make_unique<int>(41));
  REQUIRE(p);
  CHECK(*p == 42);

  int seen = 0;
  Hooked<VoidModule> v{"void", &seen};
  STATIC_REQUIRE(std::is_void_v<decltype(v(7))>);
  v(7);
  CHECK(seen == 7);

  Hooked<ConstAware> ca{"ca"};
  Hooked<ConstAware> const& cref = ca;
  CHECK(ca() == 2);
  CHECK(cref() == 1);
  CHECK(cref.forward() == 1);
}

TEST_CASE("Hooked: operator() prefers the call operator, forward() prefers forward") {
  struct Both {
    int operator()(int) { return 1; }
    int forward(int) { return 2; }
  };
  struct OnlyForward {
    int forward(int) { return 3; }
  };
  struct OnlyCall {
    int operator()(int) { return 4; }
  };
  Hooked<Both> both{"both"};
  Hooked<OnlyForward> of{"of"};
  Hooked<OnlyCall> oc{"oc"};
  CHECK(both(0) == 1);
  CHECK(both.forward(0) == 2);
  CHECK(of(0) == 3);
  CHECK(of.forward(0) == 3);
  CHECK(oc(0) == 4);
  CHECK(oc.forward(0) == 4);
  // Wrong arguments are not callable (SFINAE-friendly), so errors point at the call.
  STATIC_REQUIRE_FALSE(std::is_invocable_v<Hooked<OnlyForward>&, std::string>);
  STATIC_REQUIRE(std::is_invocable_v<Hooked<OnlyForward>&, int>);
  // get(), * and -> reach the module; calls through them run no hooks.
  Hooked<Conv> conv{"conv", 4};
  conv->scale = 5;
  CHECK((*conv).scale == 5);
  CHECK(conv.get().forward(2) == 10);
  CHECK(conv.name() == "conv");
}

TEST_CASE("Hooked builds modules with parentheses or braces and non-movable modules in place") {
  struct Pinned {
    explicit Pinned(int v) : value{v} {}
    Pinned(Pinned const&) = delete;
    Pinned& operator=(Pinned const&) = delete;
    int operator()() const { return value; }
    int value;
  };
  Hooked<Pinned> pinned{"pinned", 9};
  CHECK(pinned() == 9);
  Hooked<std::vector<int>> vec{"vec", 3u, 7};  // parentheses: three sevens
  CHECK(vec->size() == 3u);
  Hooked<Conv> agg{"agg", 6};  // braces: aggregate
  CHECK(agg->scale == 6);
}

TEST_CASE("instrument calls as std::invoke does: member pointers on objects, pointers, wrappers") {
  struct Loader {
    long base;
    long next(long i) const { return base + i; }
    long& grow(long by) { return base += by; }
  };
  Loader loader{100};
  Loader const& cref = loader;
  auto next = nsk::instrument(&Loader::next, "next");
  CHECK(next(loader, 1) == std::invoke(&Loader::next, loader, 1));
  CHECK(next(&loader, 2) == 102);
  CHECK(next(cref, 3) == 103);
  CHECK(next(std::cref(loader), 4) == 104);
  auto owned = std::make_unique<Loader>(Loader{7});
  CHECK(next(owned, 1) == 8);
  CHECK(next(Loader{50}, 5) == 55);

  auto grow = nsk::instrument(&Loader::grow, "grow");
  long& grown = grow(std::ref(loader), 10);  // a reference comes back, as std::invoke gives it
  CHECK(&grown == &loader.base);
  CHECK(loader.base == 110);

  auto base = nsk::instrument(&Loader::base, "base");
  static_assert(std::is_same_v<decltype(base(loader)), long&>);
  static_assert(std::is_same_v<decltype(base(Loader{1})), long&&>);
  static_assert(std::is_same_v<decltype(base(&cref)), long const&>);
  base(loader) = 5;
  CHECK(loader.base == 5);
  CHECK(base(std::cref(loader)) == 5);
  CHECK(base(owned) == 7);
}

TEST_CASE("instrument keeps results and exceptions, and runs inside a module range") {
  Recorder rec;
  int state = 0;
  auto fetch = nsk::instrument([&state](int i) mutable { return state += i; }, "fetch");
  CHECK(fetch(2) == 2);
  CHECK(fetch(3) == 5);
  CHECK(fetch.name() == "fetch");

  auto make = nsk::instrument([] { return std::make_unique<int>(7); }, "make");
  std::unique_ptr<int> u = make();
  REQUIRE(u);
  CHECK(*u == 7);

  struct Loader {
    long base;
    long next(long i) const { return base + i; }
  };
  Loader loader{100};
  auto next = nsk::instrument(&Loader::next, "loader");
  CHECK(next(loader, 1) == 101);

  std::vector<bool> unwinding;
  auto post = nsk::add_post_hook([&](ModuleInfo const& m) { unwinding.push_back(m.unwinding); });
  auto failing =
      nsk::instrument([]() -> int { throw std::out_of_range("no more batches"); }, "fetch");
  CHECK_THROWS_AS(failing(), std::out_of_range);
  if (nsk::enabled) {
    CHECK(unwinding == std::vector<bool>{true});
  } else {
    CHECK(unwinding.empty());
  }

  REQUIRE(rec.lines() ==
          expect({"push nsightkit fetch", "pop nsightkit", "push nsightkit fetch", "pop nsightkit",
                  "push nsightkit make", "pop nsightkit", "push nsightkit loader", "pop nsightkit",
                  "push nsightkit fetch", "pop nsightkit"}));
  CHECK(rec.open_ranges() == 0);
}

TEST_CASE("ncu_nvtx_include builds the push/pop filter of a module path") {
  DomainGuard guard;
  CHECK(nsk::ncu_nvtx_include("backbone/layer1") == "nsightkit@backbone/layer1/");
  CHECK(nsk::ncu_nvtx_include("head") == "nsightkit@head/");
  CHECK(nsk::ncu_nvtx_include("a+b/c[0]") == "nsightkit@a\\+b/c\\[0\\]/");
  CHECK_THROWS_AS(nsk::ncu_nvtx_include(""), std::invalid_argument);
  nsk::set_module_domain<ModelDomain>();
  CHECK(nsk::ncu_nvtx_include("x") == (nsk::enabled ? "model@x/" : "nsightkit@x/"));
  nsk::set_module_domain<nsk::GlobalDomain>();
  CHECK(nsk::ncu_nvtx_include("x") == (nsk::enabled ? "x/" : "nsightkit@x/"));
}

TEST_CASE("a null or malformed name still yields a balanced scope") {
  Recorder rec;
  {
    ModuleScope a{static_cast<char const*>(nullptr)};
    ModuleScope b{"bad/name"};  // reported once on stderr
  }
  CHECK(rec.lines() ==
        expect({"push nsightkit", "push nsightkit bad/name", "pop nsightkit", "pop nsightkit"}));
  CHECK(rec.open_ranges() == 0);
}

TEST_CASE("no heap allocation per call once a model's paths are known") {
  if (!nsk_test::allocation_counting) {
    WARN("not checked: this build's sanitizer runtime owns operator new");
    return;
  }
  Model model;
  int sum = 0;
  auto pre = nsk::add_pre_hook([&sum](ModuleInfo const& m) { sum += m.depth; });
  auto post = nsk::add_post_hook([&sum](ModuleInfo const& m) { sum -= m.depth; });
  auto inst = model.backbone.stem.add_pre_hook(
      [&sum](ModuleInfo const& m) { sum += static_cast<int>(m.name.size()); });
  (void)model.forward(1);  // warm-up: paths, registered strings, snapshots
  allocations = 0;
  count_allocations = true;
  int acc = 0;
  for (int i = 0; i < 100; ++i) acc += model.forward(i);
  count_allocations = false;
  CHECK(allocations.load() == 0);
  CHECK(acc != 0);
  CHECK(sum == (nsk::enabled ? 101 * 4 : 0));  // "stem" has 4 characters; depths cancel
  // And with no user hook at all (the default hooks only).
  pre.remove();
  post.remove();
  inst.remove();
  (void)model.forward(1);
  allocations = 0;
  count_allocations = true;
  for (int i = 0; i < 100; ++i) acc += model.forward(i);
  count_allocations = false;
  CHECK(allocations.load() == 0);
}

#if NSIGHTKIT_ENABLED
namespace {
// An in-process consumer, as the report will be.
struct CollectingSink final : nsk::detail::RangeSink {
  std::vector<std::string> seen;
  void on_push(nsk::detail::RangeBegin const& b) noexcept override {
    seen.push_back(std::string{"push "} + b.domain + " " + std::string{b.name});
  }
  void on_pop(char const* domain) noexcept override {
    seen.push_back(std::string{"pop "} + domain);
  }
};
}  // namespace

TEST_CASE("module ranges reach nsightkit's sinks exactly like ScopedRange") {
  CollectingSink sink;
  REQUIRE(nsk::detail::add_sink(&sink));
  {
    nsk::ScopedRange step{"step 1"};
    Hooked<Conv> conv{"conv", 1};
    (void)conv(1);
  }
  REQUIRE(nsk::detail::remove_sink(&sink));
  CHECK(sink.seen == std::vector<std::string>{"push nsightkit step 1", "push nsightkit conv",
                                              "pop nsightkit", "pop nsightkit"});
}
#endif

// ---- formatted module names -------------------------------------------------------------------

namespace {
/// Counts how often {fmt} formats it: a format argument with a side effect.
struct Counted {
  int value;
};
std::atomic<int> format_calls{0};

/// A format argument whose formatting fails.
struct Unformattable {};
}  // namespace

template <>
struct fmt::formatter<Counted> : fmt::formatter<int> {
  template <class FormatContext>
  auto format(Counted const& c, FormatContext& ctx) const -> decltype(ctx.out()) {
    ++format_calls;
    return fmt::formatter<int>::format(c.value, ctx);
  }
};

template <>
struct fmt::formatter<Unformattable> : fmt::formatter<int> {
  template <class FormatContext>
  auto format(Unformattable const&, FormatContext&) const
      -> decltype(std::declval<FormatContext&>().out()) {
    throw std::runtime_error("no text for this one");
  }
};

TEST_CASE("formatted module names: the text, the paths, one formatting per observed scope") {
  Recorder rec;  // an NVTX tool observes: every formatted name is formatted, once
  std::vector<std::string> paths;
  auto pre = nsk::add_pre_hook([&](ModuleInfo const& m) { paths.emplace_back(m.path); });
  format_calls = 0;
  {
    ModuleScope model{"gpt"};
    for (int l = 0; l < 2; ++l) {
      ModuleScope layer{"h{}", Counted{l}};
      NSIGHTKIT_MODULE("attn{}_{}", l, "q");
      NSIGHTKIT_MODULE("mlp");  // two in one block: they nest in order
    }
  }
  CHECK(format_calls == (nsk::enabled ? 2 : 0));
  REQUIRE(rec.lines() ==
          expect({"push nsightkit gpt", "push nsightkit h0", "push nsightkit attn0_q",
                  "push nsightkit mlp", "pop nsightkit", "pop nsightkit", "pop nsightkit",
                  "push nsightkit h1", "push nsightkit attn1_q", "push nsightkit mlp",
                  "pop nsightkit", "pop nsightkit", "pop nsightkit", "pop nsightkit"}));
  // Fixed names are registered strings; formatted ones are plain messages, like formatted ranges.
  for (auto const& ev : rec.range_events()) {
    if (ev.kind != EventKind::push) continue;
    INFO(ev.message);
    bool const fixed = ev.message == "gpt" || ev.message == "mlp";
    CHECK(ev.registered == fixed);
  }
  if (nsk::enabled) {
    CHECK(paths == std::vector<std::string>{"gpt", "gpt/h0", "gpt/h0/attn0_q", "gpt/h0/attn0_q/mlp",
                                            "gpt/h1", "gpt/h1/attn1_q", "gpt/h1/attn1_q/mlp"});
  } else {
    CHECK(paths.empty());
  }
}

TEST_CASE("formatted module names longer than the scope's own buffer, and failing formatters") {
  Recorder rec;
  std::vector<std::string> names;
  auto pre = nsk::add_pre_hook([&](ModuleInfo const& m) { names.emplace_back(m.name); });
  std::string const long_part(100, 'x');
  std::string const exactly_31(31, 'y');  // the longest name kept inside the scope
  std::string const exactly_32(32, 'z');  // the shortest one put on the heap
  format_calls = 0;
  {
    ModuleScope a{"layer_{}_{}", 7, long_part};
    ModuleScope b{"{}", exactly_31};
    ModuleScope c{"{}", exactly_32};
    ModuleScope d{"big{}", Counted{12345}};
    CHECK(nsk::current_module_path() ==
          (nsk::enabled ? "layer_7_" + long_part + "/" + exactly_31 + "/" + exactly_32 + "/big12345"
                        : std::string{}));
  }
  CHECK(format_calls == (nsk::enabled ? 1 : 0));  // formatted once, also when it is long
  {
    ModuleScope bad{"oops{}", Unformattable{}};  // instrumentation never throws
    CHECK(nsk::current_module_path() ==
          (nsk::enabled ? "<nsightkit: name formatting failed>" : ""));
  }
  std::vector<std::string> const expected{"layer_7_" + long_part, exactly_31, exactly_32,
                                          "big12345", "<nsightkit: name formatting failed>"};
  Lines lines;
  for (auto const& n : expected) lines.push_back("push nsightkit " + n);
  Lines const pops(4, "pop nsightkit");
  lines.insert(lines.begin() + 4, pops.begin(), pops.end());
  lines.emplace_back("pop nsightkit");
  CHECK(rec.lines() == expect(lines));
  CHECK(rec.open_ranges() == 0);
  if (nsk::enabled) {
    CHECK(names == expected);
  } else {
    CHECK(names.empty());
  }
}

TEST_CASE("NSIGHTKIT_MODULE evaluates its arguments only in enabled builds") {
  Recorder rec;
  int evaluated = 0;
  {
    NSIGHTKIT_MODULE("step{}", ++evaluated);
    NSIGHTKIT_MODULE("fixed");
  }
  CHECK(evaluated == (nsk::enabled ? 1 : 0));
  CHECK(rec.lines() ==
        expect({"push nsightkit step1", "push nsightkit fixed", "pop nsightkit", "pop nsightkit"}));
  // The constructor form is a function call: its arguments are evaluated in both builds, and
  // formatted only where something observes.
  format_calls = 0;
  { ModuleScope s{"s{}", Counted{++evaluated}}; }
  CHECK(evaluated == (nsk::enabled ? 2 : 1));
  CHECK(format_calls == (nsk::enabled ? 1 : 0));
}

TEST_CASE("formatted names shorter than 32 characters allocate nothing per call") {
  if (!nsk_test::allocation_counting) {
    WARN("not checked: this build's sanitizer runtime owns operator new");
    return;
  }
  DomainGuard guard;
  int depth_sum = 0;
  auto pre = nsk::add_pre_hook([&](ModuleInfo const& m) { depth_sum += m.depth; });
  auto run = [](char const* part) {
    (void)part;  // NSIGHTKIT_MODULE expands to nothing in a disabled build
    ModuleScope model{"decoder"};
    for (int l = 0; l < 4; ++l) {
      ModuleScope layer{"layer{}", l};
      NSIGHTKIT_MODULE("head{}_{}", l % 2, part);
    }
  };
  auto allocations_of = [&](char const* part) {
    run(part);  // warm-up: the paths are created once
    allocations = 0;
    count_allocations = true;
    for (int i = 0; i < 50; ++i) run(part);
    count_allocations = false;
    return allocations.load();
  };
  // With ranges (the test's NVTX tool copies names longer than 15 characters itself).
  CHECK(allocations_of("kv") == 0);
  // Without ranges, up to the longest name kept inside the scope: 31 characters.
  nsk::set_module_ranges(false);
  std::string const part(31 - std::string{"head0_"}.size(), 'q');
  CHECK(allocations_of(part.c_str()) == 0);
  CHECK(depth_sum == (nsk::enabled ? 2 * 51 * 4 * (1 + 2) : 0));
}

// ---- instrument: one function, a name per call site --------------------------------------------

namespace {
template <class T, class = void>
struct can_call_as : std::false_type {};
template <class T>
struct can_call_as<T, std::void_t<decltype(std::declval<T>().as("x"))>> : std::true_type {};
template <class T, class = void>
struct can_call_as_temporary_string : std::false_type {};
template <class T>
struct can_call_as_temporary_string<T, std::void_t<decltype(std::declval<T>().as(std::string{}))>>
    : std::true_type {};
}  // namespace

TEST_CASE("instrument: as() names one call site, calling the same function object") {
  Recorder rec;
  int state = 0;
  auto fetch = nsk::instrument([&state](int i) { return state += i; }, "fetch");
  using Fetch = decltype(fetch);
  STATIC_REQUIRE(can_call_as<Fetch&>::value);
  STATIC_REQUIRE(can_call_as<Fetch const&>::value);
  STATIC_REQUIRE_FALSE(can_call_as<Fetch&&>::value);  // a temporary would die before the call
  STATIC_REQUIRE_FALSE(can_call_as_temporary_string<Fetch&>::value);

  std::vector<std::string> paths;
  std::vector<void const*> modules;
  std::vector<bool> unwinding;
  auto pre = nsk::add_pre_hook([&](ModuleInfo const& m) {
    paths.emplace_back(m.path);
    modules.push_back(m.module);
  });
  auto post = nsk::add_post_hook([&](ModuleInfo const& m) { unwinding.push_back(m.unwinding); });
  std::string const site = "warmup";
  {
    ModuleScope loop{"loader"};
    CHECK(fetch(1) == 1);
    CHECK(fetch.as("prefetch")(2) == 3);  // the same lambda: its state is shared
    CHECK(fetch.as(site)(3) == 6);
    Fetch const& cfetch = fetch;
    CHECK(cfetch.as("const_site")(4) == 10);
    CHECK(fetch.as("prefetch").name() == std::string{"prefetch"});
  }
  CHECK(fetch.name() == "fetch");  // the default name is unchanged

  // Exceptions pass through a named call site too.
  auto failing = nsk::instrument([](int) -> int { throw std::out_of_range("empty"); }, "next");
  CHECK_THROWS_AS(failing.as("next_eval")(1), std::out_of_range);

  // A malformed call-site name is reported (once, on stderr), not thrown: the call still runs.
  int bad_calls = 0;
  auto plain = nsk::instrument([&bad_calls] { ++bad_calls; }, "plain");
  REQUIRE_NOTHROW(plain.as("a/b")());
  CHECK(bad_calls == 1);

  REQUIRE(
      rec.lines() ==
      expect({"push nsightkit loader", "push nsightkit fetch", "pop nsightkit",
              "push nsightkit prefetch", "pop nsightkit", "push nsightkit warmup", "pop nsightkit",
              "push nsightkit const_site", "pop nsightkit", "pop nsightkit",
              "push nsightkit next_eval", "pop nsightkit", "push nsightkit a/b", "pop nsightkit"}));
  CHECK(rec.open_ranges() == 0);
  if (nsk::enabled) {
    CHECK(paths == std::vector<std::string>{"loader", "loader/fetch", "loader/prefetch",
                                            "loader/warmup", "loader/const_site", "next_eval",
                                            "a/b"});
    void const* const f = &fetch.function();
    CHECK(modules ==
          std::vector<void const*>{nullptr, f, f, f, f, &failing.function(), &plain.function()});
    CHECK(unwinding == std::vector<bool>{false, false, false, false, false, true, false});
  } else {
    CHECK(paths.empty());
  }
}
