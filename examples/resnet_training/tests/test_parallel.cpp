// Data-parallel pieces of resnet_training that run without GPUs or MPI: the gradient buckets and
// when they are reduced, what the launchers' variables say (Open MPI, MPICH's PMI, Slurm,
// torchrun), batch-norm groups. The MPI communicator runs in tests/check_parallel.py (mpirun).
#include "tiny.hpp"

#include "common/cpu_backend.hpp"
#include "distributed.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <stdlib.h>  // setenv, unsetenv

namespace {

resnet::ModelSpec spec() {
  resnet::ModelSpec s = resnet_test::small_spec();
  s.zero_init_residual = false;  // every parameter gets a nonzero gradient
  return s;
}

/// Records the reductions instead of making them.
struct FakeComm final : resnet::Communicator {
  struct Call {
    float* data;
    std::size_t count;
    std::string label;
  };
  std::vector<Call> calls;
  int joins{0};
  std::function<void()> on_reduce;  // called at each reduction (to look at the moment)
  [[nodiscard]] std::string describe() const override { return "fake"; }
  void all_reduce_mean(float* data, std::size_t count, std::string const& label) override {
    calls.push_back({data, count, label});
    if (on_reduce) on_reduce();
  }
  void join() override { ++joins; }
  void watchdog(double) override {}
  std::vector<std::uint64_t> checked;  // check_same() values
  void check_same(std::uint64_t value, char const*) override { checked.push_back(value); }
};

/// A scoped environment variable (restored afterwards).
class EnvVar {
 public:
  EnvVar(char const* name, char const* value) : name_{name} {
    if (char const* old = std::getenv(name)) old_ = old;
    had_ = std::getenv(name) != nullptr;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~EnvVar() {
    if (had_) {
      ::setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  EnvVar(EnvVar const&) = delete;
  EnvVar& operator=(EnvVar const&) = delete;

 private:
  std::string name_, old_;
  bool had_{false};
};

}  // namespace

TEST_CASE("buckets tile the gradient buffers: every parameter in exactly one contiguous bucket") {
  auto be = nn::make_cpu_backend();
  resnet_test::Tiny t{*be, spec(), 4, 8, 3};
  FakeComm comm;
  for (std::size_t bucket_bytes : {std::size_t{4}, std::size_t{256}, std::size_t{1} << 20}) {
    resnet::GradientSync sync{t.params, comm, bucket_bytes, true};
    comm.calls.clear();
    t.loss();
    sync.begin_backward();
    t.model->backward();
    sync.end_backward();
    REQUIRE(comm.calls.size() == sync.bucket_count());
    // The buckets cover each flat gradient buffer exactly, without overlap.
    std::size_t covered = 0;
    std::vector<std::pair<float*, float*>> spans;
    for (auto const& c : comm.calls) {
      spans.emplace_back(c.data, c.data + c.count);
      covered += c.count;
    }
    std::size_t total = 0;
    for (auto const& r : t.params.ranges()) total += r.grad.numel();
    REQUIRE(covered == total);
    // Before any reduction, the ranks compare how many gradient floats they reduce.
    REQUIRE(comm.checked.back() == total);
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) REQUIRE(spans[i - 1].second <= spans[i].first);
    for (auto const& p : t.params.params()) {
      auto* const g = static_cast<float*>(p.grad.raw());
      auto const inside = std::count_if(spans.begin(), spans.end(), [&](auto const& s) {
        return g >= s.first && g + p.grad.numel() <= s.second;
      });
      INFO(p.name);
      REQUIRE(inside == 1);
    }
    // Each bucket once, labelled by its index.
    std::set<std::string> labels;
    for (auto const& c : comm.calls) labels.insert(c.label);
    REQUIRE(labels.size() == comm.calls.size());
  }
}

TEST_CASE("with overlap, a bucket is reduced while backward runs, as soon as it is complete") {
  auto be = nn::make_cpu_backend();
  resnet_test::Tiny t{*be, spec(), 4, 8, 3};
  FakeComm comm;
  resnet::GradientSync sync{t.params, comm, 4, true};  // one bucket per parameter
  REQUIRE(sync.bucket_count() == t.params.params().size());
  std::vector<std::size_t> reduced_during_backward;
  bool in_backward = false;
  comm.on_reduce = [&] {
    if (in_backward) reduced_during_backward.push_back(comm.calls.size());
  };
  t.loss();
  sync.begin_backward();
  in_backward = true;
  t.model->backward();
  in_backward = false;
  std::size_t const before_end = comm.calls.size();
  sync.end_backward();
  // Every parameter has its gradient written by backward: all reduced before it returned.
  REQUIRE(before_end == sync.bucket_count());
  REQUIRE(reduced_during_backward.size() == sync.bucket_count());
  REQUIRE(comm.joins == 1);
  // Backward runs from the loss: the head's gradients are reduced first, the stem's last.
  auto const grad_of = [&](char const* name) {
    auto const& ps = t.params.params();
    auto const it =
        std::find_if(ps.begin(), ps.end(), [&](nn::Param const& p) { return p.name == name; });
    REQUIRE(it != ps.end());
    return static_cast<float*>(it->grad.raw());
  };
  REQUIRE(comm.calls.front().data == grad_of("fc.weight"));
  REQUIRE(comm.calls.back().data == grad_of("stem.conv.weight"));
}

TEST_CASE("without overlap, every bucket waits for end_backward - the observer is uninstalled") {
  auto be = nn::make_cpu_backend();
  resnet_test::Tiny t{*be, spec(), 4, 8, 3};
  FakeComm comm;
  resnet::GradientSync sync{t.params, comm, 4, false};
  t.loss();
  sync.begin_backward();
  REQUIRE(nn::gradient_observer() == &sync);
  t.model->backward();
  REQUIRE(comm.calls.empty());
  sync.end_backward();
  REQUIRE(comm.calls.size() == sync.bucket_count());
  REQUIRE(nn::gradient_observer() == nullptr);
}

TEST_CASE("a parameter reported twice in one backward pass is an error naming it") {
  auto be = nn::make_cpu_backend();
  resnet_test::Tiny t{*be, spec(), 4, 8, 3};
  FakeComm comm;
  resnet::GradientSync sync{t.params, comm, 1 << 20, true};
  sync.begin_backward();
  nn::Param& p = t.params.params().front();
  sync.ready(p);
  REQUIRE_THROWS_WITH(sync.ready(p), Catch::Contains(p.name) && Catch::Contains("twice"));
}

TEST_CASE("the launchers' variables: Open MPI, MPICH, Slurm, torchrun, none, bad values named") {
  // Every variable the reader looks at, unset for the test and restored afterwards.
  EnvVar const clear[] = {{"OMPI_COMM_WORLD_SIZE", nullptr},
                          {"OMPI_COMM_WORLD_RANK", nullptr},
                          {"PMI_SIZE", nullptr},
                          {"PMI_RANK", nullptr},
                          {"SLURM_STEP_NUM_TASKS", nullptr},
                          {"SLURM_PROCID", nullptr},
                          {"WORLD_SIZE", nullptr},
                          {"RANK", nullptr}};
  (void)clear;
  {
    auto const l = resnet::LauncherInfo::from_environment();
    REQUIRE(l.size == 1);
    REQUIRE(l.rank == 0);
    REQUIRE(std::string{l.launcher}.empty());
    REQUIRE_FALSE(resnet::World{}.distributed());
  }
  {
    EnvVar const s{"OMPI_COMM_WORLD_SIZE", "4"};
    EnvVar const r{"OMPI_COMM_WORLD_RANK", "3"};
    EnvVar const t{"WORLD_SIZE", "9"};  // left over from elsewhere: the MPI launcher's win
    auto const l = resnet::LauncherInfo::from_environment();
    REQUIRE(l.size == 4);
    REQUIRE(l.rank == 3);
    REQUIRE(std::string{l.launcher} == "Open MPI");
  }
  {
    EnvVar const s{"PMI_SIZE", "2"};
    EnvVar const r{"PMI_RANK", "1"};
    auto const l = resnet::LauncherInfo::from_environment();
    REQUIRE((l.size == 2 && l.rank == 1 && std::string{l.launcher} == "MPICH (PMI)"));
  }
  {
    EnvVar const s{"SLURM_STEP_NUM_TASKS", "8"};
    EnvVar const r{"SLURM_PROCID", "5"};
    auto const l = resnet::LauncherInfo::from_environment();
    REQUIRE((l.size == 8 && l.rank == 5 && std::string{l.launcher} == "Slurm (srun)"));
  }
  {
    EnvVar const s{"WORLD_SIZE", "2"};
    EnvVar const r{"RANK", "0"};
    auto const l = resnet::LauncherInfo::from_environment();
    REQUIRE((l.size == 2 && l.rank == 0 && std::string{l.launcher} == "torchrun"));
  }
  {
    EnvVar const s{"OMPI_COMM_WORLD_SIZE", "1"};
    REQUIRE(resnet::LauncherInfo::from_environment().size == 1);  // mpirun -np 1: one process
  }
  {
    EnvVar const s{"PMI_SIZE", "2"};
    EnvVar const r{"PMI_RANK", "2"};
    REQUIRE_THROWS_WITH(resnet::LauncherInfo::from_environment(),
                        Catch::Contains("PMI_RANK=2 is not below PMI_SIZE=2"));
  }
  {
    EnvVar const s{"WORLD_SIZE", "two"};
    REQUIRE_THROWS_WITH(resnet::LauncherInfo::from_environment(),
                        Catch::Contains("WORLD_SIZE='two' is not a non-negative integer"));
  }
  {
    EnvVar const s{"OMPI_COMM_WORLD_SIZE", "2"};
    REQUIRE_THROWS_WITH(resnet::LauncherInfo::from_environment(),
                        Catch::Contains("OMPI_COMM_WORLD_RANK is not set"));
  }
}

TEST_CASE("batch-norm groups normalise each slice of the batch on its own") {
  auto be = nn::make_cpu_backend();
  nn::ParameterStore whole_ps, half_ps;
  nn::BatchNorm2d grouped{*be, whole_ps, "bn", 3, nn::Layout::nchw, 1e-5, 0.1, 1.0, 2};
  nn::BatchNorm2d single{*be, half_ps, "bn", 3, nn::Layout::nchw, 1e-5, 0.1, 1.0, 1};
  whole_ps.allocate(*be);
  whole_ps.initialize(*be, 5);
  half_ps.allocate(*be);
  half_ps.initialize(*be, 5);
  nn::Rng rng{7};
  nn::Tensor x = be->empty(nn::Shape{4, 3, 2, 2}, nn::Layout::nchw);
  nn::Tensor dy = be->empty(nn::Shape{4, 3, 2, 2}, nn::Layout::nchw);
  std::vector<double> xv(x.numel()), dyv(dy.numel());
  for (auto& v : xv) v = 3.0 * rng.normal() + 1.0;
  for (auto& v : dyv) v = rng.normal();
  be->write(x, xv);
  be->write(dy, dyv);
  auto const y = be->read(grouped.forward(x));
  auto const dx = be->read(grouped.backward(dy));
  auto const dgamma = be->read(whole_ps.params()[0].grad);
  std::vector<double> dgamma_sum(3, 0.0);
  std::size_t const half = x.numel() / 2;
  for (int g = 0; g < 2; ++g) {
    auto const off = static_cast<std::size_t>(g) * half;
    nn::Tensor const xs = x.view(off, nn::Shape{2, 3, 2, 2}, nn::Layout::nchw);
    nn::Tensor const dys = dy.view(off, nn::Shape{2, 3, 2, 2}, nn::Layout::nchw);
    auto const ys = be->read(single.forward(xs));
    auto const dxs = be->read(single.backward(dys));
    for (std::size_t i = 0; i < half; ++i) {
      REQUIRE(y[off + i] == Approx(ys[i]).margin(1e-6));
      REQUIRE(dx[off + i] == Approx(dxs[i]).margin(1e-6));
    }
    auto const dg = be->read(half_ps.params()[0].grad);
    for (std::size_t c = 0; c < 3; ++c) dgamma_sum[c] += dg[c];
  }
  for (std::size_t c = 0; c < 3; ++c) REQUIRE(dgamma[c] == Approx(dgamma_sum[c]).margin(1e-5));
  // Grouped statistics differ from whole-batch ones (else this test proves nothing).
  nn::ParameterStore plain_ps;
  nn::BatchNorm2d plain{*be, plain_ps, "bn", 3, nn::Layout::nchw};
  plain_ps.allocate(*be);
  plain_ps.initialize(*be, 5);
  auto const yp = be->read(plain.forward(x));
  REQUIRE(std::abs(yp[0] - y[0]) > 1e-3);
  // A batch that does not split is an error naming the flag.
  nn::Tensor odd = be->empty(nn::Shape{3, 3, 2, 2}, nn::Layout::nchw);
  REQUIRE_THROWS_WITH(grouped.forward(odd), Catch::Contains("--bn-groups"));
}
