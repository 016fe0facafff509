// What differs between running the training loop on the CPU and on a GPU, besides the kernels:
// where host batches live, how they reach the device, how the step's metrics come back and how
// far the host may run ahead. The loop (train.cpp) is the same for both.
#pragma once

#include "common/backend.hpp"
#include "data.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace resnet {

/// A batch in the backend's memory, ready for the model.
struct DeviceBatch {
  nn::Tensor images;  ///< [n, channels, size, size] in the model's layout
  nn::Tensor labels;  ///< [n, 1, 1, 1] i32
};

/// Loss and correct predictions of one step.
using StepMetrics = std::array<double, 2>;

/// A training step's device work on tensors that are the same every step: the forward (writing
/// the mean loss and the number of correct predictions into `metrics`, 2 floats), the backward
/// and the optimizer update. What a StepGraph runs eagerly, records and replays.
using StepBody =
    std::function<void(nn::Tensor const& images, nn::Tensor const& labels, nn::Tensor& metrics)>;

/**
 * A training step replayed from a CUDA graph (--cuda-graph). It owns static tensors of the
 * batch's shape: the images, the labels and the step's metrics. Each run() first copies the
 * step's batch into the static inputs, on the compute stream (device to device, in a range
 * "graph inputs"); the graph always reads the same addresses, wherever the batch came from (a
 * prefetcher slot, the runtime's own input buffer).
 */
class StepGraph {
 public:
  virtual ~StepGraph() = default;
  StepGraph() = default;
  StepGraph(StepGraph const&) = delete;
  StepGraph& operator=(StepGraph const&) = delete;

  /// Copies `batch` into the static inputs, then runs the step on them: the first call runs
  /// the body eagerly (it sizes every buffer, loads the kernels and chooses the convolution
  /// algorithms, none of which may happen during a recording), the second records the body
  /// (nsightkit::GraphRecorder) and launches the graph, every later call launches it again.
  /// Returns the static metrics (2 floats), overwritten by the next run's work on the stream.
  /// @throws std::runtime_error when the recording fails: the message names each call that was
  ///         unsafe during recording and the module that made it (with the nsightkit::cupti
  ///         component), else CUDA's error; std::invalid_argument for a batch of another shape;
  ///         nsightkit::CudaError when a copy or a launch fails.
  virtual nn::Tensor const& run(DeviceBatch const& batch) = 0;

  /// Launches of the recorded graph so far.
  [[nodiscard]] virtual std::uint64_t replays() const noexcept = 0;

  /// One line: the graph's name, the step that recorded it, its replays.
  [[nodiscard]] virtual std::string describe() const = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  Runtime() = default;
  Runtime(Runtime const&) = delete;
  Runtime& operator=(Runtime const&) = delete;

  [[nodiscard]] virtual nn::Backend& backend() noexcept = 0;
  /// Where the loader's workers put batches.
  [[nodiscard]] virtual HostAllocator& host_allocator() noexcept = 0;
  /// One line: host memory, transfer path.
  [[nodiscard]] virtual std::string describe() const = 0;

  /// Installs the source of host batches (the loader's instrumented fetch), before the first
  /// next_batch(). Installing another source after finish() starts over: a second training run
  /// on the same backend (--cuda-graph runs eagerly, then from graphs).
  virtual void set_source(std::function<HostBatch()> fetch) = 0;

  /// The batch of the current step on the device. Emits the step's top-level input ranges:
  /// "data" (the source: waiting for, or making, the host batch) and "h2d" (queuing the copy,
  /// or waiting for the prefetched one).
  virtual DeviceBatch next_batch() = 0;

  /// After the step's optimizer update was queued: fetches `metrics` (2 values) of step `step`
  /// without waiting for the device.
  virtual void end_step(std::int64_t step, nn::Tensor const& metrics) = 0;

  /// The metrics of step `step` (ended before), waiting for the device if needed.
  virtual StepMetrics wait_step(std::int64_t step) = 0;

  /// Runs `body` (one step) with the device's compute stream current for the report's GPU
  /// timing (nsightkit::CurrentStream); the CPU runtime just calls it.
  virtual void in_step(std::function<void()> const& body) { body(); }

  /// Waits until all queued device work has finished.
  virtual void finish() = 0;

  /// Installs a function called while the host waits for the device (about every millisecond,
  /// with the seconds waited so far); it may throw to give up. Data-parallel training installs
  /// its communicator's watchdog, so a dead peer rank cannot block a wait forever. The CPU
  /// runtime never waits for a device and ignores it.
  virtual void set_watchdog(std::function<void(double)> watchdog) { (void)watchdog; }

  /// A StepGraph named `name` running `body` on the compute stream, its static inputs of the
  /// configured batch. From now on the backend keeps released device memory
  /// (Backend::retain_freed_memory): a recorded graph keeps using every buffer it saw.
  /// @throws std::runtime_error on the CPU runtime (CUDA graphs replay GPU work).
  virtual std::unique_ptr<StepGraph> make_step_graph(StepBody body, std::string const& name) {
    (void)body;
    throw std::runtime_error("CUDA graph '" + name + "': CUDA graphs need the CUDA runtime");
  }
};

struct RuntimeOptions {
  int batch{32};
  int channels{3};
  int image_size{32};
  nn::Layout layout{nn::Layout::nchw};
  bool pinned{false};          ///< CUDA: workers fill page-locked memory from a PinnedMemoryPool
  bool prefetch{false};        ///< CUDA: StreamPrefetcher copies on a copy stream, one batch ahead
  bool tf32{true};             ///< CUDA: TF32 tensor-core math
  bool cudnn_benchmark{true};  ///< CUDA: time cuDNN's convolution algorithms (cudnnFind)
  int device{0};               ///< CUDA device ordinal
  std::string name_prefix;     ///< put before stream names ("rank 1 "), for data-parallel runs
};

/// The CPU runtime: pageable host memory, the "h2d" step is a memcpy into the model's input.
std::unique_ptr<Runtime> make_cpu_runtime(RuntimeOptions const& options);

/// The CUDA runtime (only in builds with NSIGHTKIT_EXAMPLES_CUDA).
/// @throws std::runtime_error when no CUDA device is usable (the message says why).
std::unique_ptr<Runtime> make_cuda_runtime(RuntimeOptions const& options);

}  // namespace resnet
