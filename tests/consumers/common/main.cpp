// A consumer of nsightkit's instrumentation, compiled by a plain C++ compiler and linked with no
// CUDA library: ranges (static, formatted, attributes, domains, UniqueRange, marks, macros),
// module hooks (ModuleScope, Hooked<M>, instrument, hooks), a CaptureWindow, the report (its
// files written into a directory) and the testing Recorder that checks what reached NVTX.
// Built with NSIGHTKIT_DISABLE it checks that nothing does and that everything still runs.
//
// usage: consumer [directory]   the report's files go there (created if missing) and stay; without
//                               it, into a fresh temporary directory that is removed afterwards
// Exit code 0 on success; every failed check is printed.
#include <nsightkit/nsightkit.hpp>
#include <nsightkit/testing.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace nsk = nsightkit;
using Lines = std::vector<std::string>;

namespace {

int failures = 0;

void check(bool ok, std::string const& what) {
  if (!ok) {
    std::fprintf(stderr, "consumer: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

/// `expected` when instrumentation is compiled in, nothing under NSIGHTKIT_DISABLE.
Lines when_on(Lines expected) { return nsk::enabled ? expected : Lines{}; }

void check_lines(nsk::testing::Recorder const& rec, Lines const& expected, char const* what) {
  Lines const got = rec.lines();
  if (got == expected) return;
  std::string text = std::string{what} + ": unexpected NVTX events; got:";
  for (auto const& l : got) text += "\n    " + l;
  text += "\n  expected:";
  for (auto const& l : expected) text += "\n    " + l;
  check(false, text);
}

struct Io {
  static constexpr char const* name{"io"};  // a domain of the consumer's own
};

void function_range() { NSIGHTKIT_FUNC_RANGE(); }

void ranges(nsk::testing::Recorder& rec) {
  rec.clear();
  {
    nsk::ScopedRange a{"static"};
    nsk::ScopedRange b{"item {}", 1};
    nsk::ScopedRange c{{nsk::Color::rgb(0, 128, 255), nsk::Category{3, "cat"}, nsk::Payload{42}},
                       "attributes"};
    nsk::ScopedRangeIn<Io> d{"read"};
    NSIGHTKIT_RANGE("macro {}", 2);
    NSIGHTKIT_RANGE_IN(Io, "macro in {}", "io");
    function_range();
    nsk::mark("mark {}", 3);
    nsk::mark_in<Io>("io mark");
  }
  nsk::UniqueRange unique{"unique"};
  std::thread other{[r = std::move(unique)]() mutable { r.end(); }};  // ends on another thread
  other.join();
  check_lines(
      rec,
      when_on({"push nsightkit static", "push nsightkit item 1", "push nsightkit attributes",
               "push io read", "push nsightkit macro 2", "push io macro in io",
               "push nsightkit function_range", "pop nsightkit", "mark nsightkit mark 3",
               "mark io io mark", "pop io", "pop nsightkit", "pop io", "pop nsightkit",
               "pop nsightkit", "pop nsightkit", "start nsightkit unique", "end nsightkit"}),
      "ranges");
  bool attributes_seen = false;
  for (auto const& e : rec.range_events()) {
    if (e.message != "attributes") continue;
    attributes_seen = e.color == 0xFF0080FFu && e.category == 3u &&
                      e.payload.kind == nsk::testing::RecordedPayload::Kind::int64 &&
                      e.payload.i == 42;
  }
  check(attributes_seen == nsk::enabled, "the attributes (color, category, payload) reach NVTX");
}

struct Linear {
  int scale;
  int forward(int x) const { return x * scale; }
};

struct Block {
  nsk::Hooked<Linear> fc1{"fc1", 2};
  nsk::Hooked<Linear> fc2{"fc2", 3};
  int operator()(int x) {
    nsk::ModuleScope scope{"block"};
    return fc2(fc1(x));
  }
};

void modules(nsk::testing::Recorder& rec) {
  rec.clear();
  Block block;
  auto loader = nsk::instrument([](int i) { return i + 1; }, "loader");
  Lines pre;
  Lines post;
  auto h1 =
      nsk::add_pre_hook([&](nsk::ModuleInfo const& m) { pre.push_back(std::string{m.path}); });
  auto h2 = nsk::add_post_hook([&](nsk::ModuleInfo const& m) {
    post.push_back(std::string{m.path} + " #" + std::to_string(m.call_count));
  });
  int const y = block(loader(1));
  check(y == 12, "Hooked and instrument call the module and the function: (1 + 1) * 2 * 3");
  check(pre == when_on({"loader", "block", "block/fc1", "block/fc2"}), "pre hooks, in order");
  check(post == when_on({"loader #1", "block/fc1 #1", "block/fc2 #1", "block #1"}),
        "post hooks, with call counts");
  check_lines(rec,
              when_on({"push nsightkit loader", "pop nsightkit", "push nsightkit block",
                       "push nsightkit fc1", "pop nsightkit", "push nsightkit fc2", "pop nsightkit",
                       "pop nsightkit"}),
              "modules");
}

void capture_window(nsk::testing::Recorder& rec) {
  rec.clear();
  // The default profiler backend: the CUDA driver, loaded at run time (nothing is linked for
  // it). Without a driver the window prints one line on stderr and goes on.
  nsk::CaptureWindow window{nsk::CaptureSchedule{1, 1, 2}};
  Lines events;
  window.on_start([&](nsk::CaptureEvent const& e) {
    events.push_back("start " + std::to_string(e.first_step));
  });
  window.on_stop(
      [&](nsk::CaptureEvent const& e) { events.push_back("stop " + std::to_string(e.last_step)); });
  std::string phases;
  for (int i = 0; i < 5; ++i) {
    auto step = window.step();
    phases += nsk::to_string(step.phase());
    phases += ' ';
    check(window.capturing() == (nsk::enabled && step.captured()),
          "capturing() in step " + std::to_string(i));
  }
  check(phases == "wait warmup active active done ", "the schedule's phases: " + phases);
  check(events == when_on({"start 2", "stop 3"}), "the window's callbacks");
  check_lines(rec,
              when_on({"push nsightkit step 0", "pop nsightkit", "push nsightkit step 1",
                       "pop nsightkit", "start nsightkit capture", "push nsightkit step 2",
                       "pop nsightkit", "push nsightkit step 3", "pop nsightkit", "end nsightkit",
                       "push nsightkit step 4", "pop nsightkit"}),
              "capture window");
}

std::string read_file(std::string const& path) {
  std::ifstream in{path};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool exists(std::string const& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

void report(std::string const& dir) {
  nsk::ReportOptions o;
  o.table = dir + "/table.txt";
  o.json = dir + "/summary.json";
  o.csv = dir + "/summary.csv";
  o.trace = dir + "/trace.json";
  o.at_exit = false;
  check(nsk::Report::enable(o) == nsk::enabled, "Report::enable");
  for (int i = 0; i < 3; ++i) {
    nsk::ScopedRange step{"train"};
    nsk::ScopedRange fwd{"forward {}", i % 2};
  }
  nsk::ReportSnapshot const snap = nsk::Report::snapshot();
  if (nsk::enabled) {
    nsk::PathStats const* train = snap.find("train");
    check(train != nullptr && train->cpu.count == 3, "the report counts path 'train' 3 times");
    nsk::PathStats const* fwd0 = snap.find("train/forward 0");
    check(fwd0 != nullptr && fwd0->cpu.count == 2, "the report counts 'train/forward 0' twice");
    check(nsk::format_table(snap).find("forward 1") != std::string::npos,
          "the table names 'forward 1'");
  } else {
    check(snap.paths.empty(), "a disabled report is empty");
  }
  check(nsk::Report::write() == nsk::enabled, "Report::write");
  nsk::Report::disable();
  for (char const* name : {"table.txt", "summary.json", "summary.csv", "trace.json"}) {
    std::string const path = dir + "/" + name;
    if (nsk::enabled) {
      check(exists(path) && !read_file(path).empty(), path + " was written");
    } else {
      check(!exists(path), path + " is not written by a disabled build");
    }
  }
  if (nsk::enabled) {
    check(read_file(dir + "/table.txt").find("train") != std::string::npos,
          "table.txt names 'train'");
    check(read_file(dir + "/summary.json").find("\"train/forward 1\"") != std::string::npos,
          "summary.json names 'train/forward 1'");
    check(read_file(dir + "/trace.json").find("\"traceEvents\"") != std::string::npos,
          "trace.json is a Chrome trace");
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc > 2) {
    std::fprintf(stderr, "usage: %s [directory for the report's files]\n", argv[0]);
    return 2;
  }
  std::string dir;
  if (argc == 2) {
    dir = argv[1];
    ::mkdir(dir.c_str(), 0755);
  } else {
    char const* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string{tmp != nullptr && *tmp != '\0' ? tmp : "/tmp"} + "/nsightkit-consumer-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("consumer: mkdtemp");
      return 2;
    }
    dir = pattern;
  }
  nsk::testing::Recorder rec;
  ranges(rec);
  modules(rec);
  capture_window(rec);
  report(dir);
  if (argc < 2) {
    for (char const* name : {"table.txt", "summary.json", "summary.csv", "trace.json"}) {
      std::remove((dir + "/" + name).c_str());
    }
    ::rmdir(dir.c_str());
  }
  if (failures != 0) {
    std::fprintf(stderr, "consumer: %d check(s) failed\n", failures);
    return 1;
  }
  std::printf("consumer ok: nsightkit %s, instrumentation %s\n", nsk::version_string,
              nsk::enabled ? "enabled" : "disabled");
  return 0;
}
