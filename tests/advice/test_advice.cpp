// The report's advice (docs/advice.md) on synthetic record streams: a fake CUPTI source delivers
// kernels, copies and host-blocking calls against real ranges and capture-window steps, and each
// program commits one mistake. Each rule fires exactly once on its own mistake, naming the right
// path with the cost its documented estimate gives; a clean program gets no advice even with
// advice=all; thresholds and modes change what is shown; without CUPTI the GPU rules say what was
// missing instead of guessing.
#include <nsightkit/capture.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "fake_cupti.hpp"

using nsightkit::Advice;
using nsightkit::AdviceMode;
using nsightkit::AdviceThresholds;
using nsightkit::Report;
using nsightkit::ReportSnapshot;
using nsightkit::ScopedRange;

#if NSIGHTKIT_ENABLED
using nsightkit_test::fake;
using nsightkit_test::FakeCupti;
using nsightkit_test::Session;
namespace nr = nsightkit::detail::report;

namespace {

constexpr int steps = 3;

/// Runs `steps` capture-window steps of `body(step)`. Tests whose GPU work need not line up with
/// the CPU place it on a synthetic timeline, a slot 10 ms apart per step (base(step)).
template <class Body>
void run_steps(Body body) {
  nsightkit::CaptureOptions co;
  co.backends = nsightkit::CaptureBackend::nvtx_range;
  nsightkit::CaptureWindow window{nsightkit::CaptureSchedule{0, 0, steps}, co};
  for (int i = 0; i < steps; ++i) {
    auto step = window.step();
    body(i);
  }
}

std::int64_t base(int step) { return std::int64_t{step + 1} * 10'000'000; }

std::vector<std::string> rules(ReportSnapshot const& s) {
  std::vector<std::string> out;
  for (Advice const& a : s.advice) out.push_back(a.rule);
  return out;
}

Advice const& only(ReportSnapshot const& s, char const* rule) {
  INFO(nsightkit::format_table(s));
  REQUIRE(rules(s) == std::vector<std::string>{rule});
  return s.advice.front();
}

/// `n` launches in a range `name`, their kernels `len` ns long every `every` ns from `base`.
void burst(char const* name, int n, std::int64_t base, std::int64_t len, std::int64_t every) {
  std::vector<std::uint32_t> ids;
  {
    ScopedRange r{name};
    for (int k = 0; k < n; ++k) ids.push_back(fake->launch(base));
  }
  for (int k = 0; k < n; ++k)
    fake->kernel(ids[static_cast<std::size_t>(k)], 1, base + k * every, base + k * every + len);
}

}  // namespace

TEST_CASE("a clean program: busy GPU, pinned copies beside kernels, one stream each -> no advice") {
  Session session{false, AdviceMode::all};
  run_steps([](int) {
    std::int64_t const t0 = FakeCupti::now();
    std::uint32_t k = 0, c = 0;
    {
      ScopedRange fwd{"forward"};
      k = fake->launch(t0);
      c = fake->launch(t0);
    }
    std::int64_t const t1 = FakeCupti::now();
    fake->kernel(k, 1, t0, t1);
    fake->copy(c, nr::CopyKind::h2d, 1 << 20, t0, t0 + (t1 - t0) / 2, false, 2);
  });
  auto const s = Report::snapshot();
  INFO(nsightkit::format_table(s));
  REQUIRE(s.find("forward")->work.kernels == steps);
  REQUIRE(s.advice.empty());
  // Every rule was evaluated, and one process without NCCL has no rank to wait for: nothing is
  // listed missing.
  REQUIRE(s.advice_missing.empty());
  REQUIRE(s.gpu.devices.size() == 1);
  REQUIRE(s.gpu.devices[0].copy_overlap_ns == s.gpu.devices[0].copy_busy_ns);
  REQUIRE(nsightkit::format_table(s).find("\nadvice (") == std::string::npos);
  REQUIRE(nsightkit::format_table(s).find("not evaluated") == std::string::npos);
}

TEST_CASE("the straggler rule is named not evaluated for a rank of several or a run with NCCL") {
  auto const one_kernel = [](char const* kernel) {
    run_steps([&](int) {
      std::int64_t const t0 = FakeCupti::now();
      std::uint32_t k = 0;
      {
        ScopedRange fwd{"forward"};
        k = fake->launch(t0);
      }
      fake->kernel(k, 1, t0, FakeCupti::now(), kernel);
    });
  };
  auto const only_straggler_missing = [](ReportSnapshot const& s) {
    INFO(nsightkit::format_table(s));
    REQUIRE(s.advice_missing.size() == 1);
    REQUIRE(s.advice_missing[0].find("NCCL waiting on a straggler rank") != std::string::npos);
    REQUIRE(s.advice_missing[0].find("nsightkit merge") != std::string::npos);
    REQUIRE(nsightkit::format_table(s).find("advice not evaluated: NCCL") != std::string::npos);
  };
  SECTION("one process whose range ran an NCCL collective's kernel") {
    Session session{false, AdviceMode::all};
    one_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    only_straggler_missing(Report::snapshot());
  }
  SECTION("one rank of two, without NCCL") {
    struct RankOfTwo {  // as nsightkit::mpi sets it
      RankOfTwo() { nsightkit::detail::set_process_rank(1, 2); }
      ~RankOfTwo() { nsightkit::detail::set_process_rank(-1, -1); }
    } rank;
    Session session{false, AdviceMode::all};
    one_kernel("kernel_a");
    only_straggler_missing(Report::snapshot());
  }
}

TEST_CASE("gpu-waits-for-cpu: a CPU-only range inside the steps while the GPU idles is named") {
  Session session{false, AdviceMode::all};
  run_steps([](int) {
    {
      ScopedRange load{"load"};
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    std::int64_t const t0 = FakeCupti::now();
    std::uint32_t k = 0;
    {
      ScopedRange fwd{"forward"};
      k = fake->launch(t0);
    }
    fake->kernel(k, 1, t0, FakeCupti::now() + 1000);
  });
  auto const s = Report::snapshot();
  Advice const& a = only(s, "gpu-waits-for-cpu");
  REQUIRE(a.paths == std::vector<std::string>{"load"});
  REQUIRE(a.cost_ns == s.find("load")->cpu.total_ns / steps);
  REQUIRE(a.cost_ns >= 3'000'000);
  REQUIRE(a.severity == "high");
  REQUIRE(a.evidence.find("no GPU work") != std::string::npos);
}

TEST_CASE("pageable-copies: pageable host memory in a copy names the range that copied") {
  Session session{false, AdviceMode::all};
  std::int64_t copy_ns = 0;
  run_steps([&](int i) {
    std::int64_t const t0 = base(i);
    std::uint32_t k = 0, c = 0;
    {
      ScopedRange fwd{"forward"};
      k = fake->launch(t0);
      ScopedRange upload{"upload"};
      c = fake->launch(t0);
    }
    fake->kernel(k, 1, t0, t0 + 40'000);
    fake->copy(c, nr::CopyKind::h2d, 8 << 20, t0, t0 + 20'000, true, 2);  // beside the kernel
    copy_ns += 20'000;
  });
  auto const s = Report::snapshot();
  Advice const& a = only(s, "pageable-copies");
  REQUIRE(a.paths == std::vector<std::string>{"forward/upload"});
  REQUIRE(a.evidence.find("3 pageable host to device copies, 25 MB") != std::string::npos);
  // No pinned copies to measure against: the documented 5.7x of pinned over pageable.
  auto const expected = static_cast<std::int64_t>(static_cast<double>(copy_ns) * (1 - 1 / 5.7));
  REQUIRE(a.cost_ns == expected / steps);
}

TEST_CASE("pageable-copies: the gain uses the pinned bandwidth measured in the same run") {
  Session session{false, AdviceMode::all};
  run_steps([](int i) {
    std::int64_t const t0 = base(i);
    std::uint32_t k = 0, pageable = 0, pinned = 0;
    {
      ScopedRange fwd{"forward"};
      k = fake->launch(t0);
      {
        ScopedRange a{"labels"};
        pageable = fake->launch(t0);
      }
      ScopedRange b{"images"};
      pinned = fake->launch(t0);
    }
    fake->kernel(k, 1, t0, t0 + 100'000);
    // 1 MB in 40 us pageable; 4 MB in 40 us pinned: pinned moves 4x as fast here.
    fake->copy(pageable, nr::CopyKind::h2d, 1'000'000, t0, t0 + 40'000, true, 2);
    fake->copy(pinned, nr::CopyKind::h2d, 4'000'000, t0 + 40'000, t0 + 80'000, false, 2);
  });
  auto const s = Report::snapshot();
  Advice const& a = only(s, "pageable-copies");
  REQUIRE(a.paths == std::vector<std::string>{"forward/labels"});
  REQUIRE(a.cost_ns == 30'000);  // 40 us now, 10 us at the pinned rate
}

TEST_CASE("copy-overlap: copies that run after the kernels instead of beside them") {
  Session session{false, AdviceMode::all};
  run_steps([](int i) {
    std::int64_t const t0 = base(i);
    std::uint32_t k = 0, c = 0;
    {
      ScopedRange fwd{"forward"};
      k = fake->launch(t0);
    }
    {
      ScopedRange next{"next_batch"};
      c = fake->launch(t0);
    }
    fake->kernel(k, 1, t0, t0 + 60'000);
    fake->copy(c, nr::CopyKind::h2d, 1 << 20, t0 + 60'000, t0 + 100'000, false, 2);  // after it
  });
  auto const s = Report::snapshot();
  Advice const& a = only(s, "copy-overlap");
  REQUIRE(a.paths == std::vector<std::string>{"next_batch"});
  REQUIRE(a.cost_ns == 40'000);  // the copy is the shorter: all of it could hide under the kernel
  REQUIRE(a.evidence.find("0% of it beside kernels") != std::string::npos);
  REQUIRE(s.gpu.devices[0].copy_overlap_ns == 0);
  REQUIRE(s.gpu.devices[0].copy_busy_ns == steps * 40'000);
  REQUIRE(s.gpu.devices[0].kernel_busy_ns == steps * 60'000);
}

TEST_CASE("host-sync: a blocking call inside a range, with the time it blocked and the API") {
  Session session{false, AdviceMode::all};
  run_steps([](int i) {
    std::uint32_t k = 0;
    {
      ScopedRange fwd{"forward"};
      k = fake->launch(0);
      ScopedRange loss{"loss"};
      fake->sync("cudaStreamSynchronize", 2'000'000);
    }
    fake->kernel(k, 1, base(i), base(i) + 5'000'000);  // the GPU is busy: no CPU-only range
  });
  auto const s = Report::snapshot();
  Advice const& a = only(s, "host-sync");
  REQUIRE(a.paths == std::vector<std::string>{"forward/loss"});
  REQUIRE(a.cost_ns == 2'000'000);
  REQUIRE(a.evidence.find("3 blocking calls") != std::string::npos);
  REQUIRE(a.evidence.find("cudaStreamSynchronize") != std::string::npos);
  REQUIRE(s.find("forward/loss")->work.sync_calls == steps);
  REQUIRE(s.find("forward/loss")->work.sync_api == "cudaStreamSynchronize");
}

TEST_CASE("legacy-stream: work on the legacy default stream beside other streams") {
  Session session{false, AdviceMode::all};
  run_steps([](int i) {
    std::int64_t const t0 = base(i);
    std::uint32_t k = 0, other = 0;
    {
      ScopedRange fwd{"forward"};
      k = fake->launch(t0);
    }
    {
      ScopedRange side{"side"};
      other = fake->launch(t0);
    }
    fake->kernel(k, 7, t0, t0 + 1000).legacy = true;
    fake->kernel(other, 2, t0, t0 + 1000);
  });
  auto const s = Report::snapshot();
  Advice const& a = only(s, "legacy-stream");
  REQUIRE(a.paths == std::vector<std::string>{"forward"});
  REQUIRE(a.severity == "medium");
  REQUIRE(s.find("forward")->work.legacy_stream_work == steps);
  REQUIRE(s.find("side")->work.legacy_stream_work == 0);
}

TEST_CASE("legacy-stream: the legacy stream alone is fine") {
  Session session{false, AdviceMode::all};
  run_steps([](int i) {
    std::uint32_t k = 0;
    {
      ScopedRange fwd{"forward"};
      k = fake->launch(0);
    }
    fake->kernel(k, 7, base(i), base(i) + 1000).legacy = true;
  });
  auto const s = Report::snapshot();
  INFO(nsightkit::format_table(s));
  REQUIRE(s.advice.empty());
}

TEST_CASE("graph-candidate: many small kernels whose launch gaps dominate, gain = the gaps") {
  Session session{false, AdviceMode::all};
  // 30 kernels of 2 us every 10 us per call: 8 us idle after each but the last.
  run_steps([](int i) { burst("block", 30, base(i), 2'000, 10'000); });
  auto const s = Report::snapshot();
  Advice const& a = only(s, "graph-candidate");
  REQUIRE(a.paths == std::vector<std::string>{"block"});
  REQUIRE(a.cost_ns == 29 * 8'000);
  REQUIRE(a.evidence.find("30 kernels per call of 2.00 us") != std::string::npos);
  REQUIRE(a.suggestion.find("record the range once with nsightkit::GraphRecorder") !=
          std::string::npos);
}

TEST_CASE("launch-bound: kernels shorter than the gaps between them, too few for a graph") {
  Session session{false, AdviceMode::all};
  run_steps([](int i) { burst("block", 5, base(i), 2'000, 10'000); });
  auto const s = Report::snapshot();
  Advice const& a = only(s, "launch-bound");
  REQUIRE(a.paths == std::vector<std::string>{"block"});
  REQUIRE(a.cost_ns == 4 * 8'000);
}

TEST_CASE("thresholds: graph_kernels above the burst makes it launch-bound, idle_share hides it") {
  AdviceThresholds t;
  t.graph_kernels = 40;
  {
    Session session{false, AdviceMode::all, t};
    run_steps([](int i) { burst("block", 30, base(i), 2'000, 10'000); });
    REQUIRE(rules(Report::snapshot()) == std::vector<std::string>{"launch-bound"});
  }
  t.idle_share = 0.9;  // the burst is 79% idle
  {
    Session session{false, AdviceMode::all, t};
    run_steps([](int i) { burst("block", 30, base(i), 2'000, 10'000); });
    REQUIRE(Report::snapshot().advice.empty());
  }
}

TEST_CASE("advice=on shows findings costing min_cost of a step, all shows every one, off none") {
  AdviceThresholds t;
  t.min_cost = 1e6;  // a million steps: nothing costs that much
  auto const host_sync = [] {
    run_steps([](int) {
      ScopedRange fwd{"forward"};
      fake->sync("cudaDeviceSynchronize", 1'000'000);
    });
  };
  {
    Session session{false, AdviceMode::on, t};
    host_sync();
    REQUIRE(Report::snapshot().advice.empty());
  }
  {
    Session session{false, AdviceMode::all, t};
    host_sync();
    REQUIRE(rules(Report::snapshot()) == std::vector<std::string>{"host-sync"});
  }
  {
    Session session{false, AdviceMode::off};
    host_sync();
    auto const s = Report::snapshot();
    REQUIRE(s.advice.empty());
    REQUIRE(s.advice_missing.empty());
  }
  {
    Session session{false, AdviceMode::on};  // default min_cost: 2% of a step
    host_sync();
    // 1 ms blocked in a step of microseconds of CPU time: far more than 2% of it.
    REQUIRE(rules(Report::snapshot()) == std::vector<std::string>{"host-sync"});
  }
}

TEST_CASE("several findings: most costly first, each in the table and the JSON") {
  Session session{false, AdviceMode::all};
  run_steps([](int i) {
    std::uint32_t k = 0;
    {
      ScopedRange fwd{"forward"};
      k = fake->launch(0);
      fake->sync("cudaMemcpy", 5'000'000);
    }
    fake->kernel(k, 1, base(i), base(i) + 5'000'000);  // the GPU is busy: no CPU-only range
    burst("block", 5, base(i) + 5'000'000, 2'000, 10'000);
  });
  auto const s = Report::snapshot();
  REQUIRE(rules(s) == std::vector<std::string>{"host-sync", "launch-bound"});
  std::string const table = nsightkit::format_table(s);
  REQUIRE(table.find("\nadvice (most costly first") != std::string::npos);
  REQUIRE(table.find("] host-sync: costs about 5.00 ms per step") != std::string::npos);
  REQUIRE(table.find("what to do: ") != std::string::npos);
  std::string const json = nsightkit::summary_json(s);
  REQUIRE(json.find("\"advice\":[\n {\"rule\":\"host-sync\",\"severity\":\"high\","
                    "\"paths\":[\"forward\"]") != std::string::npos);
  REQUIRE(json.find("\"cost_ns\":5000000") != std::string::npos);
  REQUIRE(json.find("\"rule\":\"launch-bound\"") != std::string::npos);
  // Per path: the blocking calls behind the finding.
  REQUIRE(json.find("\"sync_calls\":3,\"sync_ns\":15000000,\"sync_api\":\"cudaMemcpy\","
                    "\"legacy_stream_work\":0,") != std::string::npos);
}

TEST_CASE("without steps the cost is for the whole run, and the table says so") {
  Session session{false, AdviceMode::all};
  for (int i = 0; i < 4; ++i) {
    ScopedRange fwd{"forward"};
    fake->sync("cudaFree", 1'000'000);
  }
  auto const s = Report::snapshot();
  Advice const& a = only(s, "host-sync");
  REQUIRE(a.cost_ns == 4'000'000);
  REQUIRE(a.evidence.find("in the run") != std::string::npos);
  REQUIRE(nsightkit::format_table(s).find("costs about 4.00 ms in the run") != std::string::npos);
}
#endif

TEST_CASE(
    "without the CUPTI source the GPU rules are not guessed: the report says what is missing") {
  Report::disable();
  Report::reset();
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  o.advice = AdviceMode::all;
  REQUIRE(Report::enable(o) == bool{NSIGHTKIT_ENABLED});
  { ScopedRange r{"forward"}; }
  auto const s = Report::snapshot();
  REQUIRE(s.advice.empty());
#if NSIGHTKIT_ENABLED
  REQUIRE(s.advice_missing.size() == 1);
  REQUIRE(s.advice_missing[0].find("need the CUPTI GPU source") != std::string::npos);
  std::string const here =
      "GPU source here: " + (s.gpu.source.empty() ? std::string{"none"} : s.gpu.source) + ")";
  REQUIRE(s.gpu.source != "cupti");
  INFO(s.advice_missing[0]);
  REQUIRE(s.advice_missing[0].find(here) != std::string::npos);
#endif
  Report::disable();
  Report::reset();
}

TEST_CASE("the advice item of NSIGHTKIT_REPORT: on, off, all, and a bad value named") {
  REQUIRE(nsightkit::ReportOptions::try_parse("table,advice=all")->advice == AdviceMode::all);
  REQUIRE(nsightkit::ReportOptions::try_parse("table,advice=off")->advice == AdviceMode::off);
  REQUIRE(nsightkit::ReportOptions::try_parse("table,advice=on")->advice == AdviceMode::on);
  REQUIRE(nsightkit::ReportOptions::try_parse("table")->advice == AdviceMode::on);
  std::string error;
  REQUIRE_FALSE(nsightkit::ReportOptions::try_parse("table,advice=loud", &error));
  REQUIRE(error.find("advice") != std::string::npos);
  REQUIRE(error.find("loud") != std::string::npos);
}
