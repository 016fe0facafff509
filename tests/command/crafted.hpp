// Crafted snapshots for the command's tests: every field the summary JSON holds set to a known,
// distinct value (GPU work from CUPTI, event times, advice, steps, start/end ranges, marks,
// per-thread rows), consistent as the report makes them (mean = total / count, GPU work only on
// rows that launched some), and the per-rank snapshots of a run of four ranks.
#pragma once

#include <nsightkit/report_types.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace nsk_command_test {

inline nsightkit::TimeStats times(std::uint64_t count, std::int64_t total, std::int64_t p50,
                                  std::int64_t p95, bool exact = true) {
  nsightkit::TimeStats t;
  t.count = count;
  t.total_ns = total;
  t.mean_ns = count != 0 ? static_cast<double>(total) / static_cast<double>(count) : 0.0;
  t.min_ns = count != 0 ? p50 - p50 / 10 : 0;
  t.p50_ns = p50;
  t.p95_ns = p95;
  t.max_ns = p95 + p95 / 20;
  t.exact = exact;
  return t;
}

inline nsightkit::PathStats row(std::string const& path, std::string const& name,
                                std::string const& domain, std::size_t depth, std::size_t parent,
                                nsightkit::TimeStats cpu, std::int64_t self, std::uint32_t thread) {
  nsightkit::PathStats r;
  r.path = path;
  r.name = name;
  r.domain = domain;
  r.depth = depth;
  r.parent = parent;
  r.thread = thread;
  r.cpu = cpu;
  r.self_ns = self;
  return r;
}

inline nsightkit::GpuWorkStats work(std::uint64_t kernels, std::int64_t busy, std::uint64_t calls) {
  nsightkit::GpuWorkStats w;
  w.kernels = kernels;
  w.self_kernels = kernels / 2;
  w.kernel_ns = busy + busy / 10;
  w.busy_ns = busy;
  w.self_busy_ns = busy / 2;
  w.span_ns = busy + busy / 4;
  w.idle_ns = busy / 4;
  w.calls_with_work = calls;
  w.launch_latency = times(kernels, 7'001 * static_cast<std::int64_t>(kernels), 6'500, 9'100);
  w.h2d = nsightkit::CopyStats{3, 3u << 20, 41'000, 2};
  w.d2h = nsightkit::CopyStats{2, 4096, 9'000, 0};
  w.d2d = nsightkit::CopyStats{1, 512, 1'000, 0};
  w.other_copies = nsightkit::CopyStats{1, 64, 800, 1};
  w.memsets = nsightkit::CopyStats{4, 1u << 16, 2'000, 0};
  w.streams = 2;
  w.top_kernels = {{"void gemm<float, 128>(float const*, float*)", kernels / 2, busy / 2},
                   {"relu_kernel", kernels - kernels / 2, busy / 3}};
  w.allocations = 2;
  w.allocated_bytes = 1u << 20;
  w.freed_bytes = 1u << 19;
  w.peak_bytes = 1u << 20;
  w.sync_calls = 3;
  w.sync_ns = 123'456;
  w.sync_api = "cudaStreamSynchronize";
  w.legacy_stream_work = 1;
  w.delegated_kernels = 1;
  w.delegated_kernel_ns = 5'000;
  return w;
}

/// One process's snapshot with every kind of data the report has.
inline nsightkit::ReportSnapshot crafted() {
  nsightkit::ReportSnapshot s;
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  s.run_ns = 2'000'000'000;
  s.rank = 3;
  s.pid = 31337;
  s.forked_from = 4242;
  s.captured_only = true;
  // Merged rows, in tree order with siblings by total.
  s.paths.push_back(row("train", "train", "nsightkit", 0, none,
                        times(10, 1'500'000'000, 150'000'000, 160'000'000), 100'000'000, 0));
  s.paths.push_back(row("train/forward", "forward", "nsightkit", 1, 0,
                        times(10, 900'000'000, 90'000'000, 99'000'000), 200'000'000, 0));
  s.paths[1].work = work(40, 600'000'000, 10);
  s.paths.push_back(row("train/forward/conv \"3x3\"", "conv \"3x3\"", "nsightkit", 2, 1,
                        times(30, 700'000'003, 23'000'000, 25'000'000, false), 700'000'003, 0));
  s.paths[2].work = work(30, 550'000'000, 10);
  s.paths.push_back(row("train/backward", "backward", "", 1, 0,
                        times(10, 500'000'000, 50'000'000, 52'000'000), 400'000'000, 0));
  s.paths[3].gpu = times(10, 450'000'000, 45'000'000, 47'000'000);
  s.paths.push_back(row("train/backward/CCCL@sort", "CCCL@sort", "CCCL", 2, 3,
                        times(3, 100'000'001, 33'000'000, 34'000'000), 100'000'001, 0));
  s.paths.push_back(row("load \xe2\x80\x94 \xc3\xbcnicode\tname",
                        "load \xe2\x80\x94 \xc3\xbcnicode\tname", "nsightkit", 0, none,
                        times(7, 70'000'000, 10'000'000, 11'000'000), 70'000'000, 0));
  // Per-thread rows: parents index thread_paths.
  auto add_thread = [&](std::uint32_t tid, std::size_t first, std::size_t n) {
    std::size_t const base = s.thread_paths.size();
    for (std::size_t i = first; i < first + n; ++i) {
      nsightkit::PathStats r = s.paths[i];
      r.thread = tid;
      r.parent = r.parent == none ? none : r.parent - first + base;
      s.thread_paths.push_back(r);
    }
  };
  add_thread(101, 0, 5);
  add_thread(202, 5, 1);
  s.threads.push_back(nsightkit::ThreadStats{101, "trainer", false, 43, 5, 6, 7, 8});
  s.threads.push_back(nsightkit::ThreadStats{202, "", true, 7, 0, 0, 0, 0});
  s.steps = times(10, 1'980'000'000, 198'000'000, 205'000'000);
  s.step_series = {{-5'000, 1, 190'000'000, 190'000'000},
                   {200'000'000, 4, 800'000'000, 205'000'000},
                   {1'000'000'000, 5, 990'000'000, 201'000'000}};
  s.start_end.push_back(nsightkit::NamedStats{
      "epoch", "nsightkit", times(1, 1'999'000'000, 1'999'000'000, 1'999'000'000)});
  s.start_end.push_back(nsightkit::NamedStats{"prefetch", "io", times(9, 90'000, 10'000, 12'000)});
  s.marks.push_back(nsightkit::MarkStats{"checkpoint", "nsightkit", 2});
  s.marks.push_back(nsightkit::MarkStats{"flush", "", 5});
  nsightkit::GpuTimingStats& g = s.gpu;
  g.ranges_timed = 10;
  g.ranges_pending = 1;
  g.ranges_skipped = 2;
  g.events_created = 24;
  g.source = "cupti";
  g.note = "asked for events, CUPTI was used";
  g.error = "";
  g.records = 1234;
  g.records_dropped = 5;
  g.records_unattributed = 6;
  g.records_late = 7;
  g.records_delegated = 8;
  g.devices = {{0, 70, 11, 600'000'000, 1'900'000'000, 590'000'000, 40'000'000, 30'000'000},
               {1, 3, 1, 1'000, 2'000, 900, 100, 50}};
  g.streams = {{0, 7, 60, 10, 500'000'000, "compute"}, {0, 13, 10, 1, 90'000'000, ""}};
  s.advice.push_back(nsightkit::Advice{"pageable-copies",
                                       "high",
                                       {"train/forward", "train"},
                                       "3 copies from pageable memory, 41.0 us per step",
                                       4'100,
                                       "use pinned memory (nsightkit::PinnedMemoryPool)"});
  s.advice.push_back(nsightkit::Advice{"host-sync",
                                       "low",
                                       {"train/forward"},
                                       "3 cudaStreamSynchronize <blocking>",
                                       12'345,
                                       "remove the synchronization"});
  s.advice_missing = {"copy-overlap: no copies measured"};
  return s;
}

/// One rank of a run of four: forward holds conv (slow on rank 2), backward an all-reduce that
/// the other ranks wait in; GPU work from CUPTI on every rank.
inline nsightkit::ReportSnapshot rank_snapshot(int rank) {
  nsightkit::ReportSnapshot s;
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::int64_t const ms = 1'000'000;
  std::int64_t const conv = (rank == 2 ? 200 : 100 + rank) * ms;
  std::int64_t const wait = (rank == 2 ? 12 : 130 - rank) * ms;
  s.rank = rank;
  s.pid = 5000 + rank;
  s.run_ns = (1000 + rank) * ms;
  s.paths.push_back(row("forward", "forward", "nsightkit", 0, none,
                        times(10, conv + 200 * ms, (conv + 200 * ms) / 10, (conv + 210 * ms) / 10),
                        100 * ms, 0));
  s.paths.push_back(row("forward/conv", "conv", "nsightkit", 1, 0,
                        times(10, conv, conv / 10, conv / 9), conv, 0));
  s.paths[1].work = work(20, conv - 5 * ms, 10);
  s.paths.push_back(row("forward/head", "head", "nsightkit", 1, 0,
                        times(10, 100 * ms, 10 * ms, 11 * ms), 100 * ms, 0));
  s.paths.push_back(row("backward", "backward", "nsightkit", 0, none,
                        times(10, 400 * ms + wait, 40 * ms, 50 * ms), 400 * ms, 0));
  s.paths.push_back(row("backward/allreduce", "allreduce", "nsightkit", 1, 3,
                        times(30, wait, wait / 30, wait / 25), wait, 0));
  s.paths[4].work = work(30, wait - ms, 10);
  if (rank == 0)
    s.paths.push_back(row("save checkpoint", "save checkpoint", "nsightkit", 0, none,
                          times(1, 30 * ms, 30 * ms, 30 * ms), 30 * ms, 0));
  for (nsightkit::PathStats r : s.paths) {
    r.thread = 77;
    s.thread_paths.push_back(r);
  }
  s.threads.push_back(nsightkit::ThreadStats{77, "main", false, 71, 0, 0, 0, 0});
  s.steps = times(10, (990 + rank) * ms, 99 * ms, 101 * ms);
  s.start_end.push_back(
      nsightkit::NamedStats{"epoch", "nsightkit", times(1, 995 * ms, 995 * ms, 995 * ms)});
  s.marks.push_back(nsightkit::MarkStats{"checkpoint", "nsightkit", rank == 0 ? 2u : 1u});
  s.gpu.source = "cupti";
  s.gpu.records = 500;
  return s;
}

}  // namespace nsk_command_test
