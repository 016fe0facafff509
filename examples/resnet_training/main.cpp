// resnet_training: a small ResNet trained on synthetic images, instrumented with nsightkit.
// See README.md in this directory; `resnet_training --help` lists the flags.
#include "common/cuda_backend.hpp"
#include "config.hpp"
#include "distributed.hpp"
#include "train.hpp"

#include <nsightkit/report.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

namespace {

/// Prints `line` on stderr and returns 1; when this is one of several ranks, ends the whole job
/// instead (the others would wait for this rank in their next collective).
int fail(std::string const& line) {
  std::fflush(stdout);
  resnet::abort_other_ranks(line, 1);
  std::fprintf(stderr, "%s\n", line.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  resnet::ParseResult parsed = resnet::parse_config(argc, argv, &nn::cuda_available);
  if (!parsed.run) {
    std::fputs(parsed.error.c_str(), stderr);
    return parsed.exit_code;
  }
  resnet::Config& cfg = parsed.config;
  try {
    resnet::CommOptions co;
    co.timeout_s = cfg.dist_timeout;
    // Started by an MPI launcher as one of several ranks: MPI starts here.
    resnet::World const world = resnet::World::from_environment(co);
    if (world.distributed() && !cfg.report_given &&
        std::getenv(nsightkit::Report::environment_variable) == nullptr) {
      // Every rank records (the default report of one process is rank 0's alone) and takes part
      // in Report::write(), where rank 0 prints the merged table; each rank writes its own page.
      cfg.report = "table=stdout,html=resnet_training_report.html";
      cfg.report_given = true;
    }
    resnet::RunResult const result = resnet::train(cfg, stdout);
    if (!cfg.metrics_path.empty()) {
      // One file per rank in data-parallel runs, named as the report's ("m.rank1.json").
      resnet::write_metrics_json(nsightkit::Report::output_path(cfg.metrics_path), cfg, result);
    }
  } catch (std::bad_alloc const&) {
    return fail(
        "resnet_training: error: out of memory (std::bad_alloc): host, page-locked or staging "
        "memory could not be allocated");
  } catch (std::exception const& e) {
    return fail(std::string{"resnet_training: error: "} + e.what());
  }
  resnet::finish_world();  // MPI_Finalize: a report written at exit is merged here
  return 0;
}
