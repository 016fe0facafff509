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

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
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

}  // namespace

RunResult train(Config const& cfg, std::FILE* main_out) {
  RunResult result;
  World const world = World::from_environment();
  result.world_size = world.size;
  for (auto const& [flag, rank] :
       {std::pair{"--die-rank", cfg.die_rank}, {"--slow-rank", cfg.slow_rank}}) {
    if (rank >= world.size) {
      throw std::runtime_error(
          std::string{flag} + " " + std::to_string(rank) +
          " is not a rank of this run (WORLD_SIZE=" + std::to_string(world.size) + ")");
    }
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
      throw std::runtime_error("WORLD_SIZE=" + std::to_string(world.size) +
                               ": this build of resnet_training has no NCCL (data-parallel "
                               "training on CUDA needs it; the CPU backend needs nothing)");
#endif
    } else {
      comm = make_host_communicator(world, co);
    }
    Communicator* const c = comm.get();
    rt->set_watchdog([c](double waited) { c->watchdog(waited); });
  }

  ModelSpec const spec = model_spec(cfg);
  spec.validate(cfg.image_size);
  nn::ParameterStore params;
  ResNet model{be, params, spec};
  params.allocate(be);
  params.initialize(be, cfg.seed);
  nn::Sgd sgd{be, params, nn::Sgd::Options{cfg.lr, cfg.momentum, cfg.weight_decay}};
  // Every rank starts from the same weights: they come from the same seed.
  std::optional<GradientSync> sync;
  if (comm)
    sync.emplace(params, *comm, static_cast<std::size_t>(cfg.bucket_kb) * 1024, cfg.overlap);

  DataSpec data;
  data.image_size = cfg.image_size;
  data.classes = cfg.classes;
  data.layout = cfg.layout;
  data.seed = cfg.seed;
  data.decode_us = cfg.decode_us;
  LoaderOptions lo;
  lo.batch = cfg.batch;
  lo.workers = cfg.workers;
  lo.shard = world.rank;
  lo.shards = world.size;
  Loader loader{data, lo, rt->host_allocator()};
  // The seeds' "monkey patch" of the DataLoader's fetch: every call is a module scope "data".
  auto fetch = nsk::instrument([&loader] { return loader.next(); }, "data");
  rt->set_source([&fetch] { return fetch(); });
  nn::Tensor metrics = be.empty(nn::Shape{cfg.steps, 2, 1, 1}, nn::Layout::nchw);

  std::fprintf(out, "device:   %s%s%s\n", be.describe().c_str(),
               cfg.device_note.empty() ? "" : "\n          auto: ", cfg.device_note.c_str());
  std::fprintf(out, "model:    %s, %zu parameters\n", spec.describe().c_str(), params.size());
  std::fprintf(out,
               "data:     %dx%d synthetic images, batch %d, %d worker%s, decode %d us/image, %s\n",
               cfg.image_size, cfg.image_size, cfg.batch, cfg.workers, cfg.workers == 1 ? "" : "s",
               cfg.decode_us, rt->host_allocator().name());
  std::fprintf(out, "pipeline: %s\n", rt->describe().c_str());
  std::fprintf(out, "training: %d steps (%d warm-up), SGD lr %g momentum %g weight decay %g\n",
               cfg.steps, cfg.warmup, cfg.lr, cfg.momentum, cfg.weight_decay);
  if (comm) {
    std::fprintf(out, "parallel: %d ranks (one process each), global batch %d; %s;\n          %s\n",
                 world.size, cfg.batch * world.size, comm->describe().c_str(),
                 sync->describe().c_str());
  }
  for (auto const& n : cfg.notes) std::fprintf(out, "note:     %s\n", n.c_str());

  // Skip the warm-up (cuDNN algorithm choice, allocations, the pools filling up), then capture
  // a few steps: wait = warmup + 1, warmup = 1, active = 3. NSIGHTKIT_CAPTURE overrides it.
  nsk::CaptureOptions co;
  bool const cuda = cfg.device == nn::Device::cuda;
  co.backends = cuda ? nsk::CaptureBackend::all : nsk::CaptureBackend::nvtx_range;
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

  result.steps.resize(static_cast<std::size_t>(cfg.steps));
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

  nsk::name_current_thread((prefix + "train").c_str());
  bool const straggler = world.distributed() && world.rank == cfg.slow_rank;
  Clock::time_point t0 = Clock::now();
  for (int step = 0; step < cfg.steps; ++step) {
    if (step == cfg.warmup) {
      rt->finish();  // measure from an idle GPU
      if (report.on && cfg.reset_report_after_warmup) reset_report();
      t0 = Clock::now();
    }
    if (world.rank == cfg.die_rank && step == cfg.die_step) {
      std::fprintf(stderr, "resnet_training: rank %d: --die-rank: exiting abruptly at step %d\n",
                   world.rank, step);
      std::fflush(stderr);
      std::_Exit(3);  // no destructors, no goodbye to the other ranks: as a crash
    }
    auto s = window.step();  // NVTX range "step N"; capture edges
    result.steps[static_cast<std::size_t>(step)].phase = nsk::to_string(s.phase());
    if (s.captured()) result.captured_steps.push_back(step);
    rt->in_step([&] {
      DeviceBatch const in = rt->next_batch();  // "data", "h2d"
      nn::Tensor m =
          metrics.view(static_cast<std::size_t>(step) * 2, nn::Shape{2, 1, 1, 1}, nn::Layout::nchw);
      {
        nsk::ScopedRange const r{"forward"};
        // --slow-rank: a rank whose host falls behind (slow input, a noisy neighbour) holds
        // every other rank back at the next all-reduce.
        if (straggler) std::this_thread::sleep_for(std::chrono::milliseconds(cfg.slow_ms));
        model.forward(in.images, in.labels, m);
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
      if (comm) {  // the loss and accuracy of the global batch
        comm->all_reduce_mean(static_cast<float*>(m.raw()), 2, "metrics");
        comm->join();
      }
      rt->end_step(step, m);
      // The host waits for the previous step (as a loop printing loss.item() one step late
      // would): at most two steps in flight, and the wait shows when the GPU is the bottleneck.
      nsk::ScopedRange const r{"sync"};
      if (step >= 1) record(step - 1, rt->wait_step(step - 1));
    });
  }
  record(cfg.steps - 1, rt->wait_step(cfg.steps - 1));
  rt->finish();
  auto const t1 = Clock::now();

  result.measured_steps = cfg.steps - cfg.warmup;
  result.seconds = std::chrono::duration<double>(t1 - t0).count();
  result.images_per_second =
      result.seconds > 0 ? result.measured_steps * batch * world.size / result.seconds : 0.0;

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

  finish_report(report, out);
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
  f << "]}\n";
  if (!f) throw std::runtime_error("--metrics: error writing " + path);
}

}  // namespace resnet
