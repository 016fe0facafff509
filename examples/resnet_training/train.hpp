// The training loop: one CaptureWindow step per iteration; inside it the top-level ranges
// "data", "h2d", "forward", "backward", "optimizer" and "sync" (the host waiting for the
// previous step's loss), with every layer's module range nested in forward and backward.
//
// --cuda-graph (CUDA): the run trains twice on the same backend, from the same weights and the
// same batches: eagerly, then with each step replayed from a CUDA graph (runtime.hpp,
// StepGraph). The graph run's first step is eager, its second recorded; forward, backward and
// optimizer are ranges inside the recording, so the report attributes every replayed kernel to
// the same path as in the eager run. The two runs' losses are compared bit for bit, and their
// step times and reports printed side by side.
#pragma once

#include "config.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace resnet {

struct StepRecord {
  double loss{0.0};
  double accuracy{0.0};
  std::string phase;  ///< the capture window's phase of the step ("wait", "active", …)
};

struct RunResult {
  std::vector<StepRecord> steps;
  std::vector<std::int64_t> captured_steps;  ///< steps the capture window captured
  int measured_steps{0};
  double seconds{0.0};  ///< wall time of the measured steps
  double images_per_second{0.0};
  std::string backend;   ///< Backend::describe()
  std::string pipeline;  ///< Runtime::describe()
  bool report_enabled{false};
  int world_size{1};        ///< ranks of a data-parallel run (images_per_second counts them all)
  double step_ms{0.0};      ///< mean wall time of a measured step
  double step_p50_ms{0.0};  ///< median wall time of a measured step

  // --cuda-graph: the fields above describe the CUDA graph run; these the eager run before it.
  bool cuda_graph{false};
  std::vector<StepRecord> eager_steps;
  double eager_images_per_second{0.0};
  double eager_step_ms{0.0};
  double eager_step_p50_ms{0.0};
  /// Every step's loss and accuracy equal bit for bit in the two runs.
  bool losses_identical{false};
  /// Largest |graph loss - eager loss| / |eager loss| over the steps (0 when identical).
  double loss_max_relative_difference{0.0};
  std::string graph;  ///< StepGraph::describe() after the graph run
};

/// Runs the configured training, printing progress, the summary and the report to `out`.
/// @throws whatever the backend, the loader or nsightkit throws (with messages naming the
///         failing call); std::runtime_error when the loss stops being finite; with
///         --cuda-graph, std::runtime_error when the recording fails, when several ranks run, or
///         when the two runs' losses differ where every kernel is deterministic (--no-tf32,
///         --layout nchw).
RunResult train(Config const& config, std::FILE* out);

/// The first step whose loss or accuracy differs between two runs (bitwise), as text naming
/// the step and both values; "" when they are identical. Different lengths are a difference.
std::string first_difference(std::vector<StepRecord> const& eager,
                             std::vector<StepRecord> const& graph);

/// Writes the metrics JSON (--metrics).
void write_metrics_json(std::string const& path, Config const& config, RunResult const& result);

}  // namespace resnet
