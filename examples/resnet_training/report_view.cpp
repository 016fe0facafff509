#include "report_view.hpp"

#include <nsightkit/report.hpp>

#include <string>

namespace resnet {
namespace {
namespace nsk = nsightkit;

/// The step's top-level ranges, in the order the breakdown lists them.
constexpr char const* kPhases[] = {"data", "h2d", "forward", "backward", "optimizer", "sync"};
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

void print_breakdown(std::FILE* out, nsk::ReportSnapshot const& snap) {
  nsk::PathStats const* fwd = snap.find("forward");
  if (fwd == nullptr || fwd->cpu.count == 0) {
    std::fprintf(out, "breakdown: no step was recorded by the report\n");
    return;
  }
  auto const steps = static_cast<double>(fwd->cpu.count);
  std::fprintf(out,
               "\nWhere the time went (per step, mean over the %llu steps the report recorded;\n"
               "GPU = time on the compute stream from the range's first to its last work):\n"
               "  %-10s %10s %10s\n",
               static_cast<unsigned long long>(fwd->cpu.count), "range", "CPU ms", "GPU ms");
  std::string line = "breakdown_ms";
  for (char const* phase : kPhases) {
    nsk::PathStats const* row = snap.find(phase);
    double const cpu = row != nullptr ? static_cast<double>(row->cpu.total_ns) / steps / 1e6 : 0.0;
    bool const has_gpu = row != nullptr && row->gpu.count > 0;
    char gpu_text[32] = "-";
    if (has_gpu) {
      std::snprintf(gpu_text, sizeof gpu_text, "%.3f",
                    static_cast<double>(row->gpu.total_ns) / steps / 1e6);
    }
    std::fprintf(out, "  %-10s %10.3f %10s\n", phase, cpu, gpu_text);
    char item[96];
    std::snprintf(item, sizeof item, " %s=%.3f/%s", phase, cpu, gpu_text);
    line += item;
  }
  // One line for scripts: name=cpu_ms/gpu_ms ("-" where no GPU time was measured).
  std::fprintf(out, "%s\n", line.c_str());
  for (ParallelRow const& p : kParallel) {
    nsk::PathStats const* row = snap.find(p.path);
    if (row == nullptr) continue;
    std::fprintf(out, "  of which %s: %.3f ms CPU", p.path,
                 static_cast<double>(row->cpu.total_ns) / steps / 1e6);
    if (row->gpu.count > 0 && p.nccl_stream) {
      std::fprintf(out, ", %.3f ms GPU (NCCL stream, including the wait for the other ranks)",
                   static_cast<double>(row->gpu.total_ns) / steps / 1e6);
    }
    std::fprintf(out, "\n");
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
    return {on, on};
  }
  if (nsk::Report::is_enabled()) return {true, false};  // NSIGHTKIT_REPORT: it writes at exit
  if (rank != 0) return {};
  // The table, and the HTML page beside it (docs/report-html.md).
  auto options = nsk::ReportOptions::parse("table=stdout,html=resnet_training_report.html");
  options.at_exit = false;
  bool const on = nsk::Report::enable(options);
  if (!on) say_unavailable(out);
  return {on, on};
}

void reset_report() { nsk::Report::reset(); }

void finish_report(ReportSetup const& setup, std::FILE* out) {
  if (!setup.on) return;
  print_breakdown(out, nsk::Report::snapshot());
  if (setup.own) {
    std::fprintf(out, "\n");
    std::fflush(out);
    nsk::Report::write();
  }
}

}  // namespace resnet
