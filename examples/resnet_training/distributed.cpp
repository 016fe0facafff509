#include "distributed.hpp"

#include <nsightkit/range.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

namespace resnet {
namespace {

/// The integer value of `name`, or `fallback` when unset; throws naming the variable otherwise.
int env_int(char const* name, int fallback) {
  char const* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  long const x = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || x < 0 || x > 1 << 20) {
    throw std::runtime_error(std::string{"environment: "} + name + "='" + v +
                             "' is not a non-negative integer");
  }
  return static_cast<int>(x);
}

}  // namespace

World World::from_environment() {
  World w;
  w.size = std::max(1, env_int("WORLD_SIZE", 1));
  if (!w.distributed()) return w;
  w.rank = env_int("RANK", -1);
  if (w.rank < 0) {
    throw std::runtime_error("environment: WORLD_SIZE=" + std::to_string(w.size) +
                             " but RANK is not set (start the ranks with "
                             "tools/nsightkit_launch.py, or set RANK yourself)");
  }
  if (w.rank >= w.size) {
    throw std::runtime_error("environment: RANK=" + std::to_string(w.rank) +
                             " is not below WORLD_SIZE=" + std::to_string(w.size));
  }
  w.local_rank = env_int("LOCAL_RANK", w.rank);
  char const* dir = std::getenv("NSIGHTKIT_RENDEZVOUS");
  if (dir == nullptr || *dir == '\0') {
    throw std::runtime_error("environment: WORLD_SIZE=" + std::to_string(w.size) +
                             " but NSIGHTKIT_RENDEZVOUS (a directory all ranks share) is not set");
  }
  w.rendezvous = dir;
  return w;
}

void RankContext::fail(std::string const& message) const {
  throw std::runtime_error("rank " + std::to_string(world_.rank) + ": " + message);
}

std::string RankContext::timeout_text() const {
  return std::to_string(static_cast<long long>(options_.timeout_s)) + " s (--dist-timeout)";
}

double RankContext::seconds_since(std::chrono::steady_clock::time_point t0) noexcept {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void RankContext::publish(char const* name, void const* data, std::size_t bytes) const {
  std::string const path = world_.rendezvous + "/" + name;
  std::string const tmp = path + ".tmp";
  std::ofstream f{tmp, std::ios::binary};
  f.write(static_cast<char const*>(data), static_cast<std::streamsize>(bytes));
  f.close();
  if (!f || std::rename(tmp.c_str(), path.c_str()) != 0) {
    fail("cannot write " + path + " (NSIGHTKIT_RENDEZVOUS must be a writable directory)");
  }
}

void RankContext::wait_for(char const* name, void* data, std::size_t bytes,
                           char const* what) const {
  std::string const path = world_.rendezvous + "/" + name;
  auto const t0 = std::chrono::steady_clock::now();
  for (;;) {
    std::ifstream f{path, std::ios::binary};
    if (f.read(static_cast<char*>(data), static_cast<std::streamsize>(bytes))) return;
    if (timed_out(t0)) {
      fail(std::string{"rank 0 did not publish "} + what + " in " + path + " within " +
           timeout_text() + " (did rank 0 start?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

GradientSync::GradientSync(nn::ParameterStore& store, Communicator& comm, std::size_t bucket_bytes,
                           bool overlap)
    : comm_{&comm}, overlap_{overlap}, bucket_bytes_{std::max<std::size_t>(bucket_bytes, 4)} {
  // Parameters of each flat buffer from its end backwards: the layers near the loss come last
  // in declaration order and finish their backward first.
  for (auto const& range : store.ranges()) {
    auto* const base = static_cast<float*>(range.grad.raw());
    std::vector<nn::Param*> in_range;
    for (auto& p : store.params()) {
      auto* const g = static_cast<float*>(p.grad.raw());
      if (g >= base && g < base + range.grad.numel()) in_range.push_back(&p);
    }
    std::sort(in_range.begin(), in_range.end(), [](nn::Param const* a, nn::Param const* b) {
      return std::greater<float const*>{}(static_cast<float const*>(a->grad.raw()),
                                          static_cast<float const*>(b->grad.raw()));
    });
    Bucket open;
    for (nn::Param* p : in_range) {
      // Adjacent parameters are contiguous: the bucket grows downwards to this one.
      open.data = static_cast<float*>(p->grad.raw());
      open.count += p->grad.numel();
      ++open.params;
      Slot const slot{buckets_.size(), bucket_of_.size()};
      bucket_of_.emplace(p, slot);
      if (open.count * sizeof(float) >= bucket_bytes_) {
        buckets_.push_back(open);
        open = Bucket{};
      }
    }
    if (open.params > 0) buckets_.push_back(open);
  }
  for (std::size_t b = 0; b < buckets_.size(); ++b)
    buckets_[b].label = "bucket" + std::to_string(b);
}

GradientSync::~GradientSync() {
  if (active_) nn::set_gradient_observer(previous_);
}

void GradientSync::begin_backward() {
  for (auto& b : buckets_) {
    b.pending = b.params;
    b.reduced = false;
  }
  seen_.assign(bucket_of_.size(), false);
  previous_ = nn::set_gradient_observer(this);
  active_ = true;
}

void GradientSync::ready(nn::Param& p) {
  auto const it = bucket_of_.find(&p);
  if (it == bucket_of_.end()) return;  // not a parameter of this store
  if (!active_) return;                // outside begin_backward() … end_backward()
  if (seen_[it->second.param]) {
    // Its bucket may already be on the wire: a second gradient would be lost or raced.
    throw std::logic_error("gradient sync: " + p.name +
                           " reported twice in one backward pass (is a layer used twice?)");
  }
  seen_[it->second.param] = true;
  if (--buckets_[it->second.bucket].pending == 0 && overlap_) reduce(it->second.bucket);
}

void GradientSync::end_backward() {
  nn::set_gradient_observer(previous_);
  active_ = false;
  // Named as a collective: the merge of per-rank reports counts it as waiting for other ranks
  // (on the GPU the compute stream waits here for the NCCL stream), not as this rank's work.
  nsightkit::ScopedRange const range{"allreduce wait"};
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (!buckets_[b].reduced) reduce(b);
  }
  comm_->join();
}

void GradientSync::reduce(std::size_t b) {
  buckets_[b].reduced = true;
  comm_->all_reduce_mean(buckets_[b].data, buckets_[b].count, buckets_[b].label);
}

std::string GradientSync::describe() const {
  std::size_t floats = 0;
  for (auto const& b : buckets_) floats += b.count;
  return std::to_string(buckets_.size()) + " bucket" + (buckets_.size() == 1 ? "" : "s") +
         " of about " + std::to_string(bucket_bytes_ / 1024) + " KiB (" +
         std::to_string(floats * sizeof(float) / 1024) + " KiB of gradients), reduced " +
         (overlap_ ? "during the backward pass" : "after the backward pass");
}

}  // namespace resnet
