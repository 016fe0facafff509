// SIGTERM to a CUDA program whose report measures GPU work with CUPTI
// (report_signals_gpu_demo.cu): the report flushes CUPTI's records from its own thread and writes
// every output, then the process ends by the signal; the summary holds the kernels of the range
// that launched them, and the trace their slices.
#include <catch2/catch.hpp>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" char** environ;

namespace {

std::string read_file(std::string const& path) {
  std::ifstream f{path};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("SIGTERM: the CUPTI source's records are in the outputs, the process ends by it") {
  std::string const dir = std::string{NSK_TEST_OUT} + "/report_signals_gpu";
  REQUIRE(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()) == 0);
  std::string const spec =
      "NSIGHTKIT_REPORT=json=" + dir + "/s.json,trace=" + dir + "/t.json,gpu=cupti";
  int out[2];
  REQUIRE(::pipe(out) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string{*e}.rfind("NSIGHTKIT_REPORT=", 0) != 0) env.push_back(*e);
  }
  env.push_back(const_cast<char*>(spec.c_str()));
  env.push_back(nullptr);
  char demo[] = NSK_DEMO;
  char* argv[] = {demo, nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, demo, &actions, nullptr, argv, env.data()) == 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string text;
  pollfd p{out[0], POLLIN, 0};
  while (text.find("ready\n") == std::string::npos) {
    int const rc = ::poll(&p, 1, 120'000);
    REQUIRE(rc == 1);  // a deadline, not a guess: the demo prints "ready" after 20 steps
    char buf[256];
    ssize_t const n = ::read(out[0], buf, sizeof buf);
    REQUIRE(n > 0);
    text.append(buf, static_cast<std::size_t>(n));
  }
  REQUIRE(::kill(pid, SIGTERM) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  ::close(out[0]);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  std::string const summary = read_file(dir + "/s.json");
  INFO(summary.substr(0, 4000));
  REQUIRE(summary.find("\"source\":\"cupti\"") != std::string::npos);
  std::size_t const row = summary.find("\"path\":\"step/kernels\"");
  REQUIRE(row != std::string::npos);
  std::size_t const kernels = summary.find("\"kernels\":", summary.find("\"gpu_work\":{", row));
  REQUIRE(kernels != std::string::npos);
  CHECK(std::strtoull(summary.c_str() + kernels + 10, nullptr, 10) >= 60);  // 20 steps of 3
  std::string const trace = read_file(dir + "/t.json");
  CHECK(trace.find("\"cat\":\"nsightkit gpu\"") != std::string::npos);
  CHECK(trace.rfind("\"otherData\"") != std::string::npos);  // the trace's end was written
}
