#include "distributed.hpp"

#include <nsightkit/range.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

namespace resnet {
namespace {

/// The integer value of `name` (nullopt when unset); throws naming the variable when it is not
/// one.
std::optional<int> env_int(char const* name) {
  char const* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long const x = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || x < 0 || x > 1 << 20) {
    throw std::runtime_error(std::string{"environment: "} + name + "='" + v +
                             "' is not a non-negative integer");
  }
  return static_cast<int>(x);
}

/// The world made by the first World::from_environment() call.
std::optional<World>& the_world() {
  static std::optional<World> w;
  return w;
}

}  // namespace

LauncherInfo LauncherInfo::from_environment() {
  struct Source {
    char const* size;
    char const* rank;
    char const* name;
  };
  // The MPI launchers first: torchrun's generic names may be left over in an environment.
  static constexpr Source sources[] = {{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "Open MPI"},
                                       {"PMI_SIZE", "PMI_RANK", "MPICH (PMI)"},
                                       {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "Slurm (srun)"},
                                       {"WORLD_SIZE", "RANK", "torchrun"}};
  for (Source const& src : sources) {
    std::optional<int> const size = env_int(src.size);
    if (!size) continue;
    LauncherInfo info;
    info.launcher = src.name;
    info.size = std::max(1, *size);
    if (info.size == 1) return info;
    std::optional<int> const rank = env_int(src.rank);
    if (!rank) {
      throw std::runtime_error(std::string{"environment: "} + src.size + "=" +
                               std::to_string(info.size) + " but " + src.rank + " is not set");
    }
    if (*rank >= info.size) {
      throw std::runtime_error(std::string{"environment: "} + src.rank + "=" +
                               std::to_string(*rank) + " is not below " + src.size + "=" +
                               std::to_string(info.size));
    }
    info.rank = *rank;
    return info;
  }
  return LauncherInfo{};
}

World World::from_environment(CommOptions const& options) {
  std::optional<World>& w = the_world();
  if (w) return *w;
  LauncherInfo const launcher = LauncherInfo::from_environment();
  w = launcher.size > 1 ? start_mpi_world(launcher, options) : World{};
  return *w;
}

World World::from_environment() { return from_environment(CommOptions{}); }

#if !NSIGHTKIT_EXAMPLES_MPI
World start_mpi_world(LauncherInfo const& launcher, CommOptions const&) {
  throw std::runtime_error(std::string{"started as rank "} + std::to_string(launcher.rank) +
                           " of " + std::to_string(launcher.size) + " (" + launcher.launcher +
                           "), but this build of resnet_training has no MPI: data-parallel "
                           "training needs it (Debian: apt-get install libopenmpi-dev "
                           "openmpi-bin, then configure again)");
}
void finish_world() noexcept {}
void abort_other_ranks(std::string const&, int) noexcept {}
void check_same_on_ranks(RankContext const&, std::uint64_t, char const*) {}
void broadcast_from_rank0(World const&, CommOptions const&, void*, std::size_t, char const*) {}
std::unique_ptr<Communicator> make_host_communicator(World const&, CommOptions const&) {
  throw std::runtime_error("this build of resnet_training has no MPI");
}
#endif

void RankContext::fail(std::string const& message) const {
  throw std::runtime_error("rank " + std::to_string(world_.rank) + ": " + message);
}

std::string RankContext::timeout_text() const {
  return std::to_string(static_cast<long long>(options_.timeout_s)) + " s (--dist-timeout)";
}

double RankContext::seconds_since(std::chrono::steady_clock::time_point t0) noexcept {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
  std::uint64_t floats = 0;
  for (auto const& b : buckets_) floats += b.count;
  comm.check_same(floats, "gradient floats (is every rank running the same model and flags?)");
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
