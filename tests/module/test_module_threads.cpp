// Module hooks under concurrency. Labelled "tsan": CI also runs this executable in a
// -fsanitize=thread build, where any data race in adding/removing hooks, switching domains or
// resolving paths while modules run fails the run.
#include "support.hpp"

#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>
#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/module/paths.hpp>  // path_table_stats()
#endif

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

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

struct Linear {
  int scale;
  int forward(int x) const { return x * scale + 1; }
};

struct Block {
  Hooked<Linear> fc1{"fc1", 2};
  Hooked<Linear> fc2{"fc2", 3};
  int forward(int x) { return fc2(fc1(x)); }
};

/// Shared by all threads: the modules are stateless, so concurrent calls are fine.
struct Net {
  Hooked<Block> b0{"0"};
  Hooked<Block> b1{"1"};
  int forward(int x) {
    ModuleScope scope{"net"};
    return b1(b0(x));
  }
};

Lines expected_net_lines(std::string const& domain) {
  Lines l{"push " + domain + " net"};
  for (char const* b : {"0", "1"}) {
    l.push_back("push " + domain + " " + b);
    for (char const* f : {"fc1", "fc2"}) {
      l.push_back("push " + domain + " " + f);
      l.push_back("pop " + domain);
    }
    l.push_back("pop " + domain);
  }
  l.push_back("pop " + domain);
  return l;
}

/// A hook's view must always be self-consistent: name is the last component, depth the number of
/// separators, and the path one of the model's.
bool consistent(ModuleInfo const& m) {
  static std::vector<std::string_view> const paths{
      "net", "net/0", "net/1", "net/0/fc1", "net/0/fc2", "net/1/fc1", "net/1/fc2"};
  bool known = false;
  for (auto p : paths) known = known || p == m.path;
  std::size_t const slash = m.path.rfind('/');
  std::string_view const last = slash == std::string_view::npos ? m.path : m.path.substr(slash + 1);
  int slashes = 0;
  for (char c : m.path) slashes += c == '/' ? 1 : 0;
  return known && last == m.name && slashes == m.depth && m.call_count > 0 &&
         m.thread == std::this_thread::get_id();
}

}  // namespace

TEST_CASE("two threads running the same modules nest independently") {
  REQUIRE(Recorder::installed());  // NVTX initialised before any thread starts
  Recorder rec;
  Net net;
  std::mutex mutex;
  std::map<std::thread::id, std::vector<std::string>> paths;
  auto hook = nsk::add_pre_hook([&](ModuleInfo const& m) {
    std::lock_guard<std::mutex> lock{mutex};
    paths[m.thread].emplace_back(m.path);
  });
  constexpr int iterations = 50;
  auto work = [&net] {
    for (int i = 0; i < iterations; ++i) (void)net.forward(i);
  };
  std::thread t1{work};
  std::thread t2{work};
  std::thread::id const id1 = t1.get_id();
  std::thread::id const id2 = t2.get_id();
  t1.join();
  t2.join();
  Lines one = expected_net_lines("nsightkit");
  Lines all;
  for (int i = 0; i < iterations; ++i) all.insert(all.end(), one.begin(), one.end());
  std::vector<std::string> const one_paths{"net",   "net/0",     "net/0/fc1", "net/0/fc2",
                                           "net/1", "net/1/fc1", "net/1/fc2"};
  std::vector<std::string> all_paths;
  for (int i = 0; i < iterations; ++i)
    all_paths.insert(all_paths.end(), one_paths.begin(), one_paths.end());
  for (auto id : {id1, id2}) {
    REQUIRE(rec.lines(id) == expect(all));
    if (nsk::enabled) {
      std::lock_guard<std::mutex> lock{mutex};
      CHECK(paths[id] == all_paths);
    }
  }
  CHECK(rec.open_ranges() == 0);
}

TEST_CASE("hooks added and removed from another thread while modules run") {
  REQUIRE(Recorder::installed());
  Net net;
  std::atomic<bool> stop{false};
  std::atomic<long> forwards{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 3; ++t) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        (void)net.forward(1);
        forwards.fetch_add(1);
      }
    });
  }
  // Counters of removed hooks must never move again once remove() has returned.
  std::deque<std::atomic<long>> counters;
  std::vector<long> at_removal;
  std::atomic<long> inconsistent{0};
  constexpr int rounds = 200;
  for (int i = 0; i < rounds; ++i) {
    auto& c = counters.emplace_back(0);
    auto count = [&c, &inconsistent](ModuleInfo const& m) {
      c.fetch_add(1);
      if (!consistent(m)) inconsistent.fetch_add(1);
    };
    {
      // Global pre/post hooks and per-instance hooks, removed by RAII or explicitly.
      auto pre = nsk::add_pre_hook(count);
      auto post = nsk::add_post_hook(count);
      auto inst = net.b0.add_pre_hook(count);
      auto inst_post = net.b1->fc2.add_post_hook(count);
      long const seen = forwards.load();
      while (forwards.load() < seen + 2) std::this_thread::yield();
      if (i % 2 == 0) {
        pre.remove();
        inst.remove();
      }
    }  // the rest removed here
    at_removal.push_back(c.load());
  }
  // Let the workers run on with no hook installed, then check nothing called a removed hook.
  long const seen = forwards.load();
  while (forwards.load() < seen + 20) std::this_thread::yield();
  stop = true;
  for (auto& w : workers) w.join();
  long calls = 0;
  for (int i = 0; i < rounds; ++i) {
    CHECK(counters[static_cast<std::size_t>(i)].load() == at_removal[static_cast<std::size_t>(i)]);
    calls += at_removal[static_cast<std::size_t>(i)];
  }
  CHECK(inconsistent.load() == 0);
  if (nsk::enabled) {
    CHECK(calls > 0);
  } else {
    CHECK(calls == 0);
  }
}

TEST_CASE("a removed hook's captures may die right after remove() while modules run") {
  REQUIRE(Recorder::installed());
  Net net;
  std::atomic<bool> stop{false};
  std::atomic<long> forwards{0};
  std::thread worker{[&] {
    while (!stop.load()) {
      (void)net.forward(2);
      ++forwards;
    }
  }};
  // Waits (bounded) until `done()`; false on time-out.
  auto wait_for = [](auto done) {
    auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  };
  for (int i = 0; i < 200; ++i) {
    auto local = std::make_unique<std::atomic<int>>(0);  // dies right after the handle
    {
      auto h = nsk::add_pre_hook([p = local.get()](ModuleInfo const&) { p->fetch_add(1); });
      if constexpr (nsightkit::enabled) {
        REQUIRE(wait_for([&] { return local->load() > 0; }));  // the hook runs on the worker
      } else {
        long const before = forwards.load();  // disabled: hooks never run
        REQUIRE(wait_for([&] { return forwards.load() >= before + 2; }));
        REQUIRE(local->load() == 0);
      }
    }
    // remove() has returned: the hook never runs again, even while the worker keeps going.
    int const calls = local->load();
    long const seen = forwards.load();
    REQUIRE(wait_for([&] { return forwards.load() >= seen + 2; }));
    REQUIRE(local->load() == calls);
    local.reset();  // a hook still running here would be a use after free (ASan/TSan)
  }
  stop = true;
  worker.join();
}

TEST_CASE("module domain switched while threads run: every scope pops where it pushed") {
  REQUIRE(Recorder::installed());
  Recorder rec;
  Net net;
  std::atomic<int> done{0};
  std::vector<std::thread> workers;
  std::vector<std::thread::id> ids;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < 300; ++i) (void)net.forward(i);
      done.fetch_add(1);
    });
    ids.push_back(workers.back().get_id());
  }
  // Switch for as long as the workers run (and at least 100 times).
  for (int i = 0; i < 100 || done.load() < 2; ++i) {
    if (i % 2 == 0) {
      nsk::set_module_domain<ModelDomain>();
    } else {
      nsk::set_module_domain<nsk::DefaultDomain>();
    }
    std::this_thread::yield();
  }
  for (auto& w : workers) w.join();
  nsk::set_module_domain<nsk::DefaultDomain>();
  // Per thread, each pop must close a push of the same domain (a stack per thread).
  for (auto id : ids) {
    std::vector<std::string> stack;
    bool matched = true;
    for (auto const& e : rec.events(id)) {
      if (e.kind == EventKind::push) stack.push_back(e.domain);
      if (e.kind == EventKind::pop) {
        matched = matched && !stack.empty() && stack.back() == e.domain;
        if (!stack.empty()) stack.pop_back();
      }
    }
    CHECK(matched);
    CHECK(stack.empty());
  }
  CHECK(rec.open_ranges() == 0);
}

TEST_CASE("threads creating and reading paths at once: one node and one path string per path") {
  REQUIRE(Recorder::installed());
#if NSIGHTKIT_ENABLED
  auto const nodes_before = nsk::detail::module::path_table_stats().nodes;
#endif
  // Every thread walks the same 300 names (creation races on the same keys) and its own names
  // (the table grows while the others probe it); hooks and current_module_path() read the
  // lazily built paths from all threads at once.
  constexpr int threads = 4;
  constexpr int shared = 300;
  constexpr int rounds = 2;
  std::mutex mutex;
  std::map<std::string, std::set<char const*>> views;  // path -> addresses of its text
  std::atomic<long> calls{0};
  std::atomic<long> wrong{0};
  auto hook = nsk::add_pre_hook([&](ModuleInfo const& m) {
    calls.fetch_add(1);
    if (m.path != nsk::current_module_path() || m.path.data() != nsk::current_module_path().data())
      wrong.fetch_add(1);
    std::lock_guard<std::mutex> lock{mutex};
    views[std::string{m.path}].insert(m.path.data());
  });
  std::vector<std::thread> workers;
  std::atomic<int> waiting{threads};  // all start together: the first pass races on each path
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([t, &wrong, &waiting] {
      waiting.fetch_sub(1);
      while (waiting.load() > 0) std::this_thread::yield();
      for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < shared; ++i) {
          ModuleScope crowd{"crowd"};
          ModuleScope name{"n{}", i};
          ModuleScope own{"t{}", t};
          std::string const expected = fmt::format("crowd/n{}/t{}", i, t);
          if (nsk::current_module_path() != (nsk::enabled ? expected : "")) wrong.fetch_add(1);
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  CHECK(wrong.load() == 0);
  if (!nsk::enabled) {
    CHECK(calls.load() == 0);
    return;
  }
  CHECK(calls.load() == long{threads} * rounds * shared * 3);
  // crowd, crowd/n<i> and crowd/n<i>/t<t>: each built once, whichever thread asked first.
  CHECK(views.size() == std::size_t{1 + shared + shared * threads});
  for (auto const& [path, addresses] : views) {
    INFO(path);
    CHECK(addresses.size() == 1u);
  }
#if NSIGHTKIT_ENABLED
  CHECK(nsk::detail::module::path_table_stats().nodes - nodes_before ==
        std::size_t{1 + shared + shared * threads});
#endif
}
