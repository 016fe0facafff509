// Helpers for the report's tests: capture what the report prints on stderr, scoped environment
// variables, files.
#pragma once

#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace nsk_test {

/// Redirects file descriptor 2 into a temporary file for its lifetime; text() reads it.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    char name[] = "/tmp/nsk-stderr-XXXXXX";
    fd_ = ::mkstemp(name);
    REQUIRE(fd_ >= 0);
    path_ = name;
    saved_ = ::dup(2);
    REQUIRE(::dup2(fd_, 2) == 2);
  }
  ~StderrCapture() {
    restore();
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  StderrCapture(StderrCapture const&) = delete;
  StderrCapture& operator=(StderrCapture const&) = delete;

  /// Everything written to stderr so far.
  std::string text() {
    std::fflush(stderr);
    return read_file(path_);
  }

  static std::string read_file(std::string const& path) {
    std::ifstream f{path, std::ios::binary};
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  int fd_{-1};
  int saved_{-1};
  std::string path_;
};

/// Sets (or unsets, with nullptr) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(char const* name, char const* value) : name_{name} {
    if (char const* old = std::getenv(name)) old_ = old, had_ = true;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(ScopedEnv const&) = delete;
  ScopedEnv& operator=(ScopedEnv const&) = delete;

 private:
  std::string name_;
  std::string old_;
  bool had_{false};
};

inline bool file_exists(std::string const& p) { return ::access(p.c_str(), F_OK) == 0; }

/// Number of occurrences of `needle` in `hay`.
inline std::size_t count_of(std::string const& hay, std::string const& needle) {
  std::size_t n = 0;
  for (std::size_t pos = hay.find(needle); pos != std::string::npos;
       pos = hay.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

}  // namespace nsk_test
