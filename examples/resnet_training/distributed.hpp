// Data-parallel training: one process per GPU (a "rank"), each on its slice of the global batch,
// gradients averaged over the ranks after every backward pass.
//
// - World: where this process sits, from the launcher's variables (tools/nsightkit_launch.py
//   sets RANK, WORLD_SIZE, LOCAL_RANK and NSIGHTKIT_RENDEZVOUS, a directory the ranks share).
// - Communicator: the all-reduce. NCCL on a dedicated stream for the CUDA backend; a loopback
//   TCP transport for the CPU backend (so the data-parallel path runs, and is tested, on
//   machines without GPUs). Every collective is an nsightkit range with its size as payload.
// - GradientSync: buckets of gradients reduced as soon as the backward pass has written all of a
//   bucket's parameters (told by nn::GradientObserver), overlapping communication with the rest
//   of the backward pass, as PyTorch's DDP does.
//
// Faults: every wait on another rank is bounded (CommOptions::timeout_s); a rank that dies or
// never starts makes the others fail with a message naming it and the operation, not hang.
#pragma once

#include "common/nn.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace resnet {

/// This process's place in a data-parallel run.
struct World {
  int rank{0};
  int size{1};
  int local_rank{0};       ///< the GPU ordinal this rank uses
  std::string rendezvous;  ///< a directory shared by the ranks (bootstrap files)

  [[nodiscard]] bool distributed() const noexcept { return size > 1; }

  /// Reads WORLD_SIZE, RANK, LOCAL_RANK (default: RANK) and NSIGHTKIT_RENDEZVOUS. No
  /// WORLD_SIZE (or 1) means a single process.
  /// @throws std::runtime_error naming the variable whose value is missing or wrong.
  static World from_environment();
};

struct CommOptions {
  double timeout_s{120.0};  ///< the longest wait on another rank (start-up, a collective)
};

/// What the communicators share: their error messages, their deadline and the bootstrap files
/// in the rendezvous directory.
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

  /// Rank 0 writes `bytes` to the rendezvous file `name` under a temporary name and renames it,
  /// so a reader never sees half a file.
  void publish(char const* name, void const* data, std::size_t bytes) const;
  /// Reads the file `name` that rank 0 publishes, polling for it at most the timeout; `what`
  /// names it in the error ("its port", "the NCCL id").
  void wait_for(char const* name, void* data, std::size_t bytes, char const* what) const;

 private:
  World world_;
  CommOptions options_;
};

/// Averages gradients over the ranks. Every rank must make the same calls in the same order.
class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(Communicator const&) = delete;
  Communicator& operator=(Communicator const&) = delete;

  /// "NCCL 2.28.9, 2 ranks, dedicated stream" …
  [[nodiscard]] virtual std::string describe() const = 0;

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

/// Loopback TCP through rank 0 (which sums in rank order): for the CPU backend.
/// @throws std::runtime_error when a rank cannot be reached within the timeout.
std::unique_ptr<Communicator> make_host_communicator(World const& world, CommOptions const& o);

/// NCCL on its own stream of `device`, ordered after `compute_stream` by events (only in builds
/// with NCCL: NSIGHTKIT_EXAMPLES_NCCL). The NCCL id travels through the rendezvous directory.
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
