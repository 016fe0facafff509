// A small data-parallel "training loop" on the CPU for the nsightkit::mpi tests, started by
// mpiexec (tests/mpi/test_mpi.py). The report comes from NSIGHTKIT_REPORT; nsightkit::mpi merges
// it on rank 0 in MPI_Finalize (or in Report::write() with --explicit). Every step: "data" on a
// loader thread and the main thread, "forward" (rank 1 sleeps --slow-ms in forward/layer2: the
// straggler), "backward" holding an MPI all-reduce in a range named as a collective, "optimizer";
// rank 0 alone saves a checkpoint (a path the other ranks lack) and sets a mark.
//
//   mpi_report_demo [--explicit] [--no-same-host] [--timeout S] [--slow-ms MS]
//                   [--min-excess-ms MS] [--fake-gpu cupti|mixed]
//                   [--fail throw|stall-gather|stall-collective|die]
// --min-excess-ms: the straggler rule's absolute threshold (MergeOptions::min_excess_ms).
// --fake-gpu: GPU sources without a GPU. cupti: on every rank a fake CUPTI source records one
// kernel per call of forward/layer1 (200 us, stream 7) and of the all-reduce (on "NCCL's" stream
// 13: 2 ms on rank 0, which waits there for the straggler, 200 us on rank 1), as CUPTI would
// attribute them. mixed: rank 0 so, rank 1 a fake events source instead, which gives every range
// a GPU span as long as its CPU time.
// --fail: rank 1 throws at step 3 (uncaught), sleeps 120 s before the report's gather, sleeps
// 120 s before its all-reduce of step 3, or exits abruptly at step 3. The job must end at once
// with a line naming the failure.
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/mpi.hpp>
#include <nsightkit/report.hpp>

#include <mpi.h>

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/cupti/attribution.hpp>
#include <nsightkit/detail/report/clock.hpp>
#include <nsightkit/detail/report/lifecycle.hpp>
#endif

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using us = std::chrono::microseconds;

void busy(us d) {
  auto const end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

#if NSIGHTKIT_ENABLED
namespace nr = nsightkit::detail::report;

// CUPTI's part without a GPU: a launch noted on the launching thread (its innermost range gets the
// work), the kernel's record delivered later, at the report's flush, as CUPTI's buffers are.
class FakeCupti final : public nr::AttributionSource {
 public:
  [[nodiscard]] char const* name() const noexcept override { return "cupti"; }

  void kernel(char const* kname, std::uint32_t stream, std::int64_t ns) {
    std::int64_t const now = nr::clock_now(nr::process_tsc());
    std::lock_guard<std::mutex> lock{queue_mutex_};
    std::uint32_t const id = next_++;
    note_launch(id, now);
    nr::GpuActivity a;
    a.kind = nr::GpuActivity::Kind::kernel;
    a.correlation = id;
    a.stream = stream;
    a.start = now;
    a.end = now + ns;
    a.name = intern_name(kname);
    queued_.push_back(a);
  }

 protected:
  void deliver() override {
    std::vector<nr::GpuActivity> batch;
    {
      std::lock_guard<std::mutex> lock{queue_mutex_};
      batch.swap(queued_);
    }
    if (!batch.empty()) add_activities(batch.data(), batch.size());
  }

 private:
  std::mutex queue_mutex_;  // the main thread launches, the report flushes at exit
  std::uint32_t next_{1};
  std::vector<nr::GpuActivity> queued_;
};

// The events source's part without a GPU: every range that would be timed on a stream gets a GPU
// span as long as its CPU time, as if it ran one piece of stream-ordered work that long.
class FakeSpans final : public nr::GpuSource {
 public:
  [[nodiscard]] char const* name() const noexcept override { return "events"; }
  void begin(nr::State& s, nr::ThreadData& td, nr::Frame& f, nr::GpuContext const& ctx) override {
    (void)s, (void)td, (void)ctx;
    f.gpu = 0;  // timed: end() is called
  }
  void end(nr::State& s, nr::ThreadData& td, nr::Frame const& f) override {
    if (f.node < td.nodes.size()) {
      td.nodes[f.node].gpu.add(s.now() - f.start, s.exact_samples.load(std::memory_order_relaxed));
    }
  }
  void drop_open(nr::State& s, nr::ThreadData& td) override { (void)s, (void)td; }
  void poll(nr::State& s, nr::ThreadData& td) override { (void)s, (void)td; }
  void flush(nr::State& s) override { (void)s; }
  void shutdown(nr::State& s) noexcept override { (void)s; }
  void fill(nr::State& s, nsightkit::GpuTimingStats& out) override {
    (void)s;
    out.source = name();
  }
};

FakeCupti* fake_cupti = nullptr;  // leaked, as the sources: the report may flush them during exit
nr::GpuSource* fake_source = nullptr;
nr::GpuSource* provide_fake() { return fake_source; }
#endif

/// A kernel launched here, as the fake CUPTI source records it (nothing without one).
void fake_kernel(char const* kname, std::uint32_t stream, std::int64_t ns) {
#if NSIGHTKIT_ENABLED
  if (fake_cupti != nullptr) fake_cupti->kernel(kname, stream, ns);
#else
  (void)kname, (void)stream, (void)ns;
#endif
}

[[noreturn]] void usage(char const* why) {
  std::fprintf(stderr, "mpi_report_demo: %s\n", why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  bool explicit_write = false;
  std::string fake_gpu;
  std::string fail;
  int slow_ms = 10;
  nsightkit::mpi::Options options;
  options.timeout_s = 60;
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    if (a == "--explicit") {
      explicit_write = true;
    } else if (a == "--fake-gpu" && i + 1 < argc) {
      fake_gpu = argv[++i];
    } else if (a == "--no-same-host") {
      options.same_host_clocks = false;
    } else if (a == "--timeout" && i + 1 < argc) {
      options.timeout_s = std::atof(argv[++i]);
    } else if (a == "--slow-ms" && i + 1 < argc) {
      slow_ms = std::atoi(argv[++i]);
    } else if (a == "--min-excess-ms" && i + 1 < argc) {
      options.merge.min_excess_ms = std::atof(argv[++i]);
    } else if (a == "--fail" && i + 1 < argc) {
      fail = argv[++i];
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (!fake_gpu.empty() && fake_gpu != "cupti" && fake_gpu != "mixed")
    usage("--fake-gpu cupti|mixed");
#if NSIGHTKIT_ENABLED
  if (!fake_gpu.empty()) {
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (fake_gpu == "mixed" && world_rank == 1) {
      fake_source = new FakeSpans{};
    } else {
      fake_source = fake_cupti = new FakeCupti{};
    }
    // Offered as the CUPTI component offers its source; a report NSIGHTKIT_REPORT started already
    // picks its GPU source again.
    nr::cupti_provider.store(&provide_fake);
    nr::provider_arrived();
  }
#endif
  if (!nsightkit::mpi::enable(MPI_COMM_WORLD, options)) {
    MPI_Finalize();
    return 1;
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  bool const failing = rank == 1;
  if (explicit_write && nsightkit::Report::is_enabled()) {
    // Written by the Report::write() below alone, not again at exit (in MPI_Finalize).
    nsightkit::ReportOptions o = nsightkit::Report::options();
    o.at_exit = false;
    nsightkit::Report::enable(o);
  }

  nsightkit::name_current_thread(("rank " + std::to_string(rank) + " main").c_str());
  std::thread loader{[rank] {
    nsightkit::name_current_thread(("rank " + std::to_string(rank) + " loader").c_str());
    for (int i = 0; i < 10; ++i) {
      nsightkit::ScopedRange r{"data"};
      busy(us{300});
    }
  }};
  nsightkit::Attributes const step_attr{nsightkit::detail::step_category()};
  nsightkit::UniqueRange epoch{"epoch"};
  std::vector<float> grads(4096, 1.0f + static_cast<float>(rank));
  for (int step = 0; step < 10; ++step) {
    nsightkit::ScopedRange s{step_attr, "step " + std::to_string(step)};
    {
      nsightkit::ScopedRange d{"data"};
      busy(us{100});
    }
    {
      nsightkit::ScopedRange f{"forward"};
      {
        nsightkit::ScopedRange l{"layer1"};
        fake_kernel("conv_kernel", 7, 200'000);
        busy(us{400});
      }
      {
        nsightkit::ScopedRange l{"layer2"};
        busy(us{300});
        if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms));
      }
    }
    if (failing && step == 3) {
      if (fail == "throw") throw std::runtime_error("simulated failure in step 3");
      if (fail == "die") {
        std::fprintf(stderr, "mpi_report_demo: rank 1: exiting abruptly at step 3\n");
        std::fflush(stderr);
        std::_Exit(3);
      }
      if (fail == "stall-collective") std::this_thread::sleep_for(std::chrono::seconds(120));
    }
    {
      nsightkit::ScopedRange b{"backward"};
      busy(us{500});
      nsightkit::ScopedRange ar{nsightkit::Attributes{nsightkit::Payload{grads.size() * 4}},
                                "allreduce grads"};
      fake_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 13, rank == 0 ? 2'000'000 : 200'000);
      MPI_Request req;
      MPI_Iallreduce(MPI_IN_PLACE, grads.data(), static_cast<int>(grads.size()), MPI_FLOAT, MPI_SUM,
                     MPI_COMM_WORLD, &req);
      if (!nsightkit::mpi::wait(req, options.timeout_s)) {
        nsightkit::mpi::abort_job("mpi_report_demo: rank " + std::to_string(rank) +
                                  ": no all-reduce from the other ranks within " +
                                  std::to_string(static_cast<int>(options.timeout_s)) + " s");
      }
      for (float& g : grads) g /= static_cast<float>(size);
    }
    {
      nsightkit::ScopedRange o{"optimizer"};
      busy(us{200});
    }
    if (rank == 0 && step == 5) {
      nsightkit::ScopedRange c{"save checkpoint"};
      busy(us{1000});
      nsightkit::mark("checkpoint");
    }
  }
  epoch.end();
  loader.join();
  if (failing && fail == "stall-gather") std::this_thread::sleep_for(std::chrono::seconds(120));
  if (explicit_write) nsightkit::Report::write();
  MPI_Finalize();
  return 0;
}
