#include "train.hpp"

#include "common/nn.hpp"
#include "data.hpp"
#include "distributed.hpp"
#include "model.hpp"
#include "report_view.hpp"
#include "runtime.hpp"

#include <nsightkit/capture.hpp>
#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

namespace resnet {
namespace {
namespace nsk = nsightkit;
using Clock = std::chrono::steady_clock;

double mean_of(std::vector<StepRecord> const& v, std::size_t begin, std::size_t end, bool loss) {
  double s = 0;
  for (std::size_t i = begin; i < end; ++i) s += loss ? v[i].loss : v[i].accuracy;
  return end > begin ? s / static_cast<double>(end - begin) : 0.0;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  auto const mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

std::uint64_t bits_of(double v) noexcept {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

/// The training step's CUDA graph: report rows "graph training step (record)" and
/// "graph training step (replay)".
constexpr char const* kGraphName = "training step";

/// What the runs of one process share (--cuda-graph trains twice with it).
struct Session {
  Config const& cfg;
  World const& world;
  std::FILE* out;
  std::string prefix;
  ReportSetup report;
  Runtime& rt;
  Communicator* comm;
};

enum class Mode { eager, graph };

/// One training run: a model with weights drawn from `cfg.rng_start`, a loader from batch 0. Fills `result`'s
/// steps and timing. `header`: print the configuration first; `label`: printed after it.
void run_once(Session const& s, Mode mode, bool header, char const* label, RunResult& result) {
  Config const& cfg = s.cfg;
  std::FILE* const out = s.out;
  nn::Backend& be = s.rt.backend();
  ModelSpec const spec = model_spec(cfg);
  spec.validate(cfg.image_size);
  nn::ParameterStore params;
  ResNet model{be, params, spec};
  params.allocate(be);
  params.initialize(be, cfg.rng_start);
  nn::Sgd sgd{be, params, nn::Sgd::Options{cfg.lr, cfg.momentum, cfg.weight_decay}};
  // Every rank starts from the same weights: their random numbers start at the same `cfg.rng_start`.
  std::optional<GradientSync> sync;
  if (s.comm != nullptr)
    sync.emplace(params, *s.comm, static_cast<std::size_t>(cfg.bucket_kb) * 1024, cfg.overlap);

  DataSpec data;
  data.image_size = cfg.image_size;
  data.classes = cfg.classes;
  data.layout = cfg.layout;
  data.rng_start = cfg.rng_start;
  data.decode_us = cfg.decode_us;
  LoaderOptions lo;
  lo.batch = cfg.batch;
  lo.workers = cfg.workers;
  lo.shard = s.world.rank;
  lo.shards = s.world.size;
  Loader loader{data, lo, s.rt.host_allocator()};
  // The loader's fetch wrapped as a module: every call is a module scope "data", as a patched
  // DataLoader fetch would be in a Python training loop.
  auto fetch = nsk::instrument([&loader] { return loader.next(); }, "data");
  s.rt.set_source([&fetch] { return fetch(); });

  if (header) {
    std::fprintf(out, "device:   %s%s%s\n", be.describe().c_str(),
                 cfg.device_note.empty() ? "" : "\n          auto: ", cfg.device_note.c_str());
    std::fprintf(out, "model:    %s, %zu parameters\n", spec.describe().c_str(), params.size());
    std::fprintf(
        out, "data:     %dx%d synthetic images, batch %d, %d worker%s, decode %d us/image, %s\n",
        cfg.image_size, cfg.image_size, cfg.batch, cfg.workers, cfg.workers == 1 ? "" : "s",
        cfg.decode_us, s.rt.host_allocator().name());
    std::fprintf(out, "pipeline: %s\n", s.rt.describe().c_str());
    std::fprintf(out, "training: %d steps (%d warm-up), SGD lr %g momentum %g weight decay %g%s\n",
                 cfg.steps, cfg.warmup, cfg.lr, cfg.momentum, cfg.weight_decay,
                 cfg.cuda_graph ? ";\n          eagerly, then again (same weights, same batches) "
                                  "replaying a CUDA graph of each step"
                                : "");
    if (s.comm != nullptr) {
      std::fprintf(out,
                   "parallel: %d ranks (one process each), global batch %d; %s;\n          %s\n",
                   s.world.size, cfg.batch * s.world.size, s.comm->describe().c_str(),
                   sync->describe().c_str());
    }
    for (auto const& n : cfg.notes) std::fprintf(out, "note:     %s\n", n.c_str());
  }
  if (label != nullptr) std::fprintf(out, "\n%s\n", label);

  // Skip the warm-up (cuDNN algorithm choice, allocations, the pools filling up), then capture
  // a few steps: wait = warmup + 1, warmup = 1, active = 3. NSIGHTKIT_CAPTURE overrides it.
  // With --cuda-graph only the graph run drives the CUDA profiler (cudaProfilerStart/Stop), so a
  // profiler that waits for it sees replays only.
  nsk::CaptureOptions co;
  bool const cuda = cfg.device == nn::Device::cuda;
  bool const profiler = cuda && (!cfg.cuda_graph || mode == Mode::graph);
  co.backends = profiler ? nsk::CaptureBackend::all : nsk::CaptureBackend::nvtx_range;
  co.synchronize_before_stop = cuda;  // nothing to wait for on the CPU
  nsk::CaptureWindow window{nsk::CaptureSchedule{cfg.warmup + 1, 1, 3}, co};
  window.on_start([out](nsk::CaptureEvent const& e) {
    std::fprintf(out, "capture:  window %lld starts at step %lld (planned through step %lld)\n",
                 static_cast<long long>(e.cycle), static_cast<long long>(e.first_step),
                 static_cast<long long>(e.last_step));
  });
  window.on_stop([out](nsk::CaptureEvent const& e) {
    std::fprintf(out, "capture:  window %lld stops after step %lld%s\n",
                 static_cast<long long>(e.cycle), static_cast<long long>(e.last_step),
                 e.complete ? "" : " (closed early)");
  });
  std::fflush(out);

  result.steps.assign(static_cast<std::size_t>(cfg.steps), StepRecord{});
  result.captured_steps.clear();
  auto const batch = static_cast<double>(cfg.batch);
  std::int64_t recorded = 0;  // steps whose metrics came back, in order
  auto record = [&](std::int64_t step, StepMetrics m) {
    auto& r = result.steps[static_cast<std::size_t>(step)];
    r.loss = m[0];
    r.accuracy = m[1] / batch;
    if (!std::isfinite(r.loss)) {
      throw std::runtime_error("the loss is not finite at step " + std::to_string(step) +
                               " (diverged: try a smaller --lr)");
    }
    recorded = step + 1;
    if (recorded % cfg.log_every == 0 || recorded == cfg.steps) {
      auto const n = static_cast<std::size_t>(std::min<std::int64_t>(cfg.log_every, recorded));
      auto const end = static_cast<std::size_t>(recorded);
      std::fprintf(
          out, "step %5lld/%d  loss %.4f  accuracy %5.1f%%  (mean of the last %zu steps)\n",
          static_cast<long long>(recorded), cfg.steps, mean_of(result.steps, end - n, end, true),
          100.0 * mean_of(result.steps, end - n, end, false), n);
      std::fflush(out);
    }
  };

  bool const straggler = s.world.distributed() && s.world.rank == cfg.slow_rank;
  // The step's device work, on whatever tensors it is given: the eager loop's batch, or a
  // StepGraph's static tensors (run eagerly once, then recorded: these ranges and the layers'
  // module ranges open inside the recording name the replayed kernels' paths).
  StepBody const body = [&](nn::Tensor const& images, nn::Tensor const& labels, nn::Tensor& m) {
    {
      nsk::ScopedRange const r{"forward"};
      // --slow-rank: a rank whose host falls behind (slow input, a noisy neighbour) holds
      // every other rank back at the next all-reduce.
      if (straggler) std::this_thread::sleep_for(std::chrono::milliseconds(cfg.slow_ms));
      model.forward(images, labels, m);
    }
    {
      nsk::ScopedRange const r{"backward"};
      if (sync) sync->begin_backward();
      model.backward();
      if (sync) sync->end_backward();  // "backward/allreduce wait"
    }
    {
      nsk::ScopedRange const r{"optimizer"};
      sgd.step();
    }
  };
  nn::Tensor metrics;
  std::unique_ptr<StepGraph> graph;  // destroyed before the model, the optimizer and the loader
  if (mode == Mode::graph) {
    graph = s.rt.make_step_graph(body, kGraphName);
  } else {
    metrics = be.empty(nn::Shape{cfg.steps, 2, 1, 1}, nn::Layout::nchw);
  }

  std::vector<double> step_ms;
  Clock::time_point t0 = Clock::now();
  for (int step = 0; step < cfg.steps; ++step) {
    if (step == cfg.warmup) {
      s.rt.finish();  // measure from an idle GPU
      if (s.report.on && cfg.reset_report_after_warmup) reset_report();
      t0 = Clock::now();
    }
    if (s.world.rank == cfg.die_rank && step == cfg.die_step) {
      std::fprintf(stderr, "resnet_training: rank %d: --die-rank: exiting abruptly at step %d\n",
                   s.world.rank, step);
      std::fflush(stderr);
      std::_Exit(3);  // no destructors, no goodbye to the other ranks: as a crash
    }
    Clock::time_point const step_start = Clock::now();
    auto st = window.step();  // NVTX range "step N"; capture edges
    result.steps[static_cast<std::size_t>(step)].phase = nsk::to_string(st.phase());
    if (st.captured()) result.captured_steps.push_back(step);
    s.rt.in_step([&] {
      DeviceBatch const in = s.rt.next_batch();  // "data", "h2d"
      if (graph) {
        // "graph inputs" (the batch into the static tensors), then the step: eager, recorded
        // or replayed ("graph training step (replay)", a start/end range).
        s.rt.end_step(step, graph->run(in));
      } else {
        nn::Tensor m = metrics.view(static_cast<std::size_t>(step) * 2, nn::Shape{2, 1, 1, 1},
                                    nn::Layout::nchw);
        body(in.images, in.labels, m);
        if (s.comm != nullptr) {  // the loss and accuracy of the global batch
          s.comm->all_reduce_mean(static_cast<float*>(m.raw()), 2, "metrics");
          s.comm->join();
        }
        s.rt.end_step(step, m);
      }
      // The host waits for the previous step (as a loop printing loss.item() one step late
      // would): at most two steps in flight, and the wait shows when the GPU is the bottleneck.
      nsk::ScopedRange const r{"sync"};
      if (step >= 1) record(step - 1, s.rt.wait_step(step - 1));
    });
    if (step >= cfg.warmup) {
      step_ms.push_back(
          std::chrono::duration<double, std::milli>(Clock::now() - step_start).count());
    }
  }
  record(cfg.steps - 1, s.rt.wait_step(cfg.steps - 1));
  s.rt.finish();
  auto const t1 = Clock::now();

  result.measured_steps = cfg.steps - cfg.warmup;
  result.seconds = std::chrono::duration<double>(t1 - t0).count();
  result.images_per_second =
      result.seconds > 0 ? result.measured_steps * batch * s.world.size / result.seconds : 0.0;
  result.step_ms = result.measured_steps > 0 ? 1e3 * result.seconds / result.measured_steps : 0.0;
  result.step_p50_ms = median_of(std::move(step_ms));
  if (graph) result.graph = graph->describe();
}

/// The run's loss, accuracy, throughput and captured steps.
void print_summary(std::FILE* out, Config const& cfg, RunResult const& result) {
  std::size_t const n = std::max<std::size_t>(1, static_cast<std::size_t>(cfg.steps) / 5);
  std::size_t const all = result.steps.size();
  std::fprintf(out,
               "\nloss:       %.4f (first %zu steps) -> %.4f (last %zu steps)\n"
               "accuracy:   %.1f%% -> %.1f%%\n"
               "throughput: %.1f images/s (%d steps after %d warm-up steps, %.3f s)\n",
               mean_of(result.steps, 0, n, true), n, mean_of(result.steps, all - n, all, true), n,
               100.0 * mean_of(result.steps, 0, n, false),
               100.0 * mean_of(result.steps, all - n, all, false), result.images_per_second,
               result.measured_steps, cfg.warmup, result.seconds);
  std::string captured;
  for (auto s : result.captured_steps)
    captured += (captured.empty() ? "" : " ") + std::to_string(s);
  // The steps the capture window's schedule made active (the report's "capture-window steps"
  // line counts every step it recorded, captured or not).
  std::fprintf(out,
               "captured:   steps [%s] of %d (the capture window's active steps, inside its "
               "\"capture\" range)\n",
               captured.c_str(), cfg.steps);
}

/// --cuda-graph: trains eagerly, then replaying a CUDA graph of the step; compares the losses,
/// the step times and the reports. `result` receives the graph run (and the eager run's steps).
void train_eager_then_graph(Session const& s, RunResult& result) {
  Config const& cfg = s.cfg;
  std::FILE* const out = s.out;
  RunResult eager;
  run_once(s, Mode::eager, true, "-- eager run --", eager);
  print_summary(out, cfg, eager);
  nsk::ReportSnapshot eager_report;
  if (s.report.on) {
    eager_report = nsk::Report::snapshot();
    finish_report(s.report, out, "eager", "the eager run");
    reset_report();  // the graph run's report starts empty
  }

  run_once(s, Mode::graph, false,
           "-- CUDA graph run: the same training, each step replayed from a CUDA graph --", result);
  print_summary(out, cfg, result);
  std::fprintf(out, "%s\n", result.graph.c_str());

  result.cuda_graph = true;
  result.eager_steps = eager.steps;
  result.eager_images_per_second = eager.images_per_second;
  result.eager_step_ms = eager.step_ms;
  result.eager_step_p50_ms = eager.step_p50_ms;
  std::string const difference = first_difference(eager.steps, result.steps);
  result.losses_identical = difference.empty();
  std::size_t worst_step = 0;
  for (std::size_t i = 0; i < eager.steps.size() && i < result.steps.size(); ++i) {
    double const e = eager.steps[i].loss;
    double const rel = std::abs(result.steps[i].loss - e) / std::max(std::abs(e), 1e-30);
    if (rel > result.loss_max_relative_difference) {
      result.loss_max_relative_difference = rel;
      worst_step = i;
    }
  }
  // Deterministic kernels everywhere (FP32 FMA math and deterministic cuDNN algorithms with
  // --no-tf32; channels-first batch norm, whose reductions add in a fixed order): the same
  // weights and batches must give the same bits, replayed or not. Otherwise cuDNN may run an
  // algorithm that accumulates with atomics, and channels-last batch norm adds its partial sums
  // with atomics: each run, eager or replayed, may round differently.
  bool const deterministic = !cfg.tf32 && cfg.layout == nn::Layout::nchw;
  std::fprintf(out, "\n");
  if (result.losses_identical) {
    std::fprintf(out,
                 "losses identical: the %zu steps' losses and accuracies of the CUDA graph run "
                 "equal the eager run's bit for bit (same weights, same batches)\n",
                 result.steps.size());
  } else if (!deterministic) {
    std::fprintf(out,
                 "losses close, not bit for bit: largest relative difference %.3g (step %zu: "
                 "eager %.9g, graph %.9g); with TF32 or channels-last some kernels add in a "
                 "different order each run (cuDNN algorithms with atomics, channels-last batch "
                 "norm), eager or replayed; --no-tf32 --layout nchw makes the runs identical\n",
                 result.loss_max_relative_difference, worst_step, eager.steps[worst_step].loss,
                 result.steps[worst_step].loss);
  }
  double const ratio = eager.step_ms > 0 ? result.step_ms / eager.step_ms : 0.0;
  std::fprintf(out,
               "step time, eager vs CUDA graph (%d measured steps): mean %.3f vs %.3f ms, p50 "
               "%.3f vs %.3f ms (graph/eager mean %.3f); %.1f vs %.1f images/s\n",
               result.measured_steps, eager.step_ms, result.step_ms, eager.step_p50_ms,
               result.step_p50_ms, ratio, eager.images_per_second, result.images_per_second);
  if (s.report.on) {
    print_graph_comparison(out, eager_report, nsk::Report::snapshot(), result.measured_steps);
    finish_report(s.report, out, "graph", "the CUDA graph run");
  }
  if (!result.losses_identical && deterministic) {
    throw std::runtime_error(
        "--cuda-graph: the CUDA graph run trained differently from the eager run although "
        "every kernel is deterministic here (--no-tf32, --layout nchw): " +
        difference);
  }
}

}  // namespace

std::string first_difference(std::vector<StepRecord> const& eager,
                             std::vector<StepRecord> const& graph) {
  if (eager.size() != graph.size()) {
    return std::to_string(eager.size()) + " eager steps, " + std::to_string(graph.size()) +
           " in the graph run";
  }
  for (std::size_t i = 0; i < eager.size(); ++i) {
    for (bool const loss : {true, false}) {
      double const e = loss ? eager[i].loss : eager[i].accuracy;
      double const g = loss ? graph[i].loss : graph[i].accuracy;
      if (bits_of(e) != bits_of(g)) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "step %zu: %s eager %.9g, graph %.9g", i,
                      loss ? "loss" : "accuracy", e, g);
        return buf;
      }
    }
  }
  return {};
}

RunResult train(Config const& cfg, std::FILE* main_out) {
  RunResult result;
  World const world = World::from_environment();
  result.world_size = world.size;
  for (auto const& [flag, rank] :
       {std::pair{"--die-rank", cfg.die_rank}, {"--slow-rank", cfg.slow_rank}}) {
    if (rank >= world.size) {
      throw std::runtime_error(std::string{flag} + " " + std::to_string(rank) +
                               " is not a rank of this run (" + std::to_string(world.size) +
                               " rank" + (world.size == 1 ? "" : "s") + ")");
    }
  }
  if (cfg.cuda_graph && world.distributed()) {
    throw std::runtime_error(
        "--cuda-graph: not with several ranks (" + std::to_string(world.size) +
        " ranks): the recorded step would have to hold the gradient all-reduce, which "
        "data-parallel "
        "training runs bucket by bucket from the host; run --cuda-graph in a single process");
  }
  // Rank 0 speaks for the run; the others report only errors (and their report files).
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> null_out{nullptr, &std::fclose};
  if (world.rank != 0) {
    null_out.reset(std::fopen("/dev/null", "w"));
    if (!null_out) throw std::runtime_error("cannot open /dev/null");
  }
  std::FILE* const out = world.rank == 0 ? main_out : null_out.get();
  std::string const prefix =
      world.distributed() ? "rank " + std::to_string(world.rank) + " " : std::string{};
  // First, so that the loader's worker threads are seen starting (and named).
  ReportSetup const report = setup_report(cfg, out, world.rank);
  result.report_enabled = report.on;
  RuntimeOptions ro;
  ro.batch = cfg.batch;
  ro.image_size = cfg.image_size;
  ro.layout = cfg.layout;
  ro.pinned = cfg.pinned;
  ro.prefetch = cfg.prefetch;
  ro.tf32 = cfg.tf32;
  ro.cudnn_benchmark = cfg.cudnn_benchmark;
  ro.device = world.local_rank;
  ro.name_prefix = prefix;
  std::unique_ptr<Runtime> rt;
  if (cfg.device == nn::Device::cuda) {
#if NSIGHTKIT_EXAMPLES_CUDA
    rt = make_cuda_runtime(ro);
#else
    throw std::runtime_error("this build of resnet_training has no CUDA backend");
#endif
  } else {
    rt = make_cpu_runtime(ro);
  }
  nn::Backend& be = rt->backend();
  result.backend = be.describe();
  result.pipeline = rt->describe();

  std::unique_ptr<Communicator> comm;
  if (world.distributed()) {
    CommOptions co;
    co.timeout_s = cfg.dist_timeout;
    if (cfg.device == nn::Device::cuda) {
#if NSIGHTKIT_EXAMPLES_NCCL
      comm = make_nccl_communicator(world, co, be.stream_handle(), world.local_rank);
      nsk::name_cuda_device(world.local_rank,
                            (prefix + "GPU " + std::to_string(world.local_rank)).c_str());
#else
      throw std::runtime_error(std::to_string(world.size) +
                               " ranks: this build of resnet_training has no NCCL (data-parallel "
                               "training on CUDA needs it and MPI; the CPU backend needs MPI "
                               "alone)");
#endif
    } else {
      comm = make_host_communicator(world, co);
    }
    Communicator* const c = comm.get();
    rt->set_watchdog([c](double waited) { c->watchdog(waited); });
  }

  nsk::name_current_thread((prefix + "train").c_str());
  Session const session{cfg, world, out, prefix, report, *rt, comm.get()};
  if (cfg.cuda_graph) {
    train_eager_then_graph(session, result);
  } else {
    run_once(session, Mode::eager, true, nullptr, result);
    print_summary(out, cfg, result);
    finish_report(report, out);
  }
  if (cfg.device == nn::Device::cuda) {
    std::fprintf(out,
                 "\nOne block's kernels in Nsight Compute (both directions; `forward/` in front "
                 "for forward only):\n  ncu --clock-control none --nvtx --nvtx-include \"%s\" "
                 "--print-summary per-kernel <this command>\n",
                 nsk::ncu_nvtx_include(ResNet::block_path(std::min(2, cfg.stages), 0)).c_str());
  }
  std::fflush(out);
  return result;
}

void write_metrics_json(std::string const& path, Config const& cfg, RunResult const& r) {
  std::ofstream f{path};
  if (!f) throw std::runtime_error("--metrics: cannot write " + path);
  f.precision(9);
  f << "{\"format\":\"resnet_training-metrics\",\"version\":1,\n\"device\":\""
    << nn::to_string(cfg.device) << "\",\"layout\":\"" << nn::to_string(cfg.layout)
    << "\",\"batch\":" << cfg.batch << ",\"world_size\":" << r.world_size
    << ",\"global_batch\":" << cfg.batch * r.world_size << ",\"bn_groups\":" << cfg.bn_groups
    << ",\"steps\":" << cfg.steps << ",\"warmup\":" << cfg.warmup << ",\"workers\":" << cfg.workers
    << ",\"pinned\":" << (cfg.pinned ? "true" : "false")
    << ",\"prefetch\":" << (cfg.prefetch ? "true" : "false")
    << ",\"instrumentation\":" << (nsightkit::enabled ? "true" : "false")
    << ",\"report\":" << (r.report_enabled ? "true" : "false")
    << ",\n\"images_per_second\":" << r.images_per_second << ",\"seconds\":" << r.seconds
    << ",\"measured_steps\":" << r.measured_steps << ",\n\"captured_steps\":[";
  for (std::size_t i = 0; i < r.captured_steps.size(); ++i)
    f << (i ? "," : "") << r.captured_steps[i];
  f << "],\n\"loss\":[";
  for (std::size_t i = 0; i < r.steps.size(); ++i) f << (i ? "," : "") << r.steps[i].loss;
  f << "],\n\"accuracy\":[";
  for (std::size_t i = 0; i < r.steps.size(); ++i) f << (i ? "," : "") << r.steps[i].accuracy;
  f << "],\n\"phase\":[";
  for (std::size_t i = 0; i < r.steps.size(); ++i)
    f << (i ? "," : "") << '"' << r.steps[i].phase << '"';
  f << "],\n\"step_ms\":" << r.step_ms << ",\"step_p50_ms\":" << r.step_p50_ms
    << ",\"cuda_graph\":" << (r.cuda_graph ? "true" : "false");
  if (r.cuda_graph) {
    // The fields above are the CUDA graph run's; these the eager run's, for comparison.
    f << ",\n\"losses_identical\":" << (r.losses_identical ? "true" : "false")
      << ",\"loss_max_relative_difference\":" << r.loss_max_relative_difference
      << ",\"eager_images_per_second\":" << r.eager_images_per_second
      << ",\"eager_step_ms\":" << r.eager_step_ms
      << ",\"eager_step_p50_ms\":" << r.eager_step_p50_ms << ",\n\"eager_loss\":[";
    for (std::size_t i = 0; i < r.eager_steps.size(); ++i)
      f << (i ? "," : "") << r.eager_steps[i].loss;
    f << "],\n\"eager_accuracy\":[";
    for (std::size_t i = 0; i < r.eager_steps.size(); ++i)
      f << (i ? "," : "") << r.eager_steps[i].accuracy;
    f << "]";
  }
  f << "}\n";
  if (!f) throw std::runtime_error("--metrics: error writing " + path);
}

}  // namespace resnet
