#include "report_view.hpp"

#include "common/report_files.hpp"

#include <nsightkit/report.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace resnet {
namespace {
namespace nsk = nsightkit;

/// The step's top-level ranges, in the order the breakdown lists them. "graph inputs" (the batch
/// copied into a CUDA graph's static inputs) is in a --cuda-graph graph run only.
constexpr char const* kPhases[] = {"data",     "h2d",       "graph inputs", "forward",
                                   "backward", "optimizer", "sync"};
/// Data-parallel runs only: the compute stream's wait for the gradient reductions (the host's
/// share; on the GPU the reductions run on their own stream), and the reduction of the step's
/// loss and accuracy, whose GPU time is on the NCCL stream.
struct ParallelRow {
  char const* path;
  bool nccl_stream;
};
constexpr ParallelRow kParallel[] = {{"backward/allreduce wait", false},
                                     {"allreduce metrics", true}};

void say_unavailable(std::FILE* out) {
  std::fprintf(out, "report:   unavailable (instrumentation compiled out: NSIGHTKIT_DISABLE)\n");
}

/// The start/end range of a CUDA graph's replays ("graph NAME (replay)"), or nullptr.
nsk::NamedStats const* replay_range(nsk::ReportSnapshot const& snap) {
  constexpr std::string_view head{"graph "}, tail{" (replay)"};
  for (nsk::NamedStats const& r : snap.start_end) {
    std::string_view const n{r.name};
    if (n.size() > head.size() + tail.size() && n.substr(0, head.size()) == head &&
        n.substr(n.size() - tail.size()) == tail) {
      return &r;
    }
  }
  return nullptr;
}

/// GPU time of a row, in ns: the events source's time on the compute stream, else the CUPTI
/// source's busy time of the work the range launched (replayed work included); -1 for none.
std::int64_t gpu_ns(nsk::ReportSnapshot const& snap, nsk::PathStats const* row) {
  if (row == nullptr) return -1;
  if (row->gpu.count > 0) return row->gpu.total_ns;
  if (snap.gpu.source == "cupti" && row->work.calls_with_work > 0) return row->work.busy_ns;
  return -1;
}

void print_breakdown(std::FILE* out, nsk::ReportSnapshot const& snap) {
  nsk::PathStats const* fwd = snap.find("forward");
  nsk::NamedStats const* replay = replay_range(snap);
  // Steps: the forward range's calls; in a CUDA graph run, whose forward is replayed and not
  // run on the host, the graph's launches.
  std::uint64_t steps = fwd != nullptr ? fwd->cpu.count : 0;
  if (steps == 0 && replay != nullptr) steps = replay->time.count;
  if (steps == 0) {
    std::fprintf(out, "breakdown: no step was recorded by the report\n");
    return;
  }
  auto const n = static_cast<double>(steps);
  bool const cupti = snap.gpu.source == "cupti";
  std::fprintf(out,
               "\nWhere the time went (per step, mean over the %llu steps the report recorded;\n"
               "GPU = %s; '-' = none):\n"
               "  %-14s %10s %10s\n",
               static_cast<unsigned long long>(steps),
               cupti ? "busy time of the work the range launched or, replayed, captured (CUPTI)"
                     : "time on the compute stream from the range's first to its last work",
               "range", "CPU ms", "GPU ms");
  std::string line = "breakdown_ms";
  auto row_out = [&](char const* name, std::uint64_t cpu_count, std::int64_t cpu_ns,
                     std::int64_t gpu) {
    char cpu_text[32] = "-";
    if (cpu_count > 0) {
      std::snprintf(cpu_text, sizeof cpu_text, "%.3f", static_cast<double>(cpu_ns) / n / 1e6);
    }
    char gpu_text[32] = "-";
    if (gpu >= 0)
      std::snprintf(gpu_text, sizeof gpu_text, "%.3f", static_cast<double>(gpu) / n / 1e6);
    std::fprintf(out, "  %-14s %10s %10s\n", name, cpu_text, gpu_text);
    std::string key{name};
    for (char& c : key) c = c == ' ' ? '_' : c;
    line += " " + key + "=" + cpu_text + "/" + gpu_text;
  };
  for (char const* phase : kPhases) {
    nsk::PathStats const* row = snap.find(phase);
    if (row == nullptr && std::string_view{phase} == "graph inputs") continue;
    if (row == nullptr || row->cpu.count == 0) {
      // Not run on the host: 0 ms in an eager run; replayed from the graph in a graph run.
      row_out(phase, replay != nullptr ? 0 : 1, 0, gpu_ns(snap, row));
    } else {
      row_out(phase, row->cpu.count, row->cpu.total_ns, gpu_ns(snap, row));
    }
    // The graph's launches, where the eager run had the optimizer's update queued last.
    if (replay != nullptr && std::string_view{phase} == "optimizer") {
      row_out("graph launch", replay->time.count, replay->time.total_ns, -1);
    }
  }
  // One line for scripts: name=cpu_ms/gpu_ms ("-" where nothing was measured).
  std::fprintf(out, "%s\n", line.c_str());
  if (replay != nullptr) {
    std::fprintf(out,
                 "  (CUDA graph run: forward, backward and optimizer are replayed, with no CPU "
                 "time of their own; 'graph launch' is the host's time in cudaGraphLaunch)\n");
  }
  for (ParallelRow const& p : kParallel) {
    nsk::PathStats const* row = snap.find(p.path);
    if (row == nullptr) continue;
    std::fprintf(out, "  of which %s: %.3f ms CPU", p.path,
                 static_cast<double>(row->cpu.total_ns) / n / 1e6);
    std::int64_t const gpu = p.nccl_stream ? gpu_ns(snap, row) : -1;
    if (gpu >= 0) {
      std::fprintf(out, ", %.3f ms GPU (NCCL stream, including the wait for the other ranks)",
                   static_cast<double>(gpu) / n / 1e6);
    }
    std::fprintf(out, "\n");
  }
  // CUPTI: the gradient all-reduces' kernels, on NCCL's stream beside backward's own work.
  std::uint64_t buckets = 0, kernels = 0;
  std::int64_t kernel_ns = 0;
  for (nsk::PathStats const& row : snap.paths) {
    if (std::string_view{row.name}.substr(0, 16) != "allreduce bucket" || row.work.kernels == 0)
      continue;
    ++buckets;
    kernels += row.work.kernels;
    kernel_ns += row.work.kernel_ns;
  }
  if (cupti && kernels > 0) {
    std::fprintf(out,
                 "  of which the gradient all-reduces (%llu buckets): %.3f ms GPU kernel time on "
                 "NCCL's stream, %.1f kernels (including the wait for the other ranks)\n",
                 static_cast<unsigned long long>(buckets), static_cast<double>(kernel_ns) / n / 1e6,
                 static_cast<double>(kernels) / n);
  }
  if (!snap.gpu.error.empty()) std::fprintf(out, "GPU timing: %s\n", snap.gpu.error.c_str());
}

}  // namespace

ReportSetup setup_report(Config const& cfg, std::FILE* out, int rank) {
  if (cfg.report_given) {
    std::string why;
    auto options = nsk::ReportOptions::try_parse(cfg.report, &why);
    if (!options) {  // "off" (a bad spec was rejected when the flags were parsed)
      nsk::Report::disable();
      return {};
    }
    options->at_exit = false;  // written by finish_report(), after the training summary
    bool const on = nsk::Report::enable(*options);
    if (!on) say_unavailable(out);
    return {on, on, *options};
  }
  if (nsk::Report::is_enabled()) return {true, false, {}};  // NSIGHTKIT_REPORT: writes at exit
  if (rank != 0) return {};
  // The table, and the HTML page beside it (docs/report-html.md).
  auto options = nsk::ReportOptions::parse("table=stdout,html=resnet_training_report.html");
  options.at_exit = false;
  bool const on = nsk::Report::enable(options);
  if (!on) say_unavailable(out);
  return {on, on, options};
}

void reset_report() { nsk::Report::reset(); }

void finish_report(ReportSetup const& setup, std::FILE* out, char const* tag, char const* run) {
  if (!setup.on) return;
  if (tag != nullptr) {
    std::fprintf(out, "\n==== nsightkit report of %s ====\n", run != nullptr ? run : tag);
  }
  print_breakdown(out, nsk::Report::snapshot());
  if (!setup.own) {
    if (tag != nullptr) {
      std::fprintf(out,
                   "(NSIGHTKIT_REPORT writes its outputs at exit: they will hold the last run "
                   "only; --report writes one set per run, named with the run)\n");
    }
    return;
  }
  if (tag != nullptr) (void)nsk::Report::enable(nn::tagged_options(setup.options, tag));
  std::fprintf(out, "\n");
  std::fflush(out);
  if (!nsk::Report::write()) {
    std::fprintf(stderr, "resnet_training: the report was not fully written\n");
  }
  std::fflush(stdout);
}

void print_graph_comparison(std::FILE* out, nsk::ReportSnapshot const& eager,
                            nsk::ReportSnapshot const& graph, int steps) {
  std::fprintf(out,
               "\nper range, eager vs CUDA graph (per measured step; the full tables follow):\n");
  if (graph.gpu.source != "cupti") {
    std::fprintf(out,
                 "  (GPU source '%s': kernels are attributed to modules only with the CUPTI "
                 "source (gpu=cupti, the nsightkit::cupti component); with CUDA events a "
                 "replay's ranges do not run, so the graph run has no GPU time per module)\n",
                 graph.gpu.source.empty() ? "none" : graph.gpu.source.c_str());
  }
  std::fprintf(out, "  %-28s %9s %9s %9s %9s %11s %11s\n", "path", "CPU ms", "CPU ms", "kernels",
               "kernels", "GPU busy ms", "GPU busy ms");
  std::fprintf(out, "  %-28s %9s %9s %9s %9s %11s %11s\n", "", "eager", "graph", "eager", "graph",
               "eager", "graph");
  // The step's ranges and the model's top-level modules under them, in the eager run's order
  // (then any the graph run adds: "graph inputs").
  std::vector<std::string> paths;
  for (auto const* snap : {&eager, &graph}) {
    for (nsk::PathStats const& r : snap->paths) {
      if (r.depth <= 1 && std::find(paths.begin(), paths.end(), r.path) == paths.end()) {
        paths.push_back(r.path);
      }
    }
  }
  double const n = steps > 0 ? steps : 1;
  auto cpu = [&](nsk::PathStats const* r, char* buf, std::size_t size) {
    if (r == nullptr || r->cpu.count == 0) {
      std::snprintf(buf, size, "-");
    } else {
      std::snprintf(buf, size, "%.3f", static_cast<double>(r->cpu.total_ns) / n / 1e6);
    }
  };
  for (std::string const& path : paths) {
    nsk::PathStats const* e = eager.find(path);
    nsk::PathStats const* g = graph.find(path);
    char ce[32], cg[32];
    cpu(e, ce, sizeof ce);
    cpu(g, cg, sizeof cg);
    auto kernels = [&](nsk::PathStats const* r) {
      return r != nullptr ? static_cast<double>(r->work.kernels) / n : 0.0;
    };
    auto busy = [&](nsk::PathStats const* r) {
      return r != nullptr ? static_cast<double>(r->work.busy_ns) / n / 1e6 : 0.0;
    };
    std::fprintf(out, "  %-28s %9s %9s %9.1f %9.1f %11.3f %11.3f\n", path.c_str(), ce, cg,
                 kernels(e), kernels(g), busy(e), busy(g));
  }
  nsk::NamedStats const* replay = replay_range(graph);
  if (replay != nullptr) {
    std::fprintf(out, "  %-28s %9s %9.3f   (the host's time in cudaGraphLaunch)\n",
                 replay->name.c_str(), "-", static_cast<double>(replay->time.total_ns) / n / 1e6);
  }
}

}  // namespace resnet
