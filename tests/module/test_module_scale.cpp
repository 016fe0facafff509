// Module paths at scale: stacks far deeper than max_module_depth, many distinct names, and paths
// built lazily from parent links that equal the full paths the table used to store per node.
// No NVTX tool in this binary: a counting sink observes the module ranges instead (no event is
// kept per range, so 10^5 of them cost no memory here). Compiled enabled, and disabled by the
// NSIGHTKIT_DISABLE suite, where nothing is observed and only the model code runs.
#include <nsightkit/module.hpp>
#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/module/paths.hpp>  // path_table_stats()
#endif

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace nsk = nsightkit;

namespace {

/// The path of a stack of `n` scopes all named `name`, written out.
std::string repeated_path(std::string const& name, int n) {
  std::string p;
  for (int i = 0; i < n; ++i) p += (i == 0 ? "" : "/") + name;
  return p;
}

/// Runs `fn` on a thread with a stack of `bytes` (deep recursion) and waits for it. Catch2's
/// assertions are not thread-safe: `fn` only collects, the caller checks.
template <class F>
void run_with_stack(std::size_t bytes, F& fn) {
  pthread_attr_t attr;
  REQUIRE(pthread_attr_init(&attr) == 0);
  REQUIRE(pthread_attr_setstacksize(&attr, bytes) == 0);
  pthread_t thread;
  auto body = [](void* arg) -> void* {
    (*static_cast<F*>(arg))();
    return nullptr;
  };
  REQUIRE(pthread_create(&thread, &attr, body, &fn) == 0);
  REQUIRE(pthread_join(thread, nullptr) == 0);
  pthread_attr_destroy(&attr);
}

/// What the process writes to stderr while it lives (nsightkit's one-time messages).
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = dup(2);
    if (file_ != nullptr && saved_ >= 0) dup2(fileno(file_), 2);
  }
  StderrCapture(StderrCapture const&) = delete;
  StderrCapture& operator=(StderrCapture const&) = delete;
  ~StderrCapture() {
    restore();
    if (file_ != nullptr) std::fclose(file_);
  }

  /// Everything written so far; stops capturing.
  std::string text() {
    restore();
    std::string out;
    if (file_ == nullptr) return out;
    std::rewind(file_);
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) out.append(buf, n);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  std::FILE* file_{nullptr};
  int saved_{-1};
};

[[maybe_unused]] std::size_t count_of(std::string const& text, std::string const& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

#if NSIGHTKIT_ENABLED
/// Counts the module ranges that reach nsightkit's sinks (one thread at a time).
struct CountingSink final : nsk::detail::RangeSink {
  long pushes{0};
  long pops{0};
  long open{0};
  long max_open{0};
  void on_push(nsk::detail::RangeBegin const&) noexcept override {
    ++pushes;
    max_open = std::max(max_open, ++open);
  }
  void on_pop(char const*) noexcept override {
    ++pops;
    --open;
  }
};

/// Registers a CountingSink for a test's lifetime (it also makes modules observed: tracking).
struct SinkScope {
  CountingSink sink;
  SinkScope() { REQUIRE(nsk::detail::add_sink(&sink)); }
  SinkScope(SinkScope const&) = delete;
  SinkScope& operator=(SinkScope const&) = delete;
  ~SinkScope() { nsk::detail::remove_sink(&sink); }
};

nsk::detail::module::PathTableStats stats() { return nsk::detail::module::path_table_stats(); }
#endif

/// A recursive module: `levels` nested scopes named `name`; current_module_path() is read at
/// chosen depths on the way down and on the way back up.
struct Recursion {
  char const* name;
  int levels;
  std::vector<int> probe_down;  // depths (0-based) probed before descending
  std::vector<int> probe_up;    // depths probed after the deeper levels returned
  std::vector<std::string> seen_down;
  std::vector<std::string> seen_up;

  void operator()() { descend(0); }

  void descend(int depth) {
    nsk::ModuleScope scope{name};
    probe(probe_down, depth, seen_down);
    if (depth + 1 < levels) descend(depth + 1);
    probe(probe_up, depth, seen_up);
  }

  // Out of line: keeps the string temporaries out of every recursion frame.
  [[gnu::noinline]] static void probe(std::vector<int> const& at, int depth,
                                      std::vector<std::string>& out) {
    if (std::find(at.begin(), at.end(), depth) != at.end()) {
      out.emplace_back(nsk::current_module_path());
    }
  }
};

constexpr int deep_levels = 100000;
constexpr std::size_t deep_stack = std::size_t{1} << 29;  // 512 MiB reserved for the recursion
int const limit = nsk::max_module_depth;

}  // namespace

TEST_CASE("10^5 nested module scopes: bounded paths, balanced ranges, hooks up to the limit") {
  STATIC_REQUIRE(nsk::max_module_depth == 1024);
#if NSIGHTKIT_ENABLED
  SinkScope observer;
  auto const before = stats();
  bool const reported_before = nsk::detail::module::registry().depth_limit_reported.load();
#endif
  long pre_calls = 0;
  long post_calls = 0;
  int max_depth = -1;
  bool paths_ok = true;
  auto pre = nsk::add_pre_hook([&](nsk::ModuleInfo const& m) {
    ++pre_calls;
    max_depth = std::max(max_depth, m.depth);
    paths_ok = paths_ok && m.path.size() == 4 * std::size_t(m.depth + 1) + std::size_t(m.depth) &&
               m.name == "deep";
  });
  auto post = nsk::add_post_hook([&](nsk::ModuleInfo const&) { ++post_calls; });
  Recursion deep{"deep",         deep_levels, {0, limit - 1, limit, deep_levels - 1},
                 {limit + 5, 9}, {},          {}};

  StderrCapture err;
  run_with_stack(deep_stack, deep);
  deep.seen_down.clear();
  deep.seen_up.clear();
  run_with_stack(deep_stack, deep);  // the same stack again: nothing new, no second message
  std::string const messages = err.text();

  if (!nsk::enabled) {
    CHECK(pre_calls == 0);
    CHECK(deep.seen_down == std::vector<std::string>(4, ""));
    return;
  }
  // Hooks run for the scopes that have a path: depths 0 .. limit-1, in each of the two runs.
  CHECK(pre_calls == 2 * limit);
  CHECK(post_calls == 2 * limit);
  CHECK(max_depth == limit - 1);
  CHECK(paths_ok);
  // Below the limit a scope names its ancestor at the limit; the links of the stack are intact
  // on the way back up.
  std::string const at_limit = repeated_path("deep", limit);
  CHECK(deep.seen_down == std::vector<std::string>{"deep", at_limit, at_limit, at_limit});
  CHECK(deep.seen_up == std::vector<std::string>{at_limit, repeated_path("deep", 10)});
#if NSIGHTKIT_ENABLED
  // Every scope pushed and popped its range, 10^5 deep.
  CHECK(observer.sink.pushes == 2L * deep_levels);
  CHECK(observer.sink.pops == 2L * deep_levels);
  CHECK(observer.sink.max_open == deep_levels);
  CHECK(observer.sink.open == 0);
  // Bounded memory: one node per distinct path (limit of them), and the full paths built for
  // the hooks are at most the sum of their lengths (O(limit^2), not O(10^10)).
  auto const after = stats();
  CHECK(after.nodes - before.nodes == std::size_t(limit));
  std::size_t bound = 0;
  for (int d = 0; d < limit; ++d) bound += 5 * std::size_t(d + 1);  // "deep/" per level, + NUL
  CHECK(after.path_bytes - before.path_bytes <= bound);
  // One message, naming the limit.
  if (!reported_before) {
    CHECK(count_of(messages, "nested deeper than 1024 levels (nsightkit::max_module_depth)") == 1u);
  }
  CHECK(count_of(messages, "nested deeper than") <= 1u);
  CHECK(nsk::detail::module::registry().depth_limit_reported.load());
#endif
}

TEST_CASE("a 10^5-deep stack that nothing resolved yet is resolved in one request") {
#if NSIGHTKIT_ENABLED
  SinkScope observer;  // tracking on, no hook: nothing resolves paths until asked
  auto const before = stats();
#endif
  Recursion lazy{"lazy", deep_levels, {deep_levels - 1, 3}, {2000, 3, 0}, {}, {}};
  // Probing depth 3 on the way down resolves 4 frames; the bottom then resolves the rest at once.
  run_with_stack(deep_stack, lazy);
  if (!nsk::enabled) {
    CHECK(lazy.seen_down == std::vector<std::string>(2, ""));
    return;
  }
  std::string const at_limit = repeated_path("lazy", limit);
  CHECK(lazy.seen_down == std::vector<std::string>{repeated_path("lazy", 4), at_limit});
  CHECK(lazy.seen_up ==
        std::vector<std::string>{at_limit, repeated_path("lazy", 4), repeated_path("lazy", 1)});
#if NSIGHTKIT_ENABLED
  CHECK(stats().nodes - before.nodes == std::size_t(limit));
  CHECK(observer.sink.open == 0);
  CHECK(observer.sink.pushes == deep_levels);
#endif
}

TEST_CASE("10^5 distinct names under one parent: one node each, found again, views kept") {
#if NSIGHTKIT_ENABLED
  SinkScope observer;
  auto const before = stats();
#endif
  constexpr int names = 100000;
  long calls = 0;
  long wrong = 0;
  std::vector<std::uint64_t> counts(names, 0);
  std::vector<std::string_view> kept;  // views taken in the first pass
  int current = -1;
  auto pre = nsk::add_pre_hook([&](nsk::ModuleInfo const& m) {
    if (m.depth != 1) return;
    ++calls;
    std::string const expected = fmt::format("wide/n{}", current);
    if (m.path != expected || m.name != std::string_view{expected}.substr(5)) ++wrong;
    counts[std::size_t(current)] = m.call_count;
    if (kept.size() < 100 && current % 1000 == 0) kept.push_back(m.path);
  });
  for (int pass = 0; pass < 2; ++pass) {
    nsk::ModuleScope parent{"wide"};
    for (current = 0; current < names; ++current) {
      nsk::ModuleScope child{"n{}", current};
    }
#if NSIGHTKIT_ENABLED
    if (pass == 0) {
      CHECK(stats().nodes - before.nodes == std::size_t(names) + 1);
    }
#endif
  }
  if (!nsk::enabled) {
    CHECK(calls == 0);
    return;
  }
  CHECK(calls == 2L * names);
  CHECK(wrong == 0);
  CHECK(std::all_of(counts.begin(), counts.end(), [](std::uint64_t c) { return c == 2; }));
  // The views of the first pass still read the same text after the table grew many times.
  REQUIRE(kept.size() == 100u);
  for (std::size_t i = 0; i < kept.size(); ++i) CHECK(kept[i] == fmt::format("wide/n{}", 1000 * i));
#if NSIGHTKIT_ENABLED
  auto const after = stats();
  CHECK(after.nodes - before.nodes == std::size_t(names) + 1);  // the second pass added nothing
  CHECK(after.slots >= 2 * after.nodes);                        // at most half full
#endif
}

TEST_CASE("lazily built paths equal the full paths written out, however they are asked for") {
#if NSIGHTKIT_ENABLED
  SinkScope observer;
#endif
  // A pseudo-random walk over a small tree of names that share prefixes ("a", "ab", "a b"), so
  // that paths are built from parents whose own path is known, and from parents whose is not.
  struct Walk {
    std::vector<std::string> alphabet{"a", "ab", "a b", "block_0", "x"};
    std::vector<std::string> stack;  // what the old table stored per node: the joined names
    std::uint64_t rng{0x243F6A8885A308D3ull};
    long entered{0};
    long probes{0};
    long mismatches{0};

    std::uint64_t random(std::uint64_t n) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      return (rng >> 33u) % n;
    }
    [[nodiscard]] std::string joined() const {
      std::string p;
      for (std::size_t i = 0; i < stack.size(); ++i) p += (i == 0 ? "" : "/") + stack[i];
      return p;
    }
    void check(nsk::ModuleInfo const& m) {
      bool const same = m.path == joined() && m.name == stack.back() &&
                        m.depth == static_cast<int>(stack.size()) - 1;
      mismatches += same ? 0 : 1;
    }
    // Each level enters a scope (a fixed or a formatted name), sometimes asks for its path, then
    // descends a random number of times.
    void level(int depth) {
      std::string const& name = alphabet[random(alphabet.size())];
      stack.push_back(name);
      ++entered;
      if (random(2) == 0) {
        nsk::ModuleScope scope{name};
        body(depth);
      } else {
        nsk::ModuleScope scope{"{}", name};
        body(depth);
      }
      stack.pop_back();
    }
    void body(int depth) {
      if (random(3) == 0) {
        ++probes;
        mismatches += nsk::current_module_path() == (nsk::enabled ? joined() : "") ? 0 : 1;
      }
      if (depth < 12) {
        for (auto n = random(4); n > 0; --n) level(depth + 1);
      }
    }
  };
  Walk walk;
  for (int round = 0; round < 40; ++round) walk.level(0);  // no hook: paths built on request
  long const lazy_probes = walk.probes;
  long hook_calls = 0;
  walk.entered = 0;
  auto hook = nsk::add_pre_hook([&](nsk::ModuleInfo const& m) {  // every path, every call
    ++hook_calls;
    walk.check(m);
  });
  for (int round = 0; round < 40; ++round) walk.level(0);
  CHECK(lazy_probes > 100);
  CHECK(walk.entered > 1000);
  CHECK(hook_calls == (nsk::enabled ? walk.entered : 0));
  CHECK(walk.mismatches == 0);
}
