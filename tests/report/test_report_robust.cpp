// The report in a hostile environment: fork() while other threads record, output paths that
// cannot be written, runaway nesting and names, names that would break a table or a CSV file, and
// the messages a user gets for bad or misspelt settings. Every case asserts what happens, also in
// a -DNSIGHTKIT_DISABLE=ON build (where nothing is recorded or written).
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/engine.hpp>  // the engine's pieces, in either mode
#include <nsightkit/detail/text.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report_support.hpp"
#include "sanitizers.hpp"

using nsightkit::Report;
using nsightkit::ReportOptions;
using nsightkit::ScopedRange;
using nsk_test::count_of;
using nsk_test::file_exists;
using nsk_test::ScopedEnv;
using nsk_test::StderrCapture;

namespace {

ReportOptions quiet() {
  ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  return o;
}

struct Session {
  explicit Session(ReportOptions const& o = quiet()) {
    Report::disable();
    Report::reset();
    REQUIRE(Report::enable(o) == nsightkit::enabled);
  }
  ~Session() {
    Report::disable();
    Report::reset();
  }
  Session(Session const&) = delete;
  Session& operator=(Session const&) = delete;
};

std::string fresh_dir(std::string const& name) {
  std::string const dir = "report_robust_" + name;
  REQUIRE(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()) == 0);
  return dir;
}

/// Waits for `pid` at most `seconds`; kills it and returns -1 when it does not end.
/// What the kernel says a process is doing (its state, wait channel and system call), for a
/// failure message.
std::string where_is(pid_t pid) {
  std::string out;
  for (char const* what : {"stat", "wchan", "syscall"}) {
    std::ifstream f{"/proc/" + std::to_string(pid) + "/" + what};
    std::string line;
    std::getline(f, line);
    out += std::string{what} + ": " + line + "\n";
  }
  // Where gdb is installed, the stacks too.
  std::string const cmd = "gdb -p " + std::to_string(pid) +
                          " -batch -ex 'thread apply all bt 30' 2>/dev/null | grep -E '^#|^Thread'";
  if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
    ::pclose(p);
  }
  return out;
}

std::string stuck_child;  // where_is() of the last child wait_bounded() killed

int wait_bounded(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    int status = 0;
    pid_t const r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  stuck_child = where_is(pid);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

}  // namespace

// LeakSanitizer cannot scan the stacks of the threads fork() leaves behind, so a child's leak check
// at exit may count memory the parent's worker held on its stack as leaked ("Running thread N was
// not suspended. False leaks are possible."). Children skip it; the parent is still checked.
namespace {
std::atomic<int> in_forked_child{0};
}  // namespace
#ifdef NSK_TEST_ASAN
extern "C" __attribute__((used)) int __lsan_is_turned_off() { return in_forked_child.load(); }
#endif

// ---- fork ----

TEST_CASE("a child forked while another thread records exits, with a report of its own") {
  std::string const dir = fresh_dir("fork");
  auto o = quiet();
  o.at_exit = true;
  o.json = dir + "/summary.json";
  Session session{o};
  { ScopedRange before{"parent before fork"}; }
  std::atomic<bool> stop{false};
  std::thread worker{[&] {
    while (!stop.load()) {
      ScopedRange r{"worker"};
      ScopedRange inner{"inner"};
    }
  }};
  ScopedRange open_at_fork{"open at fork"};  // the child must not count (or end) it
  std::vector<pid_t> children;
  bool fork_failed = false;
  for (int i = 0; i < 20 && !fork_failed; ++i) {
    pid_t const pid = ::fork();
    if (pid < 0) {
      fork_failed = true;
    } else if (pid == 0) {
      in_forked_child.store(1);
      { ScopedRange c{"child"}; }
      std::exit(0);  // runs the at-exit report: must neither hang nor touch the parent's file
    } else {
      children.push_back(pid);
    }
  }
  std::vector<int> statuses;
  for (pid_t pid : children) statuses.push_back(wait_bounded(pid, 20));
  // The worker is joined before any REQUIRE can throw: a joinable std::thread would terminate.
  stop.store(true);
  worker.join();
  REQUIRE_FALSE(fork_failed);
  for (std::size_t i = 0; i < children.size(); ++i) {
    INFO("child " << children[i] << " (exit status, or -1: did not end in 20 s)\n" << stuck_child);
    REQUIRE(statuses[i] == 0);
  }
  if (!nsightkit::enabled) return;
  for (pid_t pid : children) {
    std::string const file = dir + "/summary.pid" + std::to_string(pid) + ".json";
    INFO(file);
    REQUIRE(file_exists(file));
    std::string const text = StderrCapture::read_file(file);
    REQUIRE(text.rfind("{\"format\":\"nsightkit-report\"", 0) == 0);
    REQUIRE(text.size() > 2);
    REQUIRE(text.substr(text.size() - 3) == "]}\n");  // complete: ends with "advice_missing"
    REQUIRE(text.find("\"forked_from\":" + std::to_string(::getpid())) != std::string::npos);
    REQUIRE(text.find("\"path\":\"child\"") != std::string::npos);
    REQUIRE(text.find("parent before fork") == std::string::npos);
    REQUIRE(text.find("worker") == std::string::npos);
    REQUIRE(text.find("open at fork") == std::string::npos);
  }
  // The parent's own data is untouched by its children.
  auto const snap = Report::snapshot();
  REQUIRE(snap.find("parent before fork") != nullptr);
  REQUIRE(snap.find("child") == nullptr);
  REQUIRE(snap.forked_from == 0);
  REQUIRE_FALSE(file_exists(dir + "/summary.json"));  // the parent writes at its own exit
}

// ---- outputs that cannot be written where asked ----

TEST_CASE("a bad output path is reported when the report is enabled, and nothing is lost") {
  std::string const dir = fresh_dir("badpath");
  REQUIRE(std::system(("touch " + dir + "/plainfile").c_str()) == 0);
  auto o = quiet();
  o.json = dir + "/plainfile/summary.json";  // under a regular file: cannot exist
  o.trace = dir + "/new/dirs/trace.json";    // missing directories: created
  StderrCapture err;
  {
    Session session{o};
    { ScopedRange r{"kept"}; }
    if (nsightkit::enabled) {
      // Said at once, at enable time, naming the fallback in the working directory.
      std::string const early = err.text();
      INFO(early);
      REQUIRE(early.find("the summary JSON cannot be written to '" + dir +
                         "/plainfile/summary.json'") != std::string::npos);
      REQUIRE(early.find("plainfile' exists and is not a directory") != std::string::npos);
      REQUIRE(file_exists(dir + "/new/dirs"));
    }
    REQUIRE_FALSE(Report::write());
  }
  if (!nsightkit::enabled) return;
  std::string const text = err.text();
  INFO(text);
  std::string const fallback = "nsightkit-summary." + std::to_string(::getpid()) + ".json";
  REQUIRE(text.find("wrote it to '" + fallback + "'") != std::string::npos);
  REQUIRE(StderrCapture::read_file(fallback).find("\"path\":\"kept\"") != std::string::npos);
  REQUIRE(file_exists(dir + "/new/dirs/trace.json"));
  REQUIRE(std::remove(fallback.c_str()) == 0);
}

TEST_CASE("a full disk gives the reason and the fallback file, a directory is refused") {
  REQUIRE(file_exists("/dev/full"));  // Linux: a device whose every write fails with ENOSPC
  auto o = quiet();
  o.csv = "/dev/full";
  std::string const dir = fresh_dir("isdir");
  o.json = dir;
  StderrCapture err;
  {
    Session session{o};
    { ScopedRange r{"row"}; }
    REQUIRE_FALSE(Report::write());
  }
  if (!nsightkit::enabled) return;
  std::string const text = err.text();
  INFO(text);
  REQUIRE(text.find("cannot write the summary CSV to '/dev/full' (writing failed: No space left "
                    "on device)") != std::string::npos);
  REQUIRE(text.find("'" + dir + "' is a directory") != std::string::npos);
  for (char const* stem : {"summary"}) {
    for (char const* ext : {".csv", ".json"}) {
      std::string const f =
          std::string{"nsightkit-"} + stem + "." + std::to_string(::getpid()) + ext;
      REQUIRE(file_exists(f));
      REQUIRE(std::remove(f.c_str()) == 0);
    }
  }
}

TEST_CASE("files are written whole: through a temporary renamed into place") {
  std::string const dir = fresh_dir("whole");
  auto o = quiet();
  o.json = dir + "/s.json";
  o.csv = dir + "/s.csv";
  Session session{o};
  { ScopedRange r{"x"}; }
  REQUIRE(Report::write() == nsightkit::enabled);
  REQUIRE(file_exists(dir + "/s.json") == nsightkit::enabled);
  // No temporary is left behind.
  REQUIRE(std::system(("test -z \"$(ls " + dir + " | grep nsightkit-tmp)\"").c_str()) == 0);
}

TEST_CASE("two outputs naming one file are refused when the spec is parsed") {
  std::string why;
  REQUIRE_FALSE(ReportOptions::try_parse("json=out.json,trace=out.json", &why));
  REQUIRE(why.rfind("json and trace both write 'out.json'", 0) == 0);
  REQUIRE_FALSE(ReportOptions::try_parse("table=r.txt,csv=r.txt", &why));
  REQUIRE(why.rfind("table and csv both write 'r.txt'", 0) == 0);
  REQUIRE(ReportOptions::try_parse("table=stderr,json=a.json,csv=a.csv"));
}

TEST_CASE("output names: rank, pid and a forked child's own file") {
  using nsightkit::detail::report::expand_output_path;
  REQUIRE(expand_output_path("s.json", -1, 42, false) == "s.json");
  REQUIRE(expand_output_path("s.json", -1, 42, true) == "s.pid42.json");
  REQUIRE(expand_output_path("d/s.{pid}.json", -1, 42, true) == "d/s.42.json");
  REQUIRE(expand_output_path("d.x/s", 3, 42, true) == "d.x/s.rank3.pid42");
}

// ---- scale ----

namespace {
void nest(int depth) {
  if (depth == 0) return;
  ScopedRange r{"level"};
  nest(depth - 1);
}

/// Runs nest(depth) on a thread with a stack big enough for the recursion (sanitizers included).
void nest_on_big_stack(int depth) {
  pthread_attr_t attr;
  REQUIRE(::pthread_attr_init(&attr) == 0);
  REQUIRE(::pthread_attr_setstacksize(&attr, std::size_t{1} << 30) == 0);
  pthread_t t;
  static int d;
  d = depth;
  REQUIRE(::pthread_create(
              &t, &attr,
              [](void*) -> void* {
                nest(d);
                return nullptr;
              },
              nullptr) == 0);
  REQUIRE(::pthread_join(t, nullptr) == 0);
  ::pthread_attr_destroy(&attr);
}
}  // namespace

TEST_CASE("nesting 100000 deep stays bounded: one (deeper ranges) row, outputs stay small") {
  std::string const dir = fresh_dir("deep");
  auto o = quiet();
  o.json = dir + "/s.json";
  o.csv = dir + "/s.csv";
  o.max_depth = 64;
  Session session{o};
  nest_on_big_stack(100000);
  auto const snap = Report::snapshot();
  REQUIRE(Report::write() == nsightkit::enabled);
  if (!nsightkit::enabled) return;
  REQUIRE(snap.paths.size() == 65);  // 64 levels and the row below them
  nsightkit::PathStats const& last = snap.paths.back();
  REQUIRE(last.name == "(deeper ranges)");
  REQUIRE(last.depth == 64);
  REQUIRE(last.cpu.count == 1);
  REQUIRE(snap.threads.back().depth_over_limit == 100000 - 64);
  REQUIRE(nsightkit::format_table(snap).find("nested deeper than the depth limit") !=
          std::string::npos);
  std::string const json = StderrCapture::read_file(dir + "/s.json");
  REQUIRE(json.size() < 2'000'000);  // was 204 MB at depth 10^4 before the limit
}

TEST_CASE("distinct mark names are capped like paths") {
  auto o = quiet();
  o.max_paths = 10;
  Session session{o};
  for (int i = 0; i < 25; ++i) nsightkit::mark("m{}", i);
  auto const snap = Report::snapshot();
  if (!nsightkit::enabled) return;
  REQUIRE(snap.marks.size() == 11);
  REQUIRE(snap.marks.back().name == "(other marks)");
  REQUIRE(snap.marks.back().count == 15);
  REQUIRE(snap.threads.front().marks_over_limit == 15);
}

// ---- text that would break a table or a CSV file ----

TEST_CASE("control characters and bad UTF-8 in names cannot break the table or the CSV") {
  Session session;
  { ScopedRange r{std::string{"evil\x1b[31m\nname\r"}}; }
  { ScopedRange r{std::string{"bad \xff\xfe utf8"}}; }
  { ScopedRange r{std::string{"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac"}}; }  // "café 日本"
  auto const snap = Report::snapshot();
  std::string const table = nsightkit::format_table(snap);
  std::string const csv = nsightkit::summary_csv(snap);
  if (!nsightkit::enabled) return;
  INFO(table);
  REQUIRE(table.find('\x1b') == std::string::npos);
  REQUIRE(table.find('\r') == std::string::npos);
  REQUIRE(table.find("evil\\x1b[31m\\nname\\r") != std::string::npos);
  REQUIRE(table.find("bad \xEF\xBF\xBD\xEF\xBF\xBD utf8") != std::string::npos);
  REQUIRE(csv.find("\xff") == std::string::npos);
  REQUIRE(csv.find("bad \xEF\xBF\xBD\xEF\xBF\xBD utf8") != std::string::npos);
  // Rows align by code points: the calls column starts at the same column on every row.
  std::vector<std::size_t> columns;
  std::size_t pos = 0;
  while (pos < table.size()) {
    std::size_t const end = table.find('\n', pos);
    std::string const line = table.substr(pos, end - pos);
    pos = end == std::string::npos ? table.size() : end + 1;
    std::string const prefix = line.substr(0, line.find("       1 "));
    if (line.find("       1 ") != std::string::npos)
      columns.push_back(nsightkit::detail::code_points(prefix));
  }
  REQUIRE(columns.size() == 3);
  REQUIRE(columns[0] == columns[1]);
  REQUIRE(columns[1] == columns[2]);
}

TEST_CASE("text helpers: printable, valid UTF-8, cut by code points") {
  namespace nd = nsightkit::detail;
  REQUIRE(nd::printable("a\tb\x7f") == "a\\tb\\x7f");
  REQUIRE(nd::printable("\xc2\x85") == "\\u0085");  // a C1 control (NEL)
  REQUIRE(nd::valid_utf8("ok\xc3(") == "ok\xEF\xBF\xBD(");
  REQUIRE(nd::prefix_code_points("\xe6\x97\xa5\xe6\x9c\xac", 1) == "\xe6\x97\xa5");
  std::string const long_value(120'000, 'x');
  std::string const q = nd::quote_value(long_value);
  REQUIRE(q.size() < 120);
  REQUIRE(q.find("(120000 bytes)") != std::string::npos);
}

// ---- messages ----

TEST_CASE("one rule for the words that switch features off and on") {
  namespace nd = nsightkit::detail;
  for (char const* off : {"0", "off", "OFF", "None", "false", "No", " off "}) {
    INFO(off);
    REQUIRE(nd::is_off_word(off));
    REQUIRE_FALSE(ReportOptions::try_parse(off));  // the report stays off, no error
    std::string why;
    REQUIRE_FALSE(ReportOptions::try_parse(off, &why));
    REQUIRE(why.empty());
  }
  for (char const* on : {"1", "on", "On", "TRUE", "yes"}) {
    INFO(on);
    REQUIRE(nd::is_on_word(on));
    REQUIRE(ReportOptions::try_parse(on));
    REQUIRE(ReportOptions::try_parse(std::string{"gpu="} + on)->gpu);
  }
}

TEST_CASE("a misspelt NSIGHTKIT_ variable is named once, with the variable meant") {
  namespace nd = nsightkit::detail;
  REQUIRE(nd::unknown_variable_message("NSIGHTKIT_REPORT").empty());
  REQUIRE(nd::unknown_variable_message("NSIGHTKIT_REPROT") ==
          "nsightkit: unknown environment variable NSIGHTKIT_REPROT is ignored (did you mean "
          "NSIGHTKIT_REPORT?); set NSIGHTKIT_IGNORE_UNKNOWN_VARIABLES=1 to silence this");
  REQUIRE(nd::unknown_variable_message("NSIGHTKIT_CAPTUR").find("NSIGHTKIT_CAPTURE?") !=
          std::string::npos);
  REQUIRE(nd::unknown_variable_message("NSIGHTKIT_SOMETHING_ELSE").find("did you mean") ==
          std::string::npos);
  ScopedEnv bad{"NSIGHTKIT_CAPTUER", "active=1"};
  StderrCapture err;
  nd::environment_checked.store(false);
  nd::check_environment_once();
  nd::check_environment_once();  // once per process
  REQUIRE(count_of(err.text(), "NSIGHTKIT_CAPTUER is ignored (did you mean NSIGHTKIT_CAPTURE?)") ==
          1);
}

TEST_CASE("bad launcher rank variables are all named, once, and long values are cut") {
  namespace nd = nsightkit::detail;
  std::string const huge(120'000, '9');
  ScopedEnv a{"OMPI_COMM_WORLD_RANK", "x1"};
  ScopedEnv b{"PMI_RANK", huge.c_str()};
  ScopedEnv c{"SLURM_PROCID", nullptr};
  ScopedEnv d{"RANK", "4"};
  ScopedEnv e{"LOCAL_RANK", nullptr};
  StderrCapture err;
  nd::rank_warning_printed.store(false);
  auto const r = nd::launcher_rank();
  (void)nd::launcher_rank();
  REQUIRE(r);
  REQUIRE(r->rank == 4);
  std::string const text = err.text();
  INFO(text.substr(0, 400));
  REQUIRE(count_of(text, "nsightkit: ignoring") == 1);
  REQUIRE(text.find("OMPI_COMM_WORLD_RANK='x1'") != std::string::npos);
  REQUIRE(text.find("PMI_RANK='9999") != std::string::npos);
  REQUIRE(text.find("(120000 bytes)") != std::string::npos);
  REQUIRE(text.size() < 600);
}

TEST_CASE("NSIGHTKIT_REPORT_CLOCK accepts auto, steady and tsc, and names anything else") {
  namespace nr = nsightkit::detail::report;
  {
    ScopedEnv v{"NSIGHTKIT_REPORT_CLOCK", "Steady"};
    REQUIRE(nr::clock_choice() == nr::ClockChoice::steady);
  }
  {
    ScopedEnv v{"NSIGHTKIT_REPORT_CLOCK", "tsc"};
    REQUIRE(nr::clock_choice() == nr::ClockChoice::tsc);
  }
  ScopedEnv v{"NSIGHTKIT_REPORT_CLOCK", "fastest"};
  StderrCapture err;
  REQUIRE(nr::clock_choice() == nr::ClockChoice::automatic);
  REQUIRE(err.text().find("NSIGHTKIT_REPORT_CLOCK='fastest' is not one of auto, steady, tsc") !=
          std::string::npos);
}

TEST_CASE("ranges named per step are pointed out in the table") {
  Session session;
  for (int step = 0; step < 40; ++step) {
    ScopedRange s{"step {}", step};
    ScopedRange f{"forward"};
  }
  for (int i = 0; i < 3; ++i) {
    for (int layer = 0; layer < 48; ++layer) ScopedRange l{"h{}", layer};  // layers: no note
  }
  auto const snap = Report::snapshot();
  std::string const table = nsightkit::format_table(snap);
  if (!nsightkit::enabled) return;
  REQUIRE(count_of(table, "note: 40 sibling paths differ only in numbers") == 1);
  REQUIRE(table.find("'h") == std::string::npos);
}

TEST_CASE("under an injected CUDA tool the report says GPU times are not representative") {
  ScopedEnv tool{"CUDA_INJECTION64_PATH", "/opt/nvidia/nsight-compute/libInjection.so"};
  Session session;
  { ScopedRange r{"x"}; }
  auto const snap = Report::snapshot();
  if (!nsightkit::enabled) return;
  REQUIRE(snap.gpu.note.find("a CUDA tool is attached") != std::string::npos);
  REQUIRE(nsightkit::format_table(snap).find("GPU: ") != std::string::npos);
}
