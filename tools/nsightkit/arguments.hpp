// The command line of a subcommand: its options declared once (which take a value, which may be
// repeated), parsed with one set of rules and one kind of message for every subcommand.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace nsightkit_command {

/// A command line that cannot be used: the message names the option and the problem.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One option: its long name ("--sort"), an optional short one ("-o"), and whether it takes a
/// value (given as "--sort total" or "--sort=total") and may be repeated.
struct OptionSpec {
  char const* name;
  char const* short_name;
  bool takes_value;
  bool repeatable;
};

/// A parsed command line: options by long name, and the other words in order ("--" ends the
/// options). "--help" and "-h" are recognised by every subcommand.
class Arguments {
 public:
  /// @throws UsageError for an unknown option, a missing value, or an option given twice.
  Arguments(std::vector<std::string> const& args, std::vector<OptionSpec> const& specs);

  [[nodiscard]] bool help() const noexcept { return help_; }
  [[nodiscard]] bool has(std::string const& name) const { return values_.count(name) != 0; }
  /// The value of an option given once, or `def`.
  [[nodiscard]] std::string value(std::string const& name, std::string const& def = {}) const;
  /// Every value of a repeatable option, in order.
  [[nodiscard]] std::vector<std::string> values(std::string const& name) const;
  [[nodiscard]] std::vector<std::string> const& positionals() const noexcept { return words_; }

  /// The value of `name` as a whole number in [min, max], or `def` when absent.
  /// @throws UsageError naming the option when it is not one.
  [[nodiscard]] std::uint64_t count(std::string const& name, std::uint64_t def, std::uint64_t min,
                                    std::uint64_t max) const;
  /// The value of `name` as a finite number >= 0, or `def` when absent.
  /// @throws UsageError naming the option when it is not one.
  [[nodiscard]] double number(std::string const& name, double def) const;
  /// The value of `name`, which must be one of `choices`, or `def` when absent.
  /// @throws UsageError naming the option and the choices.
  [[nodiscard]] std::string choice(std::string const& name, std::vector<std::string> const& choices,
                                   std::string const& def) const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> words_;
  bool help_{false};
};

/// Runs a subcommand's body with the messages every subcommand gives: a usage error or a bad
/// input file prints "<command>: error: <what>" and returns 2; running out of memory or an
/// unexpected exception prints one line and returns 1. `help` is printed for --help (exit 0).
int run_subcommand(char const* command, char const* help, std::vector<std::string> const& args,
                   std::vector<OptionSpec> const& specs,
                   std::function<int(Arguments const&)> const& body);

}  // namespace nsightkit_command
