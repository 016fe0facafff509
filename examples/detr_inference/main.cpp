// detr_inference: a DETR-style detector's batched inference loop, instrumented with nsightkit.
//
//   warm-up iterations, then a CaptureWindow of measured iterations (cudaProfilerStart/Stop and
//   an NVTX range around them); every module an NVTX range through nsightkit::Hooked; input
//   batches through nsightkit::StreamPrefetcher (pinned staging, copy stream) on the GPU;
//   the in-process report aggregates the module ranges of the captured iterations (CPU time,
//   and GPU time on the compute stream) and prints the per-module table; the latency per image
//   (p50/p95) is printed with it.
//
// Run `detr_inference --help` for the options; examples/detr_inference/README.md for the
// Nsight Compute workflow (scripts/gpu/detr.sh).
#include "driver.hpp"
#include "model.hpp"
#include "options.hpp"
#include "postprocess.hpp"

#include "common/cli.hpp"
#include "common/cpu_backend.hpp"
#include "common/cuda_backend.hpp"
#include "common/inference_ops.hpp"

#include <nsightkit/capture.hpp>
#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/report.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
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
  if (o.report != "off") {
    nsk::ReportOptions ro = nsk::ReportOptions::parse(o.report);
    ro.captured_only = true;  // warm-up iterations are not measured
    ro.at_exit = false;       // written below, after the latency lines
    report_on = nsk::Report::enable(ro);
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

  std::printf(
      "detr_inference: %s, %s model, batch %d, %dx%d images, %d encoder / %d decoder "
      "layers, %d queries, %s\n",
      backend->describe().c_str(), o.model.c_str(), o.batch, o.image_size, o.image_size,
      config.enc_layers, config.dec_layers, config.queries, o.precision.c_str());
  std::printf("iterations: %d warm-up, then %d captured\n", o.warmup, o.iterations);

  // ---- capture window: warm-up steps, then the active (measured, profiled) steps ----
  nsk::CaptureOptions co;
  if (!gpu) {
    co.backends = nsk::CaptureBackend::nvtx_range;  // no CUDA profiler calls on the CPU
    co.synchronize_before_stop = false;
  }
  nsk::CaptureWindow window{nsk::CaptureSchedule{0, o.warmup, o.iterations, 1}, co};

  auto postprocess = nsk::instrument(
      [&](HostOutput const& h, int batch) {
        return detr::postprocess(h.logits, h.boxes, batch, config.queries, config.num_classes + 1,
                                 static_cast<std::size_t>(o.topk), static_cast<float>(o.image_size),
                                 static_cast<float>(o.image_size));
      },
      "postprocess");

  std::vector<double> latencies_ms;
  std::vector<std::vector<detr::Detection>> last;
  detr::LoopBody const body = [&](std::size_t, nn::Tensor const& input) {
    auto step = window.step();
    auto const t0 = std::chrono::steady_clock::now();
    detr::DetrOutput const out = model.forward(*backend, *ops, input);
    HostOutput host;
    {
      nsk::ModuleScope const scope{"to_host"};  // waits for the GPU
      host.logits = to_floats(backend->read(out.logits));
      host.boxes = to_floats(backend->read(out.boxes));
    }
    last = postprocess(host, input.shape().n);
    auto const t1 = std::chrono::steady_clock::now();
    if (step.captured()) {
      latencies_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  };

  detr::LoopSpec const spec{o.batch, static_cast<std::size_t>(o.warmup + o.iterations)};
  std::string prefetch_line;
  if (gpu) {
    prefetch_line = detr::run_cuda_loop(*backend, images, spec, body);
  } else {
    detr::run_cpu_loop(*backend, images, spec, body);
  }
  window.close();

  // ---- results ----
  if (!o.quiet && !last.empty()) {
    std::printf("detections of the last batch's first image (top %d of %d queries):\n", o.topk,
                config.queries);
    for (detr::Detection const& d : last.front()) {
      std::printf("  query %3d  class %2d  score %.4f  box (%.1f, %.1f, %.1f, %.1f)\n", d.query,
                  d.label, static_cast<double>(d.score), static_cast<double>(d.box[0]),
                  static_cast<double>(d.box[1]), static_cast<double>(d.box[2]),
                  static_cast<double>(d.box[3]));
    }
  }
  if (!prefetch_line.empty()) std::printf("%s\n", prefetch_line.c_str());

  detr::LatencyStats const batch_ms = detr::summarize(latencies_ms);
  std::vector<double> per_image;
  for (double v : latencies_ms) per_image.push_back(v / o.batch);
  detr::LatencyStats const image_ms = detr::summarize(per_image);
  std::printf("latency over %zu captured iterations (forward + copy to host + post-processing):\n",
              batch_ms.count);
  std::printf("  per batch of %d: p50 %.3f ms  p95 %.3f ms  (mean %.3f, min %.3f, max %.3f)\n",
              o.batch, batch_ms.p50, batch_ms.p95, batch_ms.mean, batch_ms.min, batch_ms.max);
  std::printf("  per image:      p50 %.3f ms  p95 %.3f ms  (%.1f images/s at p50)\n", image_ms.p50,
              image_ms.p95, image_ms.p50 > 0 ? 1000.0 / image_ms.p50 : 0.0);

  if (report_on) {
    std::fflush(stdout);
    if (!nsk::Report::write()) {
      std::fprintf(stderr, "detr_inference: the report was not fully written\n");
    }
  } else if (o.report != "off") {
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
