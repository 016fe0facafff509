// The report's pieces for long jobs (docs/long-jobs.md), in one process: the grammar of signals,
// triggers, snapshots and the strict mode; rank suffixes only where the world has several ranks,
// and names that cannot collide across hosts; the process claim made without the environment;
// start/end range names capped like paths; GPU busy time folded as it comes, exactly as the
// whole-run computation. The signals themselves are sent to real processes by run_long_jobs.py.
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/engine.hpp>  // the engine's pieces, in either mode
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "report_support.hpp"

using nsightkit::Report;
using nsightkit::ReportOptions;
using nsk_test::ScopedEnv;
using nsk_test::StderrCapture;
namespace nr = nsightkit::detail::report;
namespace nd = nsightkit::detail;

namespace {

ReportOptions parse_ok(std::string const& spec) {
  ReportOptions o;
  bool on = false;
  std::string why;
  INFO(spec);
  REQUIRE(nr::parse_report_spec(spec, o, on, why));
  REQUIRE(on);
  return o;
}

std::string parse_error(std::string const& spec) {
  ReportOptions o;
  bool on = false;
  std::string why;
  INFO(spec);
  REQUIRE_FALSE(nr::parse_report_spec(spec, o, on, why));
  return why;
}

/// Unsets every launcher variable for a scope.
struct NoLauncher {
  ScopedEnv v[12] = {{"OMPI_COMM_WORLD_RANK", nullptr},
                     {"OMPI_COMM_WORLD_SIZE", nullptr},
                     {"PMI_RANK", nullptr},
                     {"PMI_SIZE", nullptr},
                     {"SLURM_PROCID", nullptr},
                     {"SLURM_NTASKS", nullptr},
                     {"SLURM_STEP_NUM_TASKS", nullptr},
                     {"RANK", nullptr},
                     {"WORLD_SIZE", nullptr},
                     {"LOCAL_RANK", nullptr},
                     {"LOCAL_WORLD_SIZE", nullptr},
                     {"NSIGHTKIT_REPORT_STRICT", nullptr}};
};

}  // namespace

TEST_CASE("signals, triggers, snapshots and strict in NSIGHTKIT_REPORT") {
  ReportOptions const d = parse_ok("table");
  CHECK(d.signals == std::vector<int>{SIGTERM, SIGINT, SIGHUP, SIGUSR1});
  CHECK(d.trigger_signal == SIGUSR2);
  CHECK(d.trigger_file.empty());
  CHECK(d.snapshot_every.count() == 0);
  CHECK_FALSE(d.strict);

  CHECK(parse_ok("table,signals=term+SIGUSR1").signals == std::vector<int>{SIGTERM, SIGUSR1});
  CHECK(parse_ok("table,signals=off").signals.empty());
  CHECK(parse_ok("table,trigger-signal=off").trigger_signal == 0);
  CHECK(parse_ok("table,signals=TERM,trigger-signal=USR1").trigger_signal == SIGUSR1);
  CHECK(parse_ok("json=s.json,trigger-file=/tmp/go").trigger_file == "/tmp/go");
  CHECK(parse_ok("table,snapshot-every=30s").snapshot_every == std::chrono::seconds(30));
  CHECK(parse_ok("table,snapshot-every=250ms").snapshot_every == std::chrono::milliseconds(250));
  CHECK(parse_ok("table,snapshot-every=5m").snapshot_every == std::chrono::minutes(5));
  CHECK(parse_ok("table,snapshot-every=2h").snapshot_every == std::chrono::hours(2));
  CHECK(parse_ok("table,snapshot-every=7").snapshot_every == std::chrono::seconds(7));
  CHECK(parse_ok("table,snapshot-every=off").snapshot_every.count() == 0);
  CHECK(parse_ok("table,strict").strict);
  CHECK_FALSE(parse_ok("table,strict=off").strict);

  CHECK_THAT(parse_error("table,signals=SEGV"),
             Catch::Contains("'SEGV' is not a signal the report handles (TERM, INT, HUP"));
  CHECK_THAT(parse_error("table,signals=TERM+15"), Catch::Contains("SIGTERM is given twice"));
  CHECK_THAT(parse_error("table,signals=TERM+"), Catch::Contains("is not a signal"));
  CHECK_THAT(
      parse_error("table,trigger-signal=USR1"),
      Catch::Contains("SIGUSR1 is both in signals= (write the outputs) and trigger-signal="));
  CHECK_THAT(parse_error("table,trigger-signal=KILL"), Catch::Contains("not a signal the report"));
  CHECK_THAT(parse_error("table,snapshot-every=5ms"), Catch::Contains("bad duration"));
  CHECK_THAT(parse_error("table,snapshot-every=soon"), Catch::Contains("bad duration"));
  CHECK_THAT(parse_error("table,snapshot-every=31d"), Catch::Contains("bad duration"));
  CHECK_THAT(parse_error("table,strict=maybe"), Catch::Contains("bad switch value"));
  CHECK_THAT(parse_error("table,trigger-file"), Catch::Contains("needs a file path"));
  CHECK_THAT(parse_error("table,strict,strict"), Catch::Contains("'strict' given twice"));
  CHECK(nr::spec_asks_strict("tabel, strict"));
  CHECK(nr::spec_asks_strict("strict=on,json"));
  CHECK_FALSE(nr::spec_asks_strict("strict=off,tabel"));
}

TEST_CASE("a rank goes into file names only where the world has several ranks") {
  NoLauncher clean;
  CHECK_FALSE(nd::launcher_rank());
  {
    ScopedEnv r{"SLURM_PROCID", "0"};
    ScopedEnv n{"SLURM_NTASKS", "1"};  // srun -n 1 ./app
    CHECK_FALSE(nd::launcher_rank());
    CHECK(Report::output_path("out.json") == "out.json");
    ScopedEnv step{"SLURM_STEP_NUM_TASKS", "4"};  // the step's count wins over the job's
    REQUIRE(nd::launcher_rank());
    CHECK(Report::output_path("out.json") == "out.rank0.json");
  }
  {
    ScopedEnv r{"RANK", "2"};
    ScopedEnv w{"WORLD_SIZE", "1"};
    CHECK_FALSE(Report::rank());
    ::setenv("WORLD_SIZE", "4", 1);
    CHECK(Report::rank() == 2);
    CHECK(Report::output_path("t.json") == "t.rank2.json");
  }
  {
    ScopedEnv r{"OMPI_COMM_WORLD_RANK", "1"};  // no size said: the rank is used
    CHECK(Report::rank() == 1);
  }
  std::string const host = nd::host_name();
  REQUIRE_FALSE(host.empty());
  CHECK(host.find('/') == std::string::npos);
  {
    ScopedEnv l{"LOCAL_RANK", "3"};  // repeats on every host: named with the host
    CHECK_FALSE(Report::rank());
    CHECK(Report::output_path("out.json") == "out." + host + ".local3.json");
    CHECK(Report::output_path("r{rank}.json") == "r3.json");
    ScopedEnv s{"LOCAL_WORLD_SIZE", "1"};
    CHECK(Report::output_path("out.json") == "out.json");
    ScopedEnv g{"RANK", "9"};  // a global rank names the file alone
    CHECK(Report::output_path("out.json") == "out.rank9.json");
  }
  CHECK(Report::output_path("{host}/s.json") == host + "/s.json");
  CHECK(nr::expand_output_path("a.json", -1, 7, false, 2, "n1") == "a.n1.local2.json");
  CHECK(nr::expand_output_path("a.json", 4, 7, true, 2, "n1") == "a.rank4.pid7.json");
}

TEST_CASE("a rank set by a component (nsightkit::mpi) wins over the variables, in no environment") {
  NoLauncher clean;
  ScopedEnv r{"RANK", "7"};
  nd::set_process_rank(1, 2);
  CHECK(Report::rank() == 1);
  CHECK(Report::output_path("s.json") == "s.rank1.json");
  CHECK(std::getenv("RANK") == std::string{"7"});  // nothing written to the environment
  nd::set_process_rank(0, 1);                      // one rank: no suffix
  CHECK_FALSE(Report::rank());
  CHECK(Report::output_path("s.json") == "s.json");
  nd::set_process_rank(-1, -1);
  CHECK(Report::rank() == 7);
}

TEST_CASE("the process claim is a memfd's name: found by every copy, earliest wins") {
  nr::Claim c;
  CHECK(nr::parse_claim("nsightkit-report-owner 123 tool 7f00 0 (deleted)", c));
  CHECK(c.time == 123);
  CHECK(c.kind == "tool");
  CHECK(c.state == reinterpret_cast<void const*>(std::uintptr_t{0x7f00}));
  CHECK(c.attach == nullptr);
  CHECK_FALSE(nr::parse_claim("nsightkit-report-owner x", c));
  CHECK_FALSE(nr::parse_claim("something else 1 program 1 1", c));

  static int const fake_a = 0, fake_b = 0;
  int const a = nr::make_claim(&fake_a, nullptr);
  REQUIRE(a >= 0);
  int const b = nr::make_claim(&fake_b, nullptr);
  REQUIRE(b >= 0);
  std::vector<nr::Claim> const all = nr::list_claims();
  auto find = [&](int fd) {
    return std::find_if(all.begin(), all.end(), [&](nr::Claim const& x) { return x.fd == fd; });
  };
  REQUIRE(find(a) != all.end());
  REQUIRE(find(b) != all.end());
  CHECK(find(a)->state == &fake_a);
  CHECK(find(a)->kind == "program");
  CHECK(find(a)->time <= find(b)->time);
  nr::Claim const owner = nr::read_claim();
  CHECK(owner.time <= find(a)->time);  // the earliest claim owns the process
  {
    // A third copy arriving now finds an owner that is not itself: it stays off, saying why.
    static int const fake_c = 0;
    StderrCapture err;
    bool const was = nr::duplicate_copy.exchange(false);
    CHECK_FALSE(nr::claim_process(&fake_c, nullptr));
    CHECK_THAT(err.text(), Catch::Contains("carries a second copy of nsightkit's report"));
    CHECK(nr::list_claims().size() == all.size());  // its own claim is withdrawn
    nr::duplicate_copy.store(was);
  }
  ::close(a);
  ::close(b);
  CHECK(nr::list_claims().size() == all.size() - 2);
}

TEST_CASE("start/end range names are capped like paths - the rest are counted together") {
  if (!nsightkit::enabled) return;  // nothing is recorded in a disabled build
  ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  o.signals.clear();
  o.trigger_signal = 0;
  o.max_paths = 4;
  REQUIRE(Report::enable(o));
  Report::reset();
  for (int i = 0; i < 10; ++i) nsightkit::UniqueRange r{"request {}", i};
  auto const snap = Report::snapshot();
  Report::disable();
  REQUIRE(snap.start_end.size() == 5);
  std::uint64_t other = 0;
  for (auto const& s : snap.start_end) {
    if (s.name == "(other start/end ranges)") other = s.time.count;
  }
  CHECK(other == 6);
}

TEST_CASE("GPU busy time folded as slices arrive equals the whole-run union, bin by bin") {
  // Two streams of slices over 24 s, each reported up to 0.5 s late and out of order: more than
  // enough to make the writer fold (10 s lateness, 4096 slices) several times.
  std::mt19937_64 rng{42};
  constexpr std::int64_t ms = 1'000'000, span = 24'000 * ms;
  std::vector<std::pair<std::int64_t, std::int64_t>> all;
  for (std::int64_t t = 0; t < span;) {
    std::int64_t const len = static_cast<std::int64_t>(rng() % (3 * ms)) + 1000;
    all.emplace_back(t, t + len);
    if (rng() % 3 == 0) {  // a concurrent kernel on the other stream
      std::int64_t const s = t + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(len));
      all.emplace_back(s, s + static_cast<std::int64_t>(rng() % (2 * ms)) + 1);
    }
    t += len + static_cast<std::int64_t>(rng() % (2 * ms));
  }
  // Expected: the union's length per bin of 1 ms from the origin, bins merged pairwise while
  // there are more than 10^4 (the rule of detail/report/trace/writer.hpp).
  std::vector<std::pair<std::int64_t, std::int64_t>> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  std::int64_t width = ms;
  while (span / width + 2 > 10'000) width *= 2;
  std::vector<std::int64_t> expected(static_cast<std::size_t>(span / width + 4), 0);
  std::int64_t frontier = 0;
  for (auto [s, e] : sorted) {
    s = std::max(s, frontier);
    if (e <= s) continue;
    frontier = e;
    for (std::int64_t x = s; x < e;) {
      std::int64_t const b = x / width, end = std::min(e, (b + 1) * width);
      expected[static_cast<std::size_t>(b)] += end - x;
      x = end;
    }
  }
  // Delivered in batches of about 0.5 s, shuffled within each batch.
  nr::TextSink sink;
  nr::TraceWriter w{sink, 1, 0};
  std::shuffle(all.begin(), all.end(), rng);
  std::stable_sort(all.begin(), all.end(), [](auto const& x, auto const& y) {
    return x.second / (500 * ms) < y.second / (500 * ms);
  });
  for (std::size_t at = 0; at < all.size();) {
    nr::ThreadTraceCopy c;
    c.tid = 1;
    c.names = {"\"k\""};
    c.paths = {"\"k\""};
    c.prepared = true;
    c.tracks = {nr::GpuTrack{nullptr, 0, 1}, nr::GpuTrack{nullptr, 0, 2}};
    std::int64_t const batch = all[at].second / (500 * ms);
    for (; at < all.size() && all[at].second / (500 * ms) == batch; ++at) {
      c.gpu.push_back(nr::GpuSlice{all[at].first, all[at].second - all[at].first, 0,
                                   static_cast<std::uint32_t>(at % 2), -1, 0, nr::no_node});
    }
    w.thread(c, false);
    sink.buffer().clear();
  }
  w.busy_counters();
  std::string const text = sink.buffer();
  std::size_t checked = 0, pos = 0;
  while ((pos = text.find("\"GPU busy % (device 0)\"", pos)) != std::string::npos) {
    std::size_t const ts = text.find("\"ts\":", pos) + 5;
    std::size_t const busy = text.find("\"busy\":", pos) + 7;
    double const t_us = std::stod(text.substr(ts, 20));
    double const pct = std::stod(text.substr(busy, 10));
    auto const bin = static_cast<std::size_t>(std::llround(t_us * 1000.0) / width);
    INFO("bin " << bin);
    CHECK(std::abs(pct - 100.0 * static_cast<double>(expected[bin]) / static_cast<double>(width)) <=
          0.051);
    ++checked;
    pos = busy;
  }
  // Every bin from the first busy one to the last, each checked above.
  auto const busy = [](std::int64_t v) { return v != 0; };
  auto const first = std::find_if(expected.begin(), expected.end(), busy);
  auto const last = std::find_if(expected.rbegin(), expected.rend(), busy).base();
  CHECK(checked == static_cast<std::size_t>(last - first));
  CHECK(checked > 5000);
}
