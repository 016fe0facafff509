// resnet_training: a small ResNet trained on synthetic images, instrumented with nsightkit.
// See README.md in this directory; `resnet_training --help` lists the flags.
#include "common/cuda_backend.hpp"
#include "config.hpp"
#include "train.hpp"

#include <nsightkit/report.hpp>

#include <cstdio>
#include <exception>
#include <new>

int main(int argc, char** argv) {
  resnet::ParseResult parsed = resnet::parse_config(argc, argv, &nn::cuda_available);
  if (!parsed.run) {
    std::fputs(parsed.error.c_str(), stderr);
    return parsed.exit_code;
  }
  try {
    resnet::RunResult const result = resnet::train(parsed.config, stdout);
    if (!parsed.config.metrics_path.empty()) {
      // One file per rank in data-parallel runs, named as the report's ("m.rank1.json").
      resnet::write_metrics_json(nsightkit::Report::output_path(parsed.config.metrics_path),
                                 parsed.config, result);
    }
  } catch (std::bad_alloc const&) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "resnet_training: error: out of memory (std::bad_alloc): host, page-locked or "
                 "staging memory could not be allocated\n");
    return 1;
  } catch (std::exception const& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "resnet_training: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
