// A small command-line parser for the examples: `--name value`, `--name=value` and switches,
// with a generated --help and one clear message per bad argument (UsageError).
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nn {

/// A bad command line; what() names the flag and the problem.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ArgParser {
 public:
  /// @param program name in messages; @param summary first lines of --help.
  ArgParser(std::string program, std::string summary);

  /// A switch: `--name` sets *target = value (two switches may share a target:
  /// --pinned/--pageable).
  void add_switch(std::string const& name, std::string help, bool* target, bool value);
  /// An integer option in [min, max].
  void add_int(std::string const& name, std::string metavar, std::string help, int* target, int min,
               int max);
  /// A 64-bit unsigned option.
  void add_u64(std::string const& name, std::string metavar, std::string help,
               std::uint64_t* target);
  /// A finite floating-point option in [min, max].
  void add_double(std::string const& name, std::string metavar, std::string help, double* target,
                  double min, double max);
  /// One of `choices`.
  void add_choice(std::string const& name, std::string help, std::string* target,
                  std::vector<std::string> choices);
  /// Any string; `check` (optional) throws UsageError-worthy std::invalid_argument text.
  void add_string(std::string const& name, std::string metavar, std::string help,
                  std::string* target, std::function<void(std::string const&)> check = nullptr);
  /// A line of text in --help between options (a section title).
  void add_section(std::string title);

  /// Parses argv. Returns false when --help (or -h) was given (the help was printed to stdout).
  /// @throws UsageError for an unknown flag, a missing or bad value, or a repeated option.
  bool parse(int argc, char const* const* argv);

  /// True when the option or switch was on the command line.
  [[nodiscard]] bool given(std::string const& name) const;
  /// The --help text.
  [[nodiscard]] std::string help() const;
  [[nodiscard]] std::string const& program() const noexcept { return program_; }

 private:
  struct Option {
    std::string name, metavar, help;
    bool takes_value{true};
    std::function<void(std::string const&)> set;
    bool given{false};
  };
  Option& add(std::string const& name, std::string metavar, std::string help, bool takes_value,
              std::function<void(std::string const&)> set);
  [[noreturn]] void fail(std::string const& message) const;

  std::string program_, summary_;
  std::vector<Option> options_;
  std::vector<std::pair<std::size_t, std::string>> sections_;  // (before option index, title)
};

}  // namespace nn
