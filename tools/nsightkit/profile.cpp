// `nsightkit profile`: runs an unmodified program with the report injected as its NVTX tool.
//
// The command checks the options, names the tool library in NVTX_INJECTION64_PATH (NVTX loads it
// into every module of the program that carries NVTX), passes the report's and the capture
// window's specifications on in NSIGHTKIT_REPORT and NSIGHTKIT_CAPTURE, and then becomes the
// program (exec): signals, the exit status and launchers (mpirun, srun) see the program itself,
// and the outputs are written by the report inside it when it ends.
#include "command.hpp"

#include <nsightkit/capture_types.hpp>
#include <nsightkit/report.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>

#ifndef NSIGHTKIT_COMMAND_TOOL_DIR
#define NSIGHTKIT_COMMAND_TOOL_DIR "../lib/nsightkit"
#endif

namespace nsightkit_command {
namespace {

constexpr char const profile_usage[] =
    "usage: nsightkit profile [--report SPEC] [--capture SPEC] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with nsightkit's report as its NVTX tool: every NVTX range of the program\n"
    "(nsightkit's, nvtx3's, the C API's, CUB's, PyTorch's...) becomes a row of the report, with\n"
    "the GPU work it launched (CUPTI) where a GPU is present. The outputs are written when the\n"
    "program ends; the exit status is the program's.\n"
    "\n"
    "  --report SPEC   what to write, in NSIGHTKIT_REPORT's grammar (default: the table on\n"
    "                  stderr), e.g. --report table,json=run.json,html=run.html,domains=all\n"
    "  --capture SPEC  a capture window schedule for the program's CaptureWindow, in\n"
    "                  NSIGHTKIT_CAPTURE's grammar, e.g. --capture wait=10,warmup=2,active=5\n"
    "  -h, --help      this text\n"
    "\n"
    "docs/profile.md has examples for C++, CUDA and Python programs.\n";

struct ProfileArgs {
  std::string report;
  std::optional<std::string> capture;
  std::vector<std::string> program;
};

int usage_error(std::string const& what) {
  std::fprintf(stderr, "nsightkit profile: %s\n%s", what.c_str(), profile_usage);
  return 2;
}

/// The value of option `name` at args[i] ("--name VALUE" or "--name=VALUE"), advancing i.
std::optional<std::string> option_value(std::vector<std::string> const& args, std::size_t& i,
                                        std::string const& name) {
  std::string const& a = args[i];
  if (a == name) {
    if (i + 1 >= args.size()) return std::nullopt;
    return args[++i];
  }
  return a.substr(name.size() + 1);
}

bool is_option(std::string const& a, std::string const& name) {
  return a == name || a.compare(0, name.size() + 1, name + "=") == 0;
}

/// The directory of `path` ("." without one).
std::string directory_of(std::string const& path) {
  std::size_t const slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string{"."} : path.substr(0, slash);
}

bool loads(std::string const& path) {
  void* h = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) return false;
  ::dlclose(h);
  return true;
}

/// The tool library to inject: the CUPTI one where it loads (CUPTI present), else the one without
/// a GPU source; found beside the command (build tree) or in its install directory.
std::string find_tool(std::string const& self, std::string& tried) {
  std::string const here = directory_of(self);
  std::string const dirs[] = {here, here + "/" + NSIGHTKIT_COMMAND_TOOL_DIR};
  for (char const* name : {"libnsightkit-nvtx-cupti.so", "libnsightkit-nvtx.so"}) {
    for (std::string const& dir : dirs) {
      std::string const path = dir + "/" + name;
      if (::access(path.c_str(), R_OK) != 0) continue;
      if (loads(path)) return path;
      tried += "\n  " + path + ": " + ::dlerror();
    }
  }
  return {};
}

}  // namespace

int run_profile(Invocation const& call) {
  ProfileArgs p;
  std::vector<std::string> const& args = call.args;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string const& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      std::fputs(profile_usage, stdout);
      return 0;
    }
    if (is_option(a, "--report")) {
      auto v = option_value(args, i, "--report");
      if (!v) return usage_error("--report needs a value");
      p.report = *v;
    } else if (is_option(a, "--capture")) {
      auto v = option_value(args, i, "--capture");
      if (!v) return usage_error("--capture needs a value");
      p.capture = *v;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option '" + a + "'");
    } else {
      break;  // the program
    }
  }
  p.program.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (p.program.empty()) return usage_error("no program to run");

  if (p.report.empty()) {
    char const* env = std::getenv("NSIGHTKIT_REPORT");
    p.report = env != nullptr && *env != '\0' ? env : "table";
  }
  std::string why;
  if (!nsightkit::ReportOptions::try_parse(p.report, &why)) {
    if (why.empty()) why = "it turns the report off";
    return usage_error("--report '" + p.report + "': " + why);
  }
  if (p.capture && !nsightkit::CaptureSchedule::parse(*p.capture, &why)) {
    return usage_error("--capture '" + *p.capture + "': " + why);
  }

  char const* other = std::getenv("NVTX_INJECTION64_PATH");
  std::string tried;
  std::string const tool = find_tool(call.self, tried);
  if (tool.empty()) {
    std::fprintf(stderr,
                 "nsightkit profile: the NVTX tool library (libnsightkit-nvtx.so) is not beside "
                 "%s nor in %s/%s%s\n",
                 call.self.c_str(), directory_of(call.self).c_str(), NSIGHTKIT_COMMAND_TOOL_DIR,
                 tried.c_str());
    return 2;
  }
  if (other != nullptr && *other != '\0' && std::strstr(other, "libnsightkit-nvtx") == nullptr) {
    std::fprintf(stderr,
                 "nsightkit profile: another NVTX tool is attached (NVTX_INJECTION64_PATH=%s); "
                 "the program runs under it, and the report hears only nsightkit's own ranges\n",
                 other);
  } else {
    ::setenv("NVTX_INJECTION64_PATH", tool.c_str(), 1);
  }
  ::setenv("NSIGHTKIT_REPORT", p.report.c_str(), 1);
  if (p.capture) ::setenv("NSIGHTKIT_CAPTURE", p.capture->c_str(), 1);

  std::vector<char*> argv;
  for (std::string const& a : p.program) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(argv[0], argv.data());
  int const err = errno;
  std::fprintf(stderr, "nsightkit profile: cannot run '%s': %s\n", argv[0], std::strerror(err));
  return err == ENOENT ? 127 : 126;
}

}  // namespace nsightkit_command
