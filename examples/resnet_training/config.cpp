#include "config.hpp"

#include "common/cli.hpp"
#include "model.hpp"

#include <nsightkit/report.hpp>

#include <cstdio>
#include <limits>
#include <stdexcept>

namespace resnet {
namespace {

constexpr char const* kProgram = "resnet_training";

/// Defaults that depend on the device: a run of a few seconds on one CPU core, or a GPU-sized
/// run (every optimisation switch on, except channels-last).
struct Defaults {
  int steps, warmup, batch, image_size, width, blocks, workers, decode_us;
  bool pinned, prefetch;
};
constexpr Defaults kCpuDefaults{30, 3, 16, 16, 8, 1, 2, 0, false, false};
constexpr Defaults kCudaDefaults{100, 10, 128, 64, 32, 2, 4, 200, true, true};

struct Parser {
  Config c;
  std::string layout{"nchw"};
  nn::ArgParser args{
      kProgram,
      "resnet_training: a small ResNet trained on a synthetic image dataset, "
      "instrumented end to end\nwith nsightkit (module ranges, a capture window, the "
      "in-process report).\n\n"
      "Usage: resnet_training [options]\n"
      "  CPU (any machine):  resnet_training --device cpu\n"
      "  GPU, unoptimised baseline:  resnet_training --device cuda --workers 0 "
      "--pageable --no-prefetch --layout nchw\n"
      "Environment: NSIGHTKIT_CAPTURE=wait=W,warmup=U,active=A overrides the "
      "capture window;\nNSIGHTKIT_REPORT=... configures the report when --report is "
      "not given."};

  Parser() {
    args.add_section("Run:");
    args.add_choice("device", "auto: CUDA when a device is usable, else the CPU (default auto)",
                    &c.device_flag, {"auto", "cpu", "cuda"});
    args.add_int("steps", "N", "training steps (default: 30 on the CPU, 100 on CUDA)", &c.steps, 1,
                 10000000);
    args.add_int("warmup", "N",
                 "steps before timing starts and the report is reset (default: 3 CPU, 10 CUDA)",
                 &c.warmup, 0, 10000000);
    args.add_int("batch", "N", "images per batch (default: 16 CPU, 128 CUDA)", &c.batch, 2, 65536);
    args.add_double("lr", "F", "SGD learning rate (default 0.05)", &c.lr, 1e-9, 10.0);
    args.add_double("momentum", "F", "SGD momentum (default 0.9)", &c.momentum, 0.0, 0.999);
    args.add_double("weight-decay", "F", "weight decay of conv and linear weights (default 5e-4)",
                    &c.weight_decay, 0.0, 1.0);
    args.add_u64("rng-start", "N",
                 "where the random numbers of the weights and the data start (default 1)",
                 &c.rng_start);

    args.add_section("Model and data:");
    args.add_int("image-size", "N", "image height and width (default: 16 CPU, 64 CUDA)",
                 &c.image_size, 2, 4096);
    args.add_int("width", "N", "channels of stage 1, doubled per stage (default: 8 CPU, 32 CUDA)",
                 &c.width, 1, 4096);
    args.add_int("stages", "N", "stages of basic blocks (default 3)", &c.stages, 1, 4);
    args.add_int("blocks", "N", "basic blocks per stage (default: 1 CPU, 2 CUDA)", &c.blocks, 1,
                 64);
    args.add_int("classes", "N", "classes of the synthetic dataset (default 10)", &c.classes, 2,
                 1000);
    args.add_choice("layout",
                    "memory layout of images, activations and filters (default nchw);\nnhwc is "
                    "channels-last",
                    &layout, {"nchw", "nhwc"});
    args.add_switch("tf32", "CUDA: TF32 tensor-core math in cuDNN and cuBLAS (default)", &c.tf32,
                    true);
    args.add_switch("no-tf32", "CUDA: FP32 FMA math only, deterministic algorithms", &c.tf32,
                    false);
    args.add_switch("cudnn-benchmark",
                    "CUDA: time cuDNN's convolution algorithms once per shape and keep the\n"
                    "fastest (torch.backends.cudnn.benchmark; default)",
                    &c.cudnn_benchmark, true);
    args.add_switch("no-cudnn-benchmark", "CUDA: take cuDNN's heuristic choice instead",
                    &c.cudnn_benchmark, false);
    args.add_switch("cuda-graph",
                    "CUDA: train eagerly, then again from the same weights and data with each\n"
                    "training step (forward, backward, optimizer) recorded once as a CUDA graph\n"
                    "and replayed; compares the losses and prints both step times and reports",
                    &c.cuda_graph, true);

    args.add_section("Input pipeline (one switch per optimisation):");
    args.add_int("workers", "N",
                 "loader worker threads; 0 = batches are made on the training thread\n(default: "
                 "2 CPU, 4 CUDA)",
                 &c.workers, 0, 512);
    args.add_int("decode-us", "N",
                 "minimum CPU time per image, busy-waited, standing in for JPEG decoding\n"
                 "(default: 0 CPU, 200 CUDA)",
                 &c.decode_us, 0, 10000000);
    args.add_switch("pinned",
                    "CUDA: workers fill page-locked memory from nsightkit's PinnedMemoryPool "
                    "(default on CUDA)",
                    &c.pinned, true);
    args.add_switch("pageable", "workers fill ordinary pageable memory (the CPU's only mode)",
                    &c.pinned, false);
    args.add_switch("prefetch",
                    "CUDA: nsightkit::StreamPrefetcher copies the next batch on a copy stream\n"
                    "while the current one computes (default on CUDA)",
                    &c.prefetch, true);
    args.add_switch("no-prefetch", "copy each batch on the compute stream (the CPU's only mode)",
                    &c.prefetch, false);

    args.add_section(
        "Data-parallel (one process per GPU, started by an MPI launcher: mpirun -np N or srun;\n"
        "rank 0 prints, the report of every rank is merged on rank 0; --batch is per rank):");
    args.add_int("bn-groups", "N",
                 "batch-norm statistics over N equal slices of the batch (default 1); a single\n"
                 "process with --bn-groups N reproduces N ranks of the same global batch",
                 &c.bn_groups, 1, 65536);
    args.add_int("bucket-kb", "N", "gradients all-reduced in buckets of about N KiB (default 1024)",
                 &c.bucket_kb, 1, 1 << 20);
    args.add_switch("no-overlap",
                    "all-reduce the gradients after the backward pass instead of during it",
                    &c.overlap, false);
    args.add_double("dist-timeout", "S",
                    "end the whole job after S seconds without progress from another rank\n"
                    "(default 120)",
                    &c.dist_timeout, 1.0, 86400.0);
    args.add_int("slow-rank", "R", "make rank R a straggler (with --slow-ms)", &c.slow_rank, 0,
                 65535);
    args.add_int("slow-ms", "MS", "milliseconds rank --slow-rank sleeps in every forward pass",
                 &c.slow_ms, 1, 600000);
    args.add_int("die-rank", "R",
                 "fault-handling demo: rank R exits abruptly (exit code 3, no clean-up) at step\n"
                 "--die-step; the other ranks must fail with a clear error, not hang",
                 &c.die_rank, 0, 65535);
    args.add_int("die-step", "N", "the step at which --die-rank exits", &c.die_step, 0, 10000000);

    args.add_section("Output:");
    args.add_string("report", "SPEC",
                    "the report, in NSIGHTKIT_REPORT's grammar: table[=stdout|stderr|PATH],\n"
                    "json=PATH, csv=PATH, trace=PATH, window-only, ...; off for none\n"
                    "(default table=stdout,html=resnet_training_report.html: the table\n"
                    "and the HTML page)",
                    &c.report, [](std::string const& spec) {
                      std::string why;
                      if (!nsightkit::ReportOptions::try_parse(spec, &why) && !why.empty()) {
                        throw std::invalid_argument(why);
                      }
                    });
    args.add_switch("keep-warmup",
                    "keep the warm-up steps in the report (default: reset it after them)",
                    &keep_warmup, true);
    args.add_string("metrics", "PATH",
                    "write per-step loss and accuracy, images/s and the "
                    "captured steps as JSON",
                    &c.metrics_path, [](std::string const& p) {
                      if (p.empty()) throw std::invalid_argument("empty path");
                    });
    args.add_int("log-every", "N", "print the loss every N steps (default: steps / 10)",
                 &c.log_every, 1, 10000000);
  }

  bool keep_warmup{false};
};

[[noreturn]] void usage_error(std::string const& message) { throw nn::UsageError(message); }

void apply_defaults(Parser& p, Defaults const& d) {
  auto& c = p.c;
  auto def = [&](char const* flag, int& field, int value) {
    if (!p.args.given(flag)) field = value;
  };
  def("steps", c.steps, d.steps);
  def("warmup", c.warmup, d.warmup);
  def("batch", c.batch, d.batch);
  def("image-size", c.image_size, d.image_size);
  def("width", c.width, d.width);
  def("blocks", c.blocks, d.blocks);
  def("workers", c.workers, d.workers);
  def("decode-us", c.decode_us, d.decode_us);
  if (!p.args.given("pinned") && !p.args.given("pageable")) c.pinned = d.pinned;
  if (!p.args.given("prefetch") && !p.args.given("no-prefetch")) c.prefetch = d.prefetch;
}

/// Flags that only mean something together: one without the other is an error naming both.
void require_together(Parser const& p, char const* a, char const* b, char const* why) {
  if (p.args.given(a) == p.args.given(b)) return;
  bool const has_a = p.args.given(a);
  usage_error(std::string{"--"} + (has_a ? a : b) + " needs --" + (has_a ? b : a) + " too" + why);
}

void resolve(Parser& p, bool (*cuda_probe)(std::string*)) {
  auto& c = p.c;
  c.layout = p.layout == "nhwc" ? nn::Layout::nhwc : nn::Layout::nchw;
  c.report_given = p.args.given("report");
  c.reset_report_after_warmup = !p.keep_warmup;

  std::string why;
  if (c.device_flag == "cuda") {
    if (!cuda_probe(&why)) usage_error("--device cuda: " + why);
    c.device = nn::Device::cuda;
  } else if (c.device_flag == "cpu") {
    c.device = nn::Device::cpu;
  } else {
    c.device = cuda_probe(&why) ? nn::Device::cuda : nn::Device::cpu;
    if (c.device == nn::Device::cpu) c.device_note = "no CUDA device: " + why;
  }

  if (c.cuda_graph && c.device == nn::Device::cpu) {
    usage_error(std::string{"--cuda-graph needs the CUDA backend (--device cuda): CUDA graphs "
                            "replay GPU work, the CPU backend runs every step eagerly"} +
                (c.device_note.empty() ? "" : " (" + c.device_note + ")"));
  }
  if (c.device == nn::Device::cpu) {
    // The CPU backend reads batches straight from host memory: no page-locked memory, no copy
    // stream. Asking for them explicitly is an error; under --device auto they are ignored.
    for (char const* flag :
         {"pinned", "prefetch", "tf32", "no-tf32", "cudnn-benchmark", "no-cudnn-benchmark"}) {
      if (!p.args.given(flag)) continue;
      std::string const msg = std::string{"--"} + flag + " needs the CUDA backend";
      if (c.device_flag == "cpu") {
        usage_error(msg + " (the CPU backend reads batches straight from host memory; drop --" +
                    flag + " or use --device cuda)");
      }
      c.notes.push_back(msg + ": ignored on the CPU");
    }
    apply_defaults(p, kCpuDefaults);
    c.pinned = false;
    c.prefetch = false;
  } else {
    apply_defaults(p, kCudaDefaults);
  }

  if (c.warmup >= c.steps) {
    usage_error("--warmup: " + std::to_string(c.warmup) +
                " warm-up steps leave no measured step of " + std::to_string(c.steps) +
                " (--steps); use fewer warm-up steps or more steps");
  }
  try {
    model_spec(c).validate(c.image_size);
  } catch (std::invalid_argument const& e) {
    usage_error(std::string{"--image-size: "} + e.what());
  }
  if (c.cuda_graph && c.warmup < 2) {
    usage_error("--cuda-graph: --warmup " + std::to_string(c.warmup) +
                " is too few: the CUDA graph run's first step runs eagerly (it sizes every "
                "buffer) and its second is captured; both must come before the measured steps "
                "(use --warmup 2 or more)");
  }
  if (c.log_every == 0) c.log_every = c.steps >= 10 ? c.steps / 10 : 1;
  if (c.batch % c.bn_groups != 0) {
    usage_error("--bn-groups: a batch of " + std::to_string(c.batch) + " does not split into " +
                std::to_string(c.bn_groups) + " equal slices");
  }
  require_together(p, "die-rank", "die-step", "");
  require_together(p, "slow-rank", "slow-ms", " (which rank sleeps, and how long per step)");
}

}  // namespace

ModelSpec model_spec(Config const& c) {
  ModelSpec spec;
  spec.classes = c.classes;
  spec.width = c.width;
  spec.stages = c.stages;
  spec.blocks = c.blocks;
  spec.layout = c.layout;
  spec.bn_groups = c.bn_groups;
  return spec;
}

std::string help_text() {
  Parser p;
  return p.args.help();
}

ParseResult parse_config(int argc, char const* const* argv, bool (*cuda_probe)(std::string*)) {
  ParseResult r;
  Parser p;
  try {
    if (!p.args.parse(argc, argv)) return r;  // --help: exit 0
    resolve(p, cuda_probe);
  } catch (nn::UsageError const& e) {
    r.error = std::string{kProgram} + ": error: " + e.what() + "\n(see " + kProgram + " --help)\n";
    r.exit_code = 2;
    return r;
  }
  r.run = true;
  r.config = std::move(p.c);
  return r;
}

}  // namespace resnet
