// Data-parallel training: one process per GPU (a "rank"), each on its slice of the global batch,
// gradients averaged over the ranks after every backward pass.
//
// - World: where this process sits. Ranks are started by an MPI launcher (mpirun / mpiexec of
//   Open MPI or MPICH, Slurm's srun); its variables say that this is one of several ranks, MPI
//   itself gives the rank, the size and the local rank (the GPU), and nsightkit::mpi merges the
//   ranks' reports on rank 0 and ends the whole job when one rank fails.
// - Communicator: the all-reduce. NCCL on a dedicated stream for the CUDA backend (its unique id
//   broadcast over MPI); MPI itself for the CPU backend (so the data-parallel path runs, and is
//   tested, on machines without GPUs). Every collective is an nsightkit range with its size as
//   payload.
// - GradientSync: buckets of gradients reduced as soon as the backward pass has written all of a
//   bucket's parameters (told by nn::GradientObserver), overlapping communication with the rest
//   of the backward pass, as PyTorch's DDP does.
//
// Faults: every wait on another rank is bounded (CommOptions::timeout_s, --dist-timeout); past
// it the rank ends the whole job (MPI_Abort) with one line naming the operation. A rank that dies
// is noticed by the MPI launcher, which stops the others.
#pragma once

#include "common/nn.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace resnet {

/// What the launcher's variables say about this process (no MPI involved): how many ranks it
/// started and which one this is.
struct LauncherInfo {
  int size{1};  ///< 1: not started as one of several ranks
  int rank{0};
  char const* launcher{""};  ///< "Open MPI", "MPICH (PMI)", "Slurm (srun)", "torchrun", or ""

  /// Reads, first found first: Open MPI's OMPI_COMM_WORLD_SIZE/_RANK, PMI_SIZE/PMI_RANK (MPICH's
  /// Hydra, Intel MPI), Slurm's SLURM_STEP_NUM_TASKS/SLURM_PROCID (srun), torchrun's
  /// WORLD_SIZE/RANK.
  /// @throws std::runtime_error naming a variable whose value is missing or wrong.
  static LauncherInfo from_environment();
};

struct CommOptions {
  double timeout_s{120.0};  ///< the longest wait on another rank (start-up, a collective)
};

/// This process's place in a data-parallel run.
struct World {
  int rank{0};
  int size{1};
  int local_rank{0};         ///< the GPU ordinal this rank uses (its place among its host's ranks)
  char const* launcher{""};  ///< what started the ranks (LauncherInfo::launcher)

  [[nodiscard]] bool distributed() const noexcept { return size > 1; }

  /// The world of this process. Started as one of several ranks (LauncherInfo), the first call
  /// initialises MPI, checks that MPI sees the ranks the launcher started, and turns on
  /// nsightkit::mpi (the report of every rank merged on rank 0; a rank that throws ends the
  /// job) with `options.timeout_s` as its longest wait; later calls return the same world.
  /// @throws std::runtime_error when the launcher and MPI disagree (ranks started by torchrun, or
  ///         a program built against another MPI than the launcher's), or this build has no MPI.
  static World from_environment(CommOptions const& options);
  /// The same, with default options (after the first call: the world it made).
  static World from_environment();
};

/// The MPI part of World::from_environment() for ranks the launcher started (comm_mpi.cpp; in
/// builds without MPI it throws, saying so).
World start_mpi_world(LauncherInfo const& launcher, CommOptions const& options);

/// MPI_Finalize when World::from_environment() initialised MPI (every rank's report written at
/// exit is merged there); nothing otherwise.
void finish_world() noexcept;

/// When this process is one of several ranks: prints `line` and ends the whole job (MPI_Abort),
/// so that no rank waits for this one in a collective. Otherwise returns (the caller exits).
void abort_other_ranks(std::string const& line, int code) noexcept;

/// What the communicators share: their error messages and their deadline.
class RankContext {
 public:
  RankContext(World const& w, CommOptions const& o) : world_{w}, options_{o} {}

  [[nodiscard]] World const& world() const noexcept { return world_; }
  [[nodiscard]] CommOptions const& options() const noexcept { return options_; }

  /// @throws std::runtime_error "rank R: <message>".
  [[noreturn]] void fail(std::string const& message) const;
  /// "120 s (--dist-timeout)".
  [[nodiscard]] std::string timeout_text() const;
  /// Seconds since `t0`, and whether they exceed the timeout.
  [[nodiscard]] static double seconds_since(std::chrono::steady_clock::time_point t0) noexcept;
  [[nodiscard]] bool timed_out(std::chrono::steady_clock::time_point t0) const noexcept {
    return seconds_since(t0) > options_.timeout_s;
  }

 private:
  World world_;
  CommOptions options_;
};

/// Communicator::check_same() over MPI (every communicator's, NCCL's too).
void check_same_on_ranks(RankContext const& ctx, std::uint64_t value, char const* what);

/// Rank 0's `bytes` at `data` copied to every rank (MPI_Ibcast, at most the timeout; past it the
/// job ends with a line naming `what`). For the NCCL id.
void broadcast_from_rank0(World const& world, CommOptions const& o, void* data, std::size_t bytes,
                          char const* what);

/// Averages gradients over the ranks. Every rank must make the same calls in the same order.
class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(Communicator const&) = delete;
  Communicator& operator=(Communicator const&) = delete;

  /// "NCCL 2.28.9, 2 ranks, dedicated stream" …
  [[nodiscard]] virtual std::string describe() const = 0;

  /// Checks that every rank has the same `value` (a model's gradient count) before the first
  /// reduction, so that ranks running different models fail with a message naming `what`
  /// instead of reducing unrelated buffers.
  /// @throws std::runtime_error naming the smallest and largest value among the ranks.
  virtual void check_same(std::uint64_t value, char const* what) = 0;

  /// Averages `count` floats at `data` (the backend's memory) over the ranks, in place. Ordered
  /// after the work already queued on the compute stream; the compute stream's later work does
  /// not wait for it until join(). `label` names the range ("bucket3", "metrics").
  virtual void all_reduce_mean(float* data, std::size_t count, std::string const& label) = 0;

  /// The compute stream's later work waits for every reduction queued so far.
  virtual void join() = 0;

  /// Called while the host waits for the device (every millisecond or so) with the seconds
  /// waited so far: throws when the group has failed or no progress came within the timeout,
  /// so a dead peer cannot block the wait forever.
  virtual void watchdog(double seconds_waited) = 0;
};

/// MPI on the host (MPI_Iallreduce of the sum, then / ranks): for the CPU backend. Only in builds
/// with MPI (NSIGHTKIT_EXAMPLES_MPI).
std::unique_ptr<Communicator> make_host_communicator(World const& world, CommOptions const& o);

/// NCCL on its own stream of `device`, ordered after `compute_stream` by events (only in builds
/// with NCCL and MPI: NSIGHTKIT_EXAMPLES_NCCL). Rank 0's NCCL id is broadcast over MPI.
/// @throws std::runtime_error when NCCL fails or a rank does not join within the timeout.
std::unique_ptr<Communicator> make_nccl_communicator(World const& world, CommOptions const& o,
                                                     void* compute_stream, int device);

/**
 * Reduces gradients in buckets while the backward pass runs.
 *
 * Buckets are contiguous runs of the parameter store's flat gradient buffers, about
 * `bucket_bytes` each, taken from the end of each buffer (the layers nearest the loss, whose
 * gradients are ready first). A bucket is reduced as soon as the backward pass has written all
 * of its parameters; end_backward() reduces what is left (in bucket order, the same on every
 * rank) and makes the compute stream wait for all of it.
 */
class GradientSync final : public nn::GradientObserver {
 public:
  /// @param overlap false: reduce every bucket only at end_backward() (for comparison).
  GradientSync(nn::ParameterStore& store, Communicator& comm, std::size_t bucket_bytes,
               bool overlap);
  ~GradientSync() override;
  GradientSync(GradientSync const&) = delete;
  GradientSync& operator=(GradientSync const&) = delete;

  /// Before the backward pass: installs this object as the gradient observer.
  void begin_backward();
  void ready(nn::Param& p) override;
  /// After the backward pass: reduces the buckets not reduced yet and joins.
  void end_backward();

  /// "5 buckets of about 1024 KiB (2.7 MiB of gradients), reduced during the backward pass".
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::size_t bucket_count() const noexcept { return buckets_.size(); }

 private:
  struct Bucket {
    float* data{nullptr};
    std::size_t count{0};
    std::size_t params{0};
    std::size_t pending{0};
    bool reduced{false};
    std::string label;  // "bucket3": made once, not every step
  };
  void reduce(std::size_t b);

  Communicator* comm_;
  bool overlap_;
  std::size_t bucket_bytes_;
  std::vector<Bucket> buckets_;
  struct Slot {
    std::size_t bucket;
    std::size_t param;  // index into seen_
  };
  std::unordered_map<nn::Param const*, Slot> bucket_of_;
  std::vector<bool> seen_;
  nn::GradientObserver* previous_{nullptr};
  bool active_{false};
};

}  // namespace resnet
