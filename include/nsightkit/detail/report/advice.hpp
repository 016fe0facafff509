// Internal: the report's advice — Nsight Systems' kind of expert rules ("GPU gaps", "pageable
// async copies", "synchronization APIs", ...) evaluated in process over a snapshot, each finding
// tied to the range paths where it happens and to what it costs per step. Pure C++ over a
// ReportSnapshot (the GPU rules read the CUPTI source's per-path work), so every rule is tested on
// the CPU with synthetic data. docs/advice.md documents each rule, its threshold and its cost.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/format.hpp>
#include <nsightkit/report_types.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// The time base of "per step": the captured (or all) capture-window steps, else the whole run.
struct StepBase {
  std::int64_t steps{1};
  std::int64_t step_ns{0};  // CPU time of one step (or of the run)
  bool per_step{false};
};

inline StepBase step_base(ReportSnapshot const& s) {
  StepBase b;
  if (s.steps.count != 0 && s.steps.total_ns > 0) {
    b.steps = static_cast<std::int64_t>(s.steps.count);
    b.step_ns = s.steps.total_ns / b.steps;
    b.per_step = true;
  } else {
    b.step_ns = s.run_ns > 0 ? s.run_ns : 1;
  }
  return b;
}

inline char const* severity_of(std::int64_t cost, std::int64_t step_ns) {
  double const share = step_ns > 0 ? static_cast<double>(cost) / static_cast<double>(step_ns) : 0;
  return share >= 0.10 ? "high" : share >= 0.02 ? "medium" : "low";
}

inline std::string per_step(StepBase const& b) { return b.per_step ? " per step" : " in the run"; }

/// True when the row's subtree (the row itself, inclusive) launched any GPU work.
inline bool has_gpu_work(PathStats const& r) {
  GpuWorkStats const& w = r.work;
  return w.kernels != 0 || w.h2d.count != 0 || w.d2h.count != 0 || w.d2d.count != 0 ||
         w.other_copies.count != 0 || w.memsets.count != 0;
}

/// True when `row` has a child row (rows are in tree order: children follow their parent).
inline bool has_children(std::vector<PathStats> const& rows, std::size_t row) {
  return row + 1 < rows.size() && rows[row + 1].parent == row;
}

/// True when a rank of this run may wait for another: it is one rank of several, or it ran
/// NCCL's kernels (a collective's kernel is named nccl...).
inline bool waits_for_ranks(ReportSnapshot const& s) {
  if (s.rank) return true;
  for (PathStats const& r : s.paths) {
    for (KernelStats const& k : r.work.top_kernels) {
      if (k.name.compare(0, 4, "nccl") == 0) return true;
    }
  }
  return false;
}

/// Collects one rule's paths into a finding (most costly first, at most five named).
struct Finding {
  std::vector<std::pair<std::int64_t, std::string>> where;  // (cost, "path: evidence")
  std::int64_t cost{0};
  void add(std::int64_t c, std::string path, std::string evidence) {
    cost += c;
    where.emplace_back(c, path + ": " + evidence);
  }
};

inline void emit_finding(std::vector<Advice>& out, char const* rule, Finding f, StepBase const& b,
                         std::string suggestion) {
  if (f.where.empty()) return;
  std::sort(f.where.begin(), f.where.end(),
            [](auto const& x, auto const& y) { return x.first > y.first; });
  Advice a;
  a.rule = rule;
  a.cost_ns = f.cost;
  a.severity = severity_of(f.cost, b.step_ns);
  for (std::size_t i = 0; i < f.where.size(); ++i) {
    std::string const& text = f.where[i].second;
    if (i < 5) {
      a.paths.push_back(text.substr(0, text.find(": ")));
      if (!a.evidence.empty()) a.evidence += "; ";
      a.evidence += text;
    }
  }
  if (f.where.size() > 5) a.evidence += fmt::format("; and {} more", f.where.size() - 5);
  a.suggestion = std::move(suggestion);
  out.push_back(std::move(a));
}

/// The advice for `s` under `mode` and `t`; `missing` gets the rules that could not be evaluated.
inline std::vector<Advice> advise(ReportSnapshot const& s, AdviceMode mode,
                                  AdviceThresholds const& t, std::vector<std::string>& missing) {
  std::vector<Advice> out;
  if (mode == AdviceMode::off) return out;
  StepBase const b = step_base(s);
  bool const cupti = s.gpu.source == "cupti";
  if (!cupti) {
    missing.push_back(
        "GPU rules (idle GPU, pageable copies, host synchronization, legacy stream, CUDA-graph "
        "candidates): need the CUPTI GPU source (link nsightkit::cupti; GPU source here: " +
        (s.gpu.source.empty() ? std::string{"none"} : s.gpu.source) + ")");
    return out;
  }
  auto const per = [&](std::int64_t total) { return total / b.steps; };
  auto const fmt_ns = [](std::int64_t ns) { return format_duration(ns); };

  // ---- the GPU waits for CPU-only work inside the steps ----
  {
    std::int64_t busy = 0;
    for (GpuDeviceStats const& d : s.gpu.devices) busy = std::max(busy, d.busy_ns);
    std::int64_t const window = b.per_step ? s.steps.total_ns : s.run_ns;
    double const busy_share =
        window > 0 ? static_cast<double>(busy) / static_cast<double>(window) : 1.0;
    Finding f;
    if (busy > 0 && busy_share < t.busy_share) {  // a program without GPU work gets no GPU advice
      for (std::size_t i = 0; i < s.paths.size(); ++i) {
        PathStats const& r = s.paths[i];
        if (has_gpu_work(r)) continue;
        // The outermost CPU-only range: its parent launched GPU work (or it is outermost).
        if (r.parent < s.paths.size() && !has_gpu_work(s.paths[r.parent])) continue;
        std::int64_t const cost = per(r.cpu.total_ns);
        if (static_cast<double>(cost) < 0.10 * static_cast<double>(b.step_ns)) continue;
        f.add(cost, r.path,
              fmt::format("{}{} on the CPU, no GPU work (the GPU was busy {:.0f}% of the time)",
                          fmt_ns(cost), per_step(b), 100.0 * busy_share));
      }
    }
    emit_finding(out, "gpu-waits-for-cpu", std::move(f), b,
                 "the GPU idles while this runs on the CPU: move it off the thread that launches "
                 "GPU work (loader threads), overlap it with the GPU (StreamPrefetcher, pinned "
                 "memory), or launch the next GPU work before it");
  }

  // Copies are inclusive: a range's own are its minus its children's.
  std::vector<CopyStats> own_h2d(s.paths.size()), own_d2h(s.paths.size());
  for (std::size_t i = 0; i < s.paths.size(); ++i) {
    own_h2d[i] = s.paths[i].work.h2d;
    own_d2h[i] = s.paths[i].work.d2h;
  }
  for (std::size_t i = 0; i < s.paths.size(); ++i) {
    std::size_t const p = s.paths[i].parent;
    if (p >= s.paths.size()) continue;
    for (auto [own, child] :
         {std::pair<CopyStats*, CopyStats const*>{&own_h2d[p], &s.paths[i].work.h2d},
          std::pair<CopyStats*, CopyStats const*>{&own_d2h[p], &s.paths[i].work.d2h}}) {
      own->count -= std::min(own->count, child->count);
      own->bytes -= std::min(own->bytes, child->bytes);
      own->total_ns -= std::min(own->total_ns, child->total_ns);
      own->pageable -= std::min(own->pageable, child->pageable);
    }
  }

  // ---- pageable host memory in copies ----
  {
    std::uint64_t pinned_bytes = 0;
    std::int64_t pinned_ns = 0;
    for (std::size_t i = 0; i < s.paths.size(); ++i) {
      for (CopyStats const* c : {&own_h2d[i], &own_d2h[i]}) {
        if (c->count != 0 && c->pageable == 0) {
          pinned_bytes += c->bytes;
          pinned_ns += c->total_ns;
        }
      }
    }
    Finding f;
    for (std::size_t i = 0; i < s.paths.size(); ++i) {
      PathStats const& r = s.paths[i];
      for (auto const& [dir, c] :
           {std::pair<char const*, CopyStats const*>{"host to device", &own_h2d[i]},
            std::pair<char const*, CopyStats const*>{"device to host", &own_d2h[i]}}) {
        if (c->pageable == 0) continue;
        // Time saved: the copies at the pinned bandwidth measured in this run, else at a 5.7x
        // speed-up (pageable 9 GB/s vs pinned 52 GB/s measured host to device on an H100 host).
        double const pinned_bw =
            pinned_ns > 0 ? static_cast<double>(pinned_bytes) / static_cast<double>(pinned_ns)
                          : 0.0;
        // Only the pageable share of the path's copies is sped up.
        double const part = static_cast<double>(c->pageable) / static_cast<double>(c->count);
        double const now_ns = part * static_cast<double>(c->total_ns);
        double const then_ns =
            pinned_bw > 0 ? part * static_cast<double>(c->bytes) / pinned_bw : now_ns / 5.7;
        auto const saved = static_cast<std::int64_t>(std::max(0.0, now_ns - then_ns));
        f.add(per(saved), r.path,
              fmt::format("{} pageable {} copies, {} MB, {} of copy time{}", c->pageable, dir,
                          c->bytes / 1000000, fmt_ns(per(c->total_ns)), per_step(b)));
      }
    }
    emit_finding(out, "pageable-copies", std::move(f), b,
                 "copies from pageable memory are staged through a driver buffer and do not "
                 "overlap: allocate host buffers pinned (nsightkit::PinnedMemoryPool or "
                 "PinnedAllocator) and copy with cudaMemcpyAsync on a copy stream");
  }

  // ---- copies that do not overlap compute ----
  for (GpuDeviceStats const& d : s.gpu.devices) {
    if (d.copy_busy_ns <= 0 || d.kernel_busy_ns <= 0) continue;
    double const share =
        static_cast<double>(d.copy_overlap_ns) / static_cast<double>(d.copy_busy_ns);
    if (share >= t.overlap_share) continue;
    // The most that overlapping could save: the shorter of copies and kernels, less what
    // already overlaps.
    std::int64_t const gain =
        std::max<std::int64_t>(0, std::min(d.copy_busy_ns, d.kernel_busy_ns) - d.copy_overlap_ns);
    std::int64_t own_total = 0;
    for (std::size_t i = 0; i < s.paths.size(); ++i)
      own_total += own_h2d[i].total_ns + own_d2h[i].total_ns;
    Finding f;
    for (std::size_t i = 0; i < s.paths.size() && own_total > 0; ++i) {
      std::int64_t const own = own_h2d[i].total_ns + own_d2h[i].total_ns;
      if (own == 0) continue;
      auto const part = static_cast<std::int64_t>(
          static_cast<double>(gain) * static_cast<double>(own) / static_cast<double>(own_total));
      f.add(per(part), s.paths[i].path,
            fmt::format("{} copies, {} of copy time{}", own_h2d[i].count + own_d2h[i].count,
                        fmt_ns(per(own)), per_step(b)));
    }
    if (f.where.empty()) continue;
    emit_finding(out, "copy-overlap", std::move(f), b,
                 "copies and kernels run one after the other: issue the copies on a stream of "
                 "their own from pinned memory a step ahead (nsightkit::StreamPrefetcher), so "
                 "the next batch moves while this one computes");
    out.back().evidence = fmt::format(
                              "GPU device {}: copies busy {}{}, {:.0f}% of it beside kernels "
                              "(kernels busy {}{}); ",
                              d.device, fmt_ns(per(d.copy_busy_ns)), per_step(b), 100.0 * share,
                              fmt_ns(per(d.kernel_busy_ns)), per_step(b)) +
                          out.back().evidence;
  }

  // ---- host-blocking calls ----
  {
    Finding f;
    for (PathStats const& r : s.paths) {
      if (r.work.sync_calls == 0) continue;
      std::int64_t const cost = per(r.work.sync_ns);
      f.add(cost, r.path,
            fmt::format("{} blocking calls, {} blocked{} (most in {})", r.work.sync_calls,
                        fmt_ns(cost), per_step(b), r.work.sync_api));
    }
    emit_finding(out, "host-sync", std::move(f), b,
                 "the thread waits for the GPU (or the allocator) instead of queueing work: "
                 "synchronize once per step at most, order streams with events "
                 "(cudaStreamWaitEvent), allocate before the loop (or cudaMallocAsync), and "
                 "use cudaMemcpyAsync/cudaMemsetAsync");
  }

  // ---- the legacy default stream beside other streams ----
  if (s.gpu.streams.size() >= 2) {
    Finding f;
    for (PathStats const& r : s.paths) {
      if (r.work.legacy_stream_work == 0) continue;
      f.add(0, r.path,
            fmt::format("{} kernels, copies or memsets on the legacy default stream",
                        r.work.legacy_stream_work));
    }
    if (!f.where.empty()) {
      emit_finding(out, "legacy-stream", std::move(f), b,
                   "the legacy default stream waits for, and holds up, every blocking stream: "
                   "launch on a stream of your own (cudaStreamNonBlocking) or compile with "
                   "--default-stream per-thread");
      out.back().severity = "medium";
    }
  }

  // ---- launch-bound ranges, and CUDA-graph candidates among them ----
  {
    Finding graph, launch;
    for (std::size_t i = 0; i < s.paths.size(); ++i) {
      PathStats const& r = s.paths[i];
      GpuWorkStats const& w = r.work;
      if (w.calls_with_work == 0 || w.span_ns <= 0 || has_children(s.paths, i)) continue;
      double const idle = static_cast<double>(w.idle_ns) / static_cast<double>(w.span_ns);
      if (idle < t.idle_share) continue;
      std::uint64_t const per_call = w.kernels / w.calls_with_work;
      std::int64_t const mean_kernel =
          w.kernels != 0 ? w.kernel_ns / static_cast<std::int64_t>(w.kernels) : 0;
      std::int64_t const mean_gap =
          w.kernels > w.calls_with_work
              ? w.idle_ns / static_cast<std::int64_t>(w.kernels - w.calls_with_work)
              : w.idle_ns;
      std::int64_t const cost = per(w.idle_ns);
      std::string const evidence = fmt::format(
          "{} kernels per call of {} on average, {} idle between them on average; GPU idle {:.0f}% "
          "of its span, {}{}",
          per_call, fmt_ns(mean_kernel), fmt_ns(mean_gap), 100.0 * idle, fmt_ns(cost), per_step(b));
      if (per_call >= t.graph_kernels && mean_kernel < t.small_kernel_ns) {
        graph.add(cost, r.path, evidence);
      } else if (mean_kernel <= mean_gap) {
        launch.add(cost, r.path, evidence);
      }
    }
    emit_finding(out, "graph-candidate", std::move(graph), b,
                 "many small kernels whose launch gaps dominate: record the range once with "
                 "nsightkit::GraphRecorder and replay it (docs/cuda-graphs.md); the gain is about "
                 "the idle time");
    emit_finding(out, "launch-bound", std::move(launch), b,
                 "the GPU waits for launches: the kernels are shorter than the time between "
                 "them; fuse kernels, give them more work (batch size), or record a CUDA graph");
  }

  if (waits_for_ranks(s)) {
    missing.push_back(
        "NCCL waiting on a straggler rank: needs every rank's report merged "
        "(nsightkit merge judges stragglers)");
  }

  // Most costly first; below the threshold only with advice=all.
  std::stable_sort(out.begin(), out.end(),
                   [](Advice const& x, Advice const& y) { return x.cost_ns > y.cost_ns; });
  if (mode == AdviceMode::on) {
    double const min = t.min_cost * static_cast<double>(b.step_ns);
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](Advice const& a) {
                               return a.rule != "legacy-stream" &&
                                      static_cast<double>(a.cost_ns) < min;
                             }),
              out.end());
  }
  return out;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
