// The nsightkit command's subcommands: each lives in its own file and is listed in main.cpp.
#pragma once

#include <string>
#include <vector>

namespace nsightkit_command {

/// What every subcommand receives: its arguments (after the subcommand's name) and the path of the
/// nsightkit executable, as /proc/self/exe names it (the NVTX tool library is found beside it).
struct Invocation {
  std::vector<std::string> args;
  std::string self;
};

/// A subcommand: its name, a one-line summary for `nsightkit --help`, and its entry point, which
/// returns the process's exit status (2 for bad usage, with a message on stderr).
struct Subcommand {
  char const* name;
  char const* summary;
  int (*run)(Invocation const& call);
};

int run_profile(Invocation const& call);
int run_stats(Invocation const& call);
int run_diff(Invocation const& call);
int run_merge(Invocation const& call);
int run_html(Invocation const& call);

}  // namespace nsightkit_command
