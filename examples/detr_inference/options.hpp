// Command-line options of detr_inference (parsed with the examples' nn::ArgParser). Separate from
// main() so the tests can check the defaults and every error message.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace detr {

/// The options. Values of 0 (and "auto") mean "the default of the device that runs" (resolve()).
struct Options {
  std::string device{"auto"};  ///< cpu | cuda | auto
  int batch{0};                ///< default 8 on cuda, 2 on cpu
  int image_size{0};           ///< default 640 on cuda, 128 on cpu; a multiple of 32
  int enc_layers{6};
  int dec_layers{6};
  int queries{100};
  std::string precision{"fp32"};  ///< fp32 | tf32 | fp16 | bf16 (the last two are rejected)
  int iterations{0};              ///< captured iterations; default 20 on cuda, 3 on cpu
  int warmup{-1};                 ///< warm-up iterations; default 10 on cuda, 1 on cpu
  std::string model{"auto"};      ///< tiny | base | auto (base on cuda, tiny on cpu)
  int topk{10};
  /// NSIGHTKIT_REPORT grammar, or "off": by default the table and the HTML page beside it.
  std::string report{"table=stdout,html=detr_inference_report.html"};
  bool quiet{false};
  /// Run eagerly, then as CUDA graphs recorded once per input shape (cuda only).
  bool cuda_graph{false};
};

/// Parses argv. Returns std::nullopt when --help was given (the help went to stdout).
/// @throws nn::UsageError naming the option and the problem.
std::optional<Options> parse_options(int argc, char const* const* argv);

/// Fills the defaults of the device that runs (`gpu`: the CUDA backend) and checks the
/// combination: --precision fp16/bf16 are rejected with the reason, tf32 and --cuda-graph need
/// the GPU.
/// @throws nn::UsageError.
void resolve(Options& o, bool gpu);

}  // namespace detr
