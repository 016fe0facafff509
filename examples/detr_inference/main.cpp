// detr_inference: a DETR-style detector's batched inference loop, instrumented with nsightkit.
//
//   warm-up iterations, then a CaptureWindow of measured iterations (cudaProfilerStart/Stop and
//   an NVTX range around them); every module an NVTX range through nsightkit::Hooked; input
//   batches through nsightkit::StreamPrefetcher (pinned staging, copy stream) on the GPU;
//   the in-process report aggregates the module ranges of the captured iterations (CPU time,
//   and GPU time on the compute stream) and prints the per-module table; the latency per image
//   (p50/p95) is printed with it.
//   --cuda-graph (GPU): the same loop again, the forward replayed from a CUDA graph recorded once
//   per input shape (graph_forward.hpp); the graph's outputs are checked against the eager
//   forward's bit for bit, and both runs' latencies and reports are printed.
//
// Run `detr_inference --help` for the options; examples/detr_inference/README.md for the
// Nsight Compute workflow (scripts/gpu/detr.sh).
#include "driver.hpp"
#include "graph_forward.hpp"
#include "model.hpp"
#include "options.hpp"
#include "postprocess.hpp"

#include "common/cli.hpp"
#include "common/cpu_backend.hpp"
#include "common/cuda_backend.hpp"
#include "common/inference_ops.hpp"
#include "common/report_files.hpp"

#include <nsightkit/capture.hpp>
#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/report.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace nsk = nsightkit;

namespace {

/// The model's outputs on the host.
struct HostOutput {
  std::vector<float> logits, boxes;
};

std::vector<float> to_floats(std::vector<double> const& v) {
  return std::vector<float>(v.begin(), v.end());
}

/// What one run of the loop (warm-up, then the capture window's measured iterations) gives.
struct Phase {
  std::vector<double> latencies_ms;
  std::vector<std::vector<detr::Detection>> last;  ///< detections of the last batch
  std::string prefetch_line;
  nsk::ReportSnapshot snapshot;  ///< the report of its measured iterations (if on)
};

/// Per top-level module (and the loop's rows): kernels and GPU busy time per iteration of two
/// runs, side by side. Rows come from the CUPTI source; with CUDA events there is no per-kernel
/// work to compare (the note says so).
void print_comparison(nsk::ReportSnapshot const& eager, nsk::ReportSnapshot const& graph,
                      int iterations) {
  std::printf("\nper module, eager vs CUDA graph (per measured iteration; full tables below):\n");
  if (graph.gpu.source != "cupti") {
    std::printf(
        "  (GPU source '%s': kernels are attributed to modules only with the CUPTI source "
        "(gpu=cupti, the nsightkit::cupti component); with CUDA events a replay's module ranges "
        "do not run, so the graph run has no module rows)\n",
        graph.gpu.source.c_str());
  }
  std::printf("  %-28s %10s %10s %14s %14s\n", "path", "kernels", "kernels", "GPU busy ms",
              "GPU busy ms");
  std::printf("  %-28s %10s %10s %14s %14s\n", "", "eager", "graph", "eager", "graph");
  std::vector<std::string> paths;
  for (auto const* snap : {&eager, &graph}) {
    for (nsk::PathStats const& r : snap->paths) {
      if (r.depth <= 1 && std::find(paths.begin(), paths.end(), r.path) == paths.end()) {
        paths.push_back(r.path);
      }
    }
  }
  double const n = iterations > 0 ? iterations : 1;
  for (std::string const& path : paths) {
    nsk::PathStats const* e = eager.find(path);
    nsk::PathStats const* g = graph.find(path);
    auto kernels = [&](nsk::PathStats const* r) {
      return r != nullptr ? static_cast<double>(r->work.kernels) / n : 0.0;
    };
    auto busy = [&](nsk::PathStats const* r) {
      return r != nullptr ? static_cast<double>(r->work.busy_ns) / n / 1e6 : 0.0;
    };
    std::printf("  %-28s %10.1f %10.1f %14.3f %14.3f\n", path.c_str(), kernels(e), kernels(g),
                busy(e), busy(g));
  }
}

int run(detr::Options o) {
  // ---- device ----
  std::string why;
  bool gpu = false;
  if (o.device == "cuda") {
    if (!nn::cuda_available(&why)) {
      std::fprintf(stderr, "detr_inference: --device cuda: %s\n", why.c_str());
      return 2;
    }
    gpu = true;
  } else if (o.device == "auto") {
    gpu = nn::cuda_available(&why);
    if (!gpu) std::printf("device auto: using the CPU (%s)\n", why.c_str());
  }
  detr::resolve(o, gpu);

  detr::ModelConfig config =
      o.model == "base" ? detr::ModelConfig::base() : detr::ModelConfig::tiny();
  config.enc_layers = o.enc_layers;
  config.dec_layers = o.dec_layers;
  config.queries = o.queries;
  config.validate();

  // ---- the report: only the captured (measured) iterations, written after the run ----
  bool report_on = false;
  nsk::ReportOptions report_options;
  if (o.report != "off") {
    report_options = nsk::ReportOptions::parse(o.report);
    report_options.captured_only = true;  // warm-up iterations are not measured
    report_options.at_exit = false;       // written below, after the latency lines
    report_on = nsk::Report::enable(report_options);
  }

  // ---- backend, model, data ----
  bool const tf32 = o.precision == "tf32";
  std::unique_ptr<nn::Backend> backend;
  if (gpu) {
    nn::CudaBackendOptions bo;
    bo.tf32 = tf32;
    backend = nn::make_cuda_backend(bo);
  } else {
    backend = nn::make_cpu_backend(nn::DType::f32);
  }
  nn::InferenceOpsOptions io;
  io.tf32 = tf32;
  std::unique_ptr<nn::InferenceOps> ops = nn::make_inference_ops(*backend, io);
  detr::Detr model{*backend, config};
  detr::ImageCache const images{o.image_size, static_cast<std::size_t>(2 * o.batch)};
  // Declared after the backend, the ops and the model: destroyed before them.
  std::unique_ptr<detr::GraphForward> graphs;
  if (o.cuda_graph) graphs = detr::make_graph_forward(*backend, *ops, model);

  std::printf(
      "detr_inference: %s, %s model, batch %d, %dx%d images, %d encoder / %d decoder "
      "layers, %d queries, %s\n",
      backend->describe().c_str(), o.model.c_str(), o.batch, o.image_size, o.image_size,
      config.enc_layers, config.dec_layers, config.queries, o.precision.c_str());
  std::printf("iterations: %d warm-up, then %d captured%s\n", o.warmup, o.iterations,
              o.cuda_graph ? "; eagerly, then again replaying a CUDA graph" : "");

  auto postprocess = nsk::instrument(
      [&](HostOutput const& h, int batch) {
        return detr::postprocess(h.logits, h.boxes, batch, config.queries, config.num_classes + 1,
                                 static_cast<std::size_t>(o.topk), static_cast<float>(o.image_size),
                                 static_cast<float>(o.image_size));
      },
      "postprocess");

  using Forward = std::function<detr::DetrOutput(nn::Tensor const&)>;
  // One run of the loop: a capture window of warm-up steps, then the active (measured,
  // profiled) steps. With --cuda-graph only the graph run drives the CUDA profiler
  // (cudaProfilerStart/Stop), so `ncu --profile-from-start off` sees the replays alone.
  auto run_phase = [&](Forward const& forward, bool profiler) {
    Phase ph;
    nsk::CaptureOptions co;
    if (!gpu || !profiler) {
      co.backends = nsk::CaptureBackend::nvtx_range;  // no CUDA profiler calls
      co.synchronize_before_stop = gpu;
    }
    nsk::CaptureWindow window{nsk::CaptureSchedule{0, o.warmup, o.iterations, 1}, co};
    detr::LoopBody const body = [&](std::size_t, nn::Tensor const& input) {
      auto step = window.step();
      auto const t0 = std::chrono::steady_clock::now();
      detr::DetrOutput const out = forward(input);
      HostOutput host;
      {
        nsk::ModuleScope const scope{"to_host"};  // waits for the GPU
        host.logits = to_floats(backend->read(out.logits));
        host.boxes = to_floats(backend->read(out.boxes));
      }
      ph.last = postprocess(host, input.shape().n);
      auto const t1 = std::chrono::steady_clock::now();
      if (step.captured()) {
        ph.latencies_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    };
    detr::LoopSpec const spec{o.batch, static_cast<std::size_t>(o.warmup + o.iterations)};
    if (gpu) {
      ph.prefetch_line = detr::run_cuda_loop(*backend, images, spec, body);
    } else {
      detr::run_cpu_loop(*backend, images, spec, body);
    }
    window.close();
    if (report_on) ph.snapshot = nsk::Report::snapshot();
    return ph;
  };

  // Writes the report's outputs of the run just measured; with --cuda-graph under a heading,
  // file names tagged with the run ("r.json" -> "r.eager.json", "r.graph.json").
  auto write_report = [&](char const* tag, char const* heading) {
    if (!report_on) return;
    if (tag != nullptr) {
      std::printf("\n==== nsightkit report of the %s ====\n", heading);
      (void)nsk::Report::enable(nn::tagged_options(report_options, tag));
    }
    std::fflush(stdout);
    if (!nsk::Report::write()) {
      std::fprintf(stderr, "detr_inference: the report was not fully written\n");
    }
    std::fflush(stdout);
  };

  auto print_latency = [&](Phase const& ph, char const* label) {
    detr::LatencyStats const batch_ms = detr::summarize(ph.latencies_ms);
    std::vector<double> per_image;
    for (double v : ph.latencies_ms) per_image.push_back(v / o.batch);
    detr::LatencyStats const image_ms = detr::summarize(per_image);
    std::printf(
        "latency%s over %zu captured iterations (forward + copy to host + post-processing):\n",
        label, batch_ms.count);
    std::printf("  per batch of %d: p50 %.3f ms  p95 %.3f ms  (mean %.3f, min %.3f, max %.3f)\n",
                o.batch, batch_ms.p50, batch_ms.p95, batch_ms.mean, batch_ms.min, batch_ms.max);
    std::printf("  per image:      p50 %.3f ms  p95 %.3f ms  (%.1f images/s at p50)\n",
                image_ms.p50, image_ms.p95, image_ms.p50 > 0 ? 1000.0 / image_ms.p50 : 0.0);
    return batch_ms;
  };

  auto print_detections = [&](Phase const& ph) {
    if (o.quiet || ph.last.empty()) return;
    std::printf("detections of the last batch's first image (top %d of %d queries):\n", o.topk,
                config.queries);
    for (detr::Detection const& d : ph.last.front()) {
      std::printf("  query %3d  class %2d  score %.4f  box (%.1f, %.1f, %.1f, %.1f)\n", d.query,
                  d.label, static_cast<double>(d.score), static_cast<double>(d.box[0]),
                  static_cast<double>(d.box[1]), static_cast<double>(d.box[2]),
                  static_cast<double>(d.box[3]));
    }
  };

  Forward const eager = [&](nn::Tensor const& input) {
    return model.forward(*backend, *ops, input);
  };
  Phase const eager_run = run_phase(eager, !o.cuda_graph);

  if (!o.cuda_graph) {
    print_detections(eager_run);
    if (!eager_run.prefetch_line.empty()) std::printf("%s\n", eager_run.prefetch_line.c_str());
    print_latency(eager_run, "");
    write_report(nullptr, nullptr);
  } else {
    std::printf("\n-- eager run --\n");
    print_detections(eager_run);
    std::printf("%s\n", eager_run.prefetch_line.c_str());
    detr::LatencyStats const eager_ms = print_latency(eager_run, " (eager)");
    write_report("eager", "eager run");

    // ---- the graph of this input shape: recorded in a step of its own, not measured ----
    // The report attributes a replayed kernel to the modules open when its node was recorded,
    // and sees module ranges only inside capture-window steps (captured_only): the recording
    // runs in a one-step window (NVTX range only, no profiler), and the report is reset after it.
    std::vector<float> first(images.floats_per_image() * static_cast<std::size_t>(o.batch));
    for (int j = 0; j < o.batch; ++j) {
      std::copy_n(images.image(static_cast<std::size_t>(j)), images.floats_per_image(),
                  first.begin() + static_cast<std::ptrdiff_t>(j) *
                                      static_cast<std::ptrdiff_t>(images.floats_per_image()));
    }
    nn::Tensor input =
        backend->empty(nn::Shape{o.batch, 3, o.image_size, o.image_size}, nn::Layout::nhwc);
    backend->upload(input, first.data(), first.size() * sizeof(float));
    if (report_on) nsk::Report::reset();
    {
      nsk::CaptureOptions co;
      co.backends = nsk::CaptureBackend::nvtx_range;
      co.nvtx_range_name = "graph recording";
      co.environment_variable = nullptr;  // NSIGHTKIT_CAPTURE schedules the measured runs
      nsk::CaptureWindow setup{nsk::CaptureSchedule{0, 0, 1, 1}, co};
      auto step = setup.step();
      (void)graphs->run(input);
      backend->synchronize();
    }
    std::printf("\n%s\n", graphs->describe().c_str());

    // ---- the graph's outputs against the eager forward's, same input, bit for bit ----
    detr::DetrOutput const e = model.forward(*backend, *ops, input);
    std::vector<double> const eager_logits = backend->read(e.logits);
    std::vector<double> const eager_boxes = backend->read(e.boxes);
    graphs->poison_outputs(input);  // NaN: only what the replay writes can match
    detr::DetrOutput const g = graphs->run(input);
    std::vector<double> const graph_logits = backend->read(g.logits);
    std::vector<double> const graph_boxes = backend->read(g.boxes);
    for (std::string const& m : {detr::first_mismatch("logits", eager_logits, graph_logits),
                                 detr::first_mismatch("boxes", eager_boxes, graph_boxes)}) {
      if (!m.empty()) {
        std::fprintf(stderr,
                     "detr_inference: --cuda-graph: the graph's outputs differ from the eager "
                     "forward's for the same input: first difference at %s\n",
                     m.c_str());
        return 1;
      }
    }
    std::printf(
        "outputs identical: the graph's logits (%zu values) and boxes (%zu values) equal the "
        "eager forward's bit for bit, same input\n",
        graph_logits.size(), graph_boxes.size());
    if (report_on) nsk::Report::reset();

    // ---- the measured graph run ----
    Forward const replay = [&](nn::Tensor const& in) { return graphs->run(in); };
    Phase const graph_run = run_phase(replay, true);
    std::printf("\n-- CUDA graph run --\n");
    print_detections(graph_run);
    std::printf("%s\n", graph_run.prefetch_line.c_str());
    detr::LatencyStats const graph_ms = print_latency(graph_run, " (CUDA graph)");
    std::printf("%s\n", graphs->describe().c_str());
    std::printf(
        "\nlatency per batch of %d, eager vs CUDA graph: p50 %.3f vs %.3f ms, mean %.3f vs %.3f "
        "ms (graph/eager p50 %.3f)\n",
        o.batch, eager_ms.p50, graph_ms.p50, eager_ms.mean, graph_ms.mean,
        eager_ms.p50 > 0 ? graph_ms.p50 / eager_ms.p50 : 0.0);
    if (report_on) {
      print_comparison(eager_run.snapshot, graph_run.snapshot, o.iterations);
      write_report("graph", "CUDA graph run");
    }
  }

  if (!report_on && o.report != "off") {
    std::printf("report: off (this build has NSIGHTKIT_DISABLE: no ranges, no report)\n");
  }
  std::printf(
      "ncu, one module of the captured iterations: ncu --clock-control none "
      "--profile-from-start off --nvtx --nvtx-include \"%s\" --metrics "
      "dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum <this program>\n",
      nsk::ncu_nvtx_include("backbone/stage3").c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::optional<detr::Options> o = detr::parse_options(argc, argv);
    if (!o) return 0;  // --help
    return run(*o);
  } catch (nn::UsageError const& e) {
    std::fprintf(stderr, "detr_inference: %s\n", e.what());
    return 2;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "detr_inference: error: %s\n", e.what());
    return 1;
  }
}
