// Data-parallel pieces of resnet_training that run without GPUs: the gradient buckets and when
// they are reduced, the launcher's environment, batch-norm groups, and the loopback TCP
// communicator (several ranks as threads of this process: results, ranks out of step, a rank
// that vanishes, a rank that never comes).
#include "tiny.hpp"

#include "common/cpu_backend.hpp"
#include "distributed.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

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

std::string fresh_dir(char const* name) {
  auto const dir = std::filesystem::temp_directory_path() /
                   (std::string{"nsk-parallel-"} + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

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

TEST_CASE("the launcher's environment: single process, ranks, and bad values named") {
  EnvVar const rdv{"NSIGHTKIT_RENDEZVOUS", "/tmp/rdv"};
  {
    EnvVar const ws{"WORLD_SIZE", nullptr};
    auto const w = resnet::World::from_environment();
    REQUIRE_FALSE(w.distributed());
    REQUIRE(w.rank == 0);
  }
  {
    EnvVar const ws{"WORLD_SIZE", "4"};
    EnvVar const r{"RANK", "3"};
    EnvVar const lr{"LOCAL_RANK", "1"};
    auto const w = resnet::World::from_environment();
    REQUIRE(w.distributed());
    REQUIRE(w.size == 4);
    REQUIRE(w.rank == 3);
    REQUIRE(w.local_rank == 1);
    REQUIRE(w.rendezvous == "/tmp/rdv");
  }
  {
    EnvVar const ws{"WORLD_SIZE", "2"};
    EnvVar const r{"RANK", "2"};
    REQUIRE_THROWS_WITH(resnet::World::from_environment(),
                        Catch::Contains("RANK=2 is not below WORLD_SIZE=2"));
  }
  {
    EnvVar const ws{"WORLD_SIZE", "two"};
    REQUIRE_THROWS_WITH(resnet::World::from_environment(),
                        Catch::Contains("WORLD_SIZE='two' is not a non-negative integer"));
  }
  {
    EnvVar const ws{"WORLD_SIZE", "2"};
    EnvVar const r{"RANK", nullptr};
    REQUIRE_THROWS_WITH(resnet::World::from_environment(), Catch::Contains("RANK is not set"));
  }
  {
    EnvVar const ws{"WORLD_SIZE", "2"};
    EnvVar const r{"RANK", "1"};
    EnvVar const none{"NSIGHTKIT_RENDEZVOUS", nullptr};
    REQUIRE_THROWS_WITH(resnet::World::from_environment(), Catch::Contains("NSIGHTKIT_RENDEZVOUS"));
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

namespace {
/// Runs `body(rank)` on `n` threads, each with its own communicator; collects the errors.
std::vector<std::string> run_ranks(int n, std::string const& dir, double timeout,
                                   std::function<void(int, resnet::Communicator&)> const& body,
                                   std::vector<int> const& absent = {}) {
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    if (std::find(absent.begin(), absent.end(), r) != absent.end()) continue;
    threads.emplace_back([&, r] {
      try {
        resnet::World w;
        w.rank = r;
        w.size = n;
        w.local_rank = r;
        w.rendezvous = dir;
        resnet::CommOptions o;
        o.timeout_s = timeout;
        auto comm = resnet::make_host_communicator(w, o);
        body(r, *comm);
      } catch (std::exception const& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}
}  // namespace

TEST_CASE("host communicator: 3 ranks average in place, call after call") {
  std::string const dir = fresh_dir("mean");
  std::vector<std::vector<float>> results(3);
  std::vector<std::string> described(3);  // Catch2 asserts only on the test's own thread
  auto const errors = run_ranks(3, dir, 20.0, [&](int r, resnet::Communicator& c) {
    described[static_cast<std::size_t>(r)] = c.describe();
    for (int call = 0; call < 5; ++call) {
      std::vector<float> v(1000 + static_cast<std::size_t>(call));
      for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<float>((r + 1) * static_cast<int>(i + 1) + call);
      }
      c.all_reduce_mean(v.data(), v.size(), "bucket" + std::to_string(call));
      if (call == 4) results[static_cast<std::size_t>(r)] = v;
    }
  });
  for (auto const& e : errors) REQUIRE(e.empty());
  REQUIRE_THAT(described[0], Catch::Contains("3 ranks"));
  for (auto const& v : results) {
    REQUIRE(v.size() == 1004);
    // Mean of (r + 1) * (i + 1) + 4 over r = 0, 1, 2 is 2 * (i + 1) + 4.
    for (std::size_t i = 0; i < v.size(); ++i) {
      REQUIRE(v[i] == Approx(2.0 * static_cast<double>(i + 1) + 4));
    }
    REQUIRE(v == results[0]);  // bit-identical on every rank
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("host communicator: a rank out of step is named, not summed") {
  std::string const dir = fresh_dir("step");
  auto const errors = run_ranks(2, dir, 10.0, [&](int r, resnet::Communicator& c) {
    std::vector<float> v(r == 0 ? 8 : 9, 1.0f);
    c.all_reduce_mean(v.data(), v.size(), "bucket0");
  });
  REQUIRE_THAT(errors[0], Catch::Contains("rank 1 is out of step") && Catch::Contains("9 floats"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("host communicator: a rank that goes away fails the others at once, naming it") {
  std::string const dir = fresh_dir("gone");
  auto const errors = run_ranks(3, dir, 30.0, [&](int r, resnet::Communicator& c) {
    std::vector<float> v(16, 1.0f);
    c.all_reduce_mean(v.data(), v.size(), "bucket0");
    if (r == 2) return;  // leaves: its communicator closes the connection
    c.all_reduce_mean(v.data(), v.size(), "bucket1");
  });
  REQUIRE(errors[2].empty());
  REQUIRE_THAT(errors[0], Catch::Contains("rank 2 closed its connection during allreduce bucket1"));
  // Rank 1 learns it from rank 0, which gave up: its message names rank 0.
  REQUIRE_THAT(errors[1], Catch::Contains("rank 0"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("host communicator: a rank that never comes is reported after the timeout") {
  std::string const dir = fresh_dir("absent");
  auto const errors = run_ranks(3, dir, 0.5, [](int, resnet::Communicator&) {}, {2});
  REQUIRE_THAT(errors[0], Catch::Contains("rank(s) 2 did not connect within"));
  std::filesystem::remove_all(dir);
  std::string const dir0 = fresh_dir("absent0");
  auto const errors0 = run_ranks(2, dir0, 0.5, [](int, resnet::Communicator&) {}, {0});
  REQUIRE_THAT(errors0[1], Catch::Contains("rank 0 did not publish its port"));
  std::filesystem::remove_all(dir0);
}
