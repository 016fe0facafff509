// nsightkit: the command-line front of the report. `nsightkit profile -- PROGRAM ARGS` runs a
// program with the report as its NVTX tool; the other subcommands read saved reports.
#include "command.hpp"

#include <nsightkit/config.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#if defined(__linux__)
#include <unistd.h>
#include <climits>
#endif

namespace nsightkit_command {
namespace {

constexpr Subcommand subcommands[] = {
    {"profile", "run a program with the report as its NVTX tool", &run_profile},
    {"stats", "print a saved report's table, sorted or filtered", &run_stats},
    {"diff", "compare two saved reports path by path, flagging regressions", &run_diff},
    {"merge", "merge the per-rank reports of one run into one view", &run_merge},
    {"html", "make the HTML page of saved reports (one run, ranks, or two compared)", &run_html},
};

std::string self_path(char const* argv0) {
#if defined(__linux__)
  char buf[PATH_MAX];
  ssize_t const n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) return std::string{buf, static_cast<std::size_t>(n)};
#endif
  return argv0 != nullptr ? argv0 : "nsightkit";
}

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: nsightkit <command> [options] ...\n"
               "       nsightkit <command> --help\n\ncommands:\n");
  for (Subcommand const& s : subcommands) std::fprintf(to, "  %-9s %s\n", s.name, s.summary);
  std::fprintf(to, "\nnsightkit %s; docs: docs/profile.md\n", nsightkit::version_string);
}

}  // namespace
}  // namespace nsightkit_command

int main(int argc, char** argv) {
  using namespace nsightkit_command;
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string const name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  if (name == "--version") {
    std::printf("nsightkit %s\n", nsightkit::version_string);
    return 0;
  }
  for (Subcommand const& s : subcommands) {
    if (name == s.name) {
      Invocation call;
      call.args.assign(argv + 2, argv + argc);
      call.self = self_path(argv[0]);
      return s.run(call);
    }
  }
  std::fprintf(stderr, "nsightkit: unknown command '%s'\n", name.c_str());
  usage(stderr);
  return 2;
}
