// Command-line configuration of resnet_training: parsing with clear errors, and the defaults that
// depend on the device (a small, quick run on the CPU; a GPU-sized run on CUDA).
#pragma once

#include "common/tensor.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace resnet {

struct Config {
  // Device and what was decided about it.
  std::string device_flag{"auto"};  ///< as given: auto, cpu, cuda
  nn::Device device{nn::Device::cpu};
  std::string device_note;  ///< why auto chose the CPU, or ""

  // Training.
  int steps{0};
  int warmup{0};
  int batch{0};
  double lr{0.05};
  double momentum{0.9};
  double weight_decay{5e-4};
  std::uint64_t rng_start{1};

  // Model and data.
  int image_size{0};
  int width{0};
  int stages{3};
  int blocks{0};
  int classes{10};
  nn::Layout layout{nn::Layout::nchw};
  bool tf32{true};
  bool cudnn_benchmark{true};
  /// CUDA: train eagerly, then again with each step replayed from a CUDA graph (train.hpp).
  bool cuda_graph{false};

  // Input pipeline.
  int workers{0};
  int decode_us{0};
  bool pinned{false};
  bool prefetch{false};

  // Data-parallel (several ranks; see distributed.hpp). --batch is per rank.
  int bn_groups{1};     ///< batch-norm statistics per slice of the batch (nn::BatchNorm2d)
  int bucket_kb{1024};  ///< gradient bucket size
  bool overlap{true};   ///< reduce buckets during the backward pass
  double dist_timeout{120.0};
  int slow_rank{-1};  ///< this rank sleeps slow_ms per step (a straggler, for the report)
  int slow_ms{0};
  int die_rank{-1};  ///< this rank exits abruptly at die_step (fault-handling demo)
  int die_step{-1};

  // Output.
  std::string report{"table=stdout"};  ///< NSIGHTKIT_REPORT grammar; "off" for none
  bool report_given{false};
  bool reset_report_after_warmup{true};
  std::string metrics_path;
  int log_every{0};
  std::vector<std::string> notes;  ///< things the user should know (ignored flags)
};

/// Outcome of parsing: run with `config`, or exit with `exit_code` (0 after --help; 2 for a bad
/// command line, with `error` saying why).
struct ParseResult {
  bool run{false};
  int exit_code{0};
  std::string error;  ///< "resnet_training: error: --batch: 'x' is not an integer\n(see ...)"
  Config config;
};

/**
 * Parses argv and resolves the device (auto: CUDA when this build has it and a device is usable)
 * and every default that depends on it. Bad arguments give exit code 2 and an error
 * "resnet_training: error: <flag>: <problem>" plus a hint (the caller prints it).
 * `cuda_probe` decides whether a CUDA device is usable (tests pass a fake).
 */
ParseResult parse_config(int argc, char const* const* argv, bool (*cuda_probe)(std::string* why));

/// The --help text.
std::string help_text();

struct ModelSpec;  // model.hpp

/// The network the configuration describes (classes, width, stages, blocks, layout, batch-norm
/// groups); include model.hpp to use it.
ModelSpec model_spec(Config const& config);

}  // namespace resnet
