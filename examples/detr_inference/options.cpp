#include "options.hpp"

#include "common/cli.hpp"

#include <nsightkit/report.hpp>

#include <stdexcept>

namespace detr {

std::optional<Options> parse_options(int argc, char const* const* argv) {
  Options o;
  std::string const program = argc > 0 && argv[0] != nullptr ? argv[0] : "detr_inference";
  nn::ArgParser p{
      program,
      "A DETR-style detector (residual CNN backbone, transformer encoder and decoder, class and\n"
      "box heads) on synthetic images: warm-up iterations, then a capture window of measured\n"
      "iterations. Every module is an NVTX range (backbone/stage3/block1, "
      "encoder/layer0/self_attn,\n"
      "decoder/layer2/cross_attn, ...); the per-module report and the latency per image are\n"
      "printed at the end.\n"
      "Profile one module's kernels of the captured iterations with Nsight Compute, e.g.\n"
      "  ncu --clock-control none --profile-from-start off --nvtx \\\n"
      "      --nvtx-include \"nsightkit@backbone/stage3/\" " +
          program + " --iterations 1"};
  p.add_section("device and model");
  p.add_choice("device", "backend: cuda when built with CUDA and a GPU is usable (default auto)",
               &o.device, {"cpu", "cuda", "auto"});
  p.add_choice("model", "model size (default auto: base on cuda, tiny on cpu)", &o.model,
               {"tiny", "base", "auto"});
  p.add_choice("precision",
               "fp32 (FP32 FMA math, default) or tf32 (tensor cores, fp32 storage; cuda only); "
               "fp16 and bf16 are not supported (rejected with the reason)",
               &o.precision, {"fp32", "tf32", "fp16", "bf16"});
  p.add_int("batch", "N", "images per batch (default 8 on cuda, 2 on cpu)", &o.batch, 1, 1024);
  p.add_int("image-size", "N",
            "square input size, a multiple of 32 (default 640 on cuda, 128 on cpu)", &o.image_size,
            32, 4096);
  p.add_int("enc-layers", "N", "encoder layers (default 6)", &o.enc_layers, 1, 64);
  p.add_int("dec-layers", "N", "decoder layers (default 6)", &o.dec_layers, 1, 64);
  p.add_int("queries", "N", "object queries (default 100)", &o.queries, 1, 10000);
  p.add_section("run");
  p.add_int("iterations", "N",
            "measured iterations, inside the capture window (default 20 on cuda, 3 on cpu)",
            &o.iterations, 1, 1000000);
  p.add_int("warmup", "N", "warm-up iterations before the window (default 10 on cuda, 1 on cpu)",
            &o.warmup, 0, 1000000);
  p.add_int("topk", "K", "detections kept per image (default 10)", &o.topk, 1, 10000);
  p.add_string("report", "SPEC",
               "the nsightkit report, in NSIGHTKIT_REPORT's grammar: table[=stderr|stdout|PATH], "
               "json=PATH, csv=PATH, trace=PATH, html=PATH, ... or off (default "
               "table=stdout,html=detr_inference_report.html)",
               &o.report, [](std::string const& spec) {
                 std::string why;
                 if (!nsightkit::ReportOptions::try_parse(spec, &why) && !why.empty()) {
                   throw std::invalid_argument(why);
                 }
               });
  p.add_switch("quiet", "do not print the detections", &o.quiet, true);
  p.add_switch("cuda-graph",
               "run the iterations eagerly, then again as a CUDA graph recorded once per input "
               "shape and replayed; prints both latencies, checks that the graph's outputs equal "
               "the eager ones exactly, and prints the report of each run (cuda only)",
               &o.cuda_graph, true);
  if (!p.parse(argc, argv)) return std::nullopt;
  if (o.image_size != 0 && o.image_size % 32 != 0) {
    throw nn::UsageError("--image-size: " + std::to_string(o.image_size) +
                         " is not a multiple of 32 (the backbone's total stride)");
  }
  return o;
}

void resolve(Options& o, bool gpu) {
  if (o.precision == "fp16" || o.precision == "bf16") {
    throw nn::UsageError(
        "--precision " + o.precision +
        ": not supported: the examples' shared nn::Tensor and backends (examples/common) store "
        "f32/f64 only, so there is no correct half-precision path; use fp32, or tf32 on cuda for "
        "tensor-core math");
  }
  if (!gpu && o.precision == "tf32") {
    throw nn::UsageError("--precision tf32 needs the GPU (--device cuda); the CPU computes fp32");
  }
  if (!gpu && o.cuda_graph) {
    throw nn::UsageError(
        "--cuda-graph needs the GPU (--device cuda): CUDA graphs replay GPU work; the CPU runs "
        "the model eagerly");
  }
  if (o.model == "auto") o.model = gpu ? "base" : "tiny";
  if (o.batch == 0) o.batch = gpu ? 8 : 2;
  if (o.image_size == 0) o.image_size = gpu ? 640 : 128;
  if (o.iterations == 0) o.iterations = gpu ? 20 : 3;
  if (o.warmup < 0) o.warmup = gpu ? 10 : 1;
}

}  // namespace detr
