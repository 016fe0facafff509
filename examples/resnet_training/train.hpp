// The training loop: one CaptureWindow step per iteration; inside it the top-level ranges
// "data", "h2d", "forward", "backward", "optimizer" and "sync" (the host waiting for the
// previous step's loss), with every layer's module range nested in forward and backward.
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
  int world_size{1};  ///< ranks of a data-parallel run (images_per_second counts them all)
};

/// Runs the configured training, printing progress, the summary and the report to `out`.
/// @throws whatever the backend, the loader or nsightkit throws (with messages naming the
///         failing call); std::runtime_error when the loss stops being finite.
RunResult train(Config const& config, std::FILE* out);

/// Writes the metrics JSON (--metrics).
void write_metrics_json(std::string const& path, Config const& config, RunResult const& result);

}  // namespace resnet
