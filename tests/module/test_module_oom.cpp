// Module paths when memory runs out: nsightkit allocates its path table, nodes, path strings and
// long formatted names with nothrow operator new, which this executable replaces by one that
// fails on demand. A scope must never crash or throw: the call whose path cannot be stored runs
// without hooks, one message says so, and later calls recover.
// Not where a sanitizer runtime owns operator new (ThreadSanitizer, MemorySanitizer): there this
// executable defines no test case (the "tsan" suite does not run it anyway).
#include <nsightkit/module.hpp>
#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/module/paths.hpp>  // path_table_stats()
#endif

#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "sanitizers.hpp"

#if !defined(NSK_TEST_TSAN_OR_MSAN)

namespace {
// While `failing`, nothrow allocations of a size in [fail_from, fail_below) return null.
std::atomic<bool> failing{false};
std::atomic<std::size_t> fail_from{0};
std::atomic<std::size_t> fail_below{0};

void* nothrow_malloc(std::size_t n) noexcept {
  if (failing.load() && n >= fail_from.load() && n < fail_below.load()) return nullptr;
  return std::malloc(n == 0 ? 1 : n);
}
void* malloc_or_throw(std::size_t n) {
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc{};
}

/// Makes nothrow allocations of [from, below) bytes fail while it lives.
struct FailNothrow {
  explicit FailNothrow(std::size_t from = 0, std::size_t below = ~std::size_t{0}) {
    fail_from = from;
    fail_below = below;
    failing = true;
  }
  FailNothrow(FailNothrow const&) = delete;
  FailNothrow& operator=(FailNothrow const&) = delete;
  ~FailNothrow() { failing = false; }
};
}  // namespace

void* operator new(std::size_t n) { return malloc_or_throw(n); }
void* operator new[](std::size_t n) { return malloc_or_throw(n); }
void* operator new(std::size_t n, std::nothrow_t const&) noexcept { return nothrow_malloc(n); }
void* operator new[](std::size_t n, std::nothrow_t const&) noexcept { return nothrow_malloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::nothrow_t const&) noexcept { std::free(p); }
void operator delete[](void* p, std::nothrow_t const&) noexcept { std::free(p); }

namespace {

namespace nsk = nsightkit;

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

bool reported_before() {
#if NSIGHTKIT_ENABLED
  return nsk::detail::module::registry().out_of_memory_reported.load();
#else
  return true;
#endif
}

char const* const oom_message = "nsightkit: out of memory while storing a module path";

std::size_t count_of(std::string const& text, std::string const& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("no memory for a new path: no crash, no hook for that call, one message, recovery") {
  std::vector<std::string> paths;
  auto pre = nsk::add_pre_hook([&](nsk::ModuleInfo const& m) { paths.emplace_back(m.path); });
  { nsk::ModuleScope known{"oom_known"}; }  // this path exists before memory runs out
  paths.clear();
  bool const before = reported_before();
  StderrCapture err;
  std::string inside;
  {
    FailNothrow fail;                         // every nothrow allocation fails
    { nsk::ModuleScope known{"oom_known"}; }  // a known path needs no memory: hooks run
    {
      nsk::ModuleScope fresh{"oom_fresh"};  // no node: no hook, no path
      inside = std::string{nsk::current_module_path()};
    }
    {
      nsk::ModuleScope known{"oom_known"};
      nsk::ModuleScope child{"oom_child"};  // the parent's hooks run, the child's cannot
    }
  }
  std::string const messages = err.text();
  CHECK(inside.empty());
  CHECK(paths == std::vector<std::string>(nsk::enabled ? 2 : 0, "oom_known"));
  if (!before) CHECK(count_of(messages, oom_message) == 1u);
  CHECK(count_of(messages, oom_message) <= 1u);
  // Memory is back: the same scopes get their paths and hooks.
  paths.clear();
  {
    nsk::ModuleScope known{"oom_known"};
    nsk::ModuleScope child{"oom_child"};
    CHECK(nsk::current_module_path() == (nsk::enabled ? "oom_known/oom_child" : ""));
  }
  if (nsk::enabled) {
    CHECK(paths == std::vector<std::string>{"oom_known", "oom_known/oom_child"});
  } else {
    CHECK(paths.empty());
  }
}

#if NSIGHTKIT_ENABLED
TEST_CASE("no memory for a path's text: the node is kept, the text is built on a later request") {
  nsk::track_module_paths();
  nsk::ModuleScope parent{"oom_parent"};
  nsk::ModuleScope child{"oom_child"};
  {
    // Nodes are larger than a PathNode; the text "oom_parent/oom_child" is not.
    FailNothrow fail{0, sizeof(nsk::detail::module::PathNode)};
    CHECK(nsk::current_module_path().empty());
  }
  CHECK(nsk::current_module_path() == "oom_parent/oom_child");
}

namespace {
/// Collects the names of the module ranges (to see a placeholder name).
struct NameSink final : nsk::detail::RangeSink {
  std::vector<std::string> pushed;
  void on_push(nsk::detail::RangeBegin const& b) noexcept override { pushed.emplace_back(b.name); }
  void on_pop(char const*) noexcept override {}
};
}  // namespace

TEST_CASE("no memory for a long formatted name: a placeholder name, a balanced scope") {
  NameSink sink;
  REQUIRE(nsk::detail::add_sink(&sink));
  std::string const long_name(64, 'l');
  std::string inside;
  {
    nsk::ModuleScope outer{"oom_outer"};
    {
      FailNothrow fail;
      nsk::ModuleScope s{"{}", long_name};
    }
    inside = std::string{nsk::current_module_path()};  // the stack is intact
  }
  REQUIRE(nsk::detail::remove_sink(&sink));
  CHECK(inside == "oom_outer");
  CHECK(sink.pushed ==
        std::vector<std::string>{"oom_outer", "<nsightkit: name formatting failed>"});
  CHECK(nsk::current_module_path().empty());
}

TEST_CASE("the path table cannot grow: nodes fill it up to one free slot, then growth resumes") {
  long calls = 0;
  long wrong = 0;
  std::string expected;
  auto pre = nsk::add_pre_hook([&](nsk::ModuleInfo const& m) {
    ++calls;
    if (m.path != expected) ++wrong;
  });
  auto scope = [&](std::string const& name) {
    expected = name;
    nsk::ModuleScope s{name};
  };
  // Up to the point where the next new path makes the table grow (it stays at most half full).
  int filled = 0;
  scope("fill" + std::to_string(filled++));  // the table exists from the first path on
  for (auto s = nsk::detail::module::path_table_stats(); 2 * (s.nodes + 1) <= s.slots;
       s = nsk::detail::module::path_table_stats()) {
    scope("fill" + std::to_string(filled++));
  }
  auto const full = nsk::detail::module::path_table_stats();
  REQUIRE(full.slots >= 64u);
  long const calls_before = calls;
  bool const before = reported_before();
  StderrCapture err;
  std::size_t const room = full.slots - full.nodes - 1;  // one slot stays free for lookups
  {
    // Only the larger table's slot array fails (nodes are far smaller than 8 * 64 bytes).
    FailNothrow fail{8 * full.slots};
    for (std::size_t i = 0; i < room; ++i) scope("room" + std::to_string(i));
    scope("no_room");  // the table is full: no node, no hook
  }
  std::string const messages = err.text();
  CHECK(calls - calls_before == long(room));
  CHECK(wrong == 0);
  CHECK(nsk::detail::module::path_table_stats().slots == full.slots);
  CHECK(nsk::detail::module::path_table_stats().nodes == full.slots - 1);
  if (!before) CHECK(count_of(messages, oom_message) == 1u);
  // Memory is back: the table grows, and every path made before is found again.
  scope("no_room");
  CHECK(calls - calls_before == long(room) + 1);
  CHECK(nsk::detail::module::path_table_stats().slots > full.slots);
  auto const nodes = nsk::detail::module::path_table_stats().nodes;
  for (int i = 0; i < filled; ++i) scope("fill" + std::to_string(i));
  for (std::size_t i = 0; i < room; ++i) scope("room" + std::to_string(i));
  CHECK(nsk::detail::module::path_table_stats().nodes == nodes);  // all found, none added
  CHECK(wrong == 0);
}
#endif

#endif  // !NSK_TEST_TSAN_OR_MSAN
