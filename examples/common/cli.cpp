#include "common/cli.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace nn {
namespace {

std::string quote(std::string const& s) { return "'" + s + "'"; }

long long parse_integer(std::string const& flag, std::string const& text) {
  // Digits with an optional sign only: "3x", "1.5", "" and " 3" are errors, not 3.
  bool ok = !text.empty();
  for (std::size_t i = 0; ok && i < text.size(); ++i) {
    char const c = text[i];
    ok = (c >= '0' && c <= '9') || (i == 0 && (c == '-' || c == '+') && text.size() > 1);
  }
  errno = 0;
  long long const v = ok ? std::strtoll(text.c_str(), nullptr, 10) : 0;
  if (!ok || errno == ERANGE) {
    throw UsageError(flag + ": " + quote(text) + " is not an integer");
  }
  return v;
}

}  // namespace

ArgParser::ArgParser(std::string program, std::string summary)
    : program_{std::move(program)}, summary_{std::move(summary)} {}

ArgParser::Option& ArgParser::add(std::string const& name, std::string metavar, std::string help,
                                  bool takes_value, std::function<void(std::string const&)> set) {
  options_.push_back(
      Option{name, std::move(metavar), std::move(help), takes_value, std::move(set)});
  return options_.back();
}

void ArgParser::add_section(std::string title) {
  sections_.emplace_back(options_.size(), std::move(title));
}

void ArgParser::add_switch(std::string const& name, std::string help, bool* target, bool value) {
  add(name, "", std::move(help), false, [target, value](std::string const&) { *target = value; });
}

void ArgParser::add_int(std::string const& name, std::string metavar, std::string help, int* target,
                        int min, int max) {
  add(name, std::move(metavar), std::move(help), true,
      [name, target, min, max](std::string const& text) {
        long long const v = parse_integer("--" + name, text);
        if (v < min || v > max) {
          throw UsageError("--" + name + ": " + text + " is outside [" + std::to_string(min) +
                           ", " + std::to_string(max) + "]");
        }
        *target = static_cast<int>(v);
      });
}

void ArgParser::add_u64(std::string const& name, std::string metavar, std::string help,
                        std::uint64_t* target) {
  add(name, std::move(metavar), std::move(help), true, [name, target](std::string const& text) {
    bool ok = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    errno = 0;
    unsigned long long const v = ok ? std::strtoull(text.c_str(), nullptr, 10) : 0;
    if (!ok || errno == ERANGE) {
      throw UsageError("--" + name + ": " + quote(text) + " is not a non-negative integer");
    }
    *target = static_cast<std::uint64_t>(v);
  });
}

void ArgParser::add_double(std::string const& name, std::string metavar, std::string help,
                           double* target, double min, double max) {
  add(name, std::move(metavar), std::move(help), true,
      [name, target, min, max](std::string const& text) {
        char* end = nullptr;
        errno = 0;
        double const v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
            !std::isfinite(v)) {
          throw UsageError("--" + name + ": " + quote(text) + " is not a finite number");
        }
        if (v < min || v > max) {
          throw UsageError("--" + name + ": " + text + " is outside [" + std::to_string(min) +
                           ", " + std::to_string(max) + "]");
        }
        *target = v;
      });
}

void ArgParser::add_choice(std::string const& name, std::string help, std::string* target,
                           std::vector<std::string> choices) {
  std::string metavar;
  for (auto const& c : choices) metavar += (metavar.empty() ? "" : "|") + c;
  add(name, metavar, std::move(help), true,
      [name, target, choices, metavar](std::string const& text) {
        for (auto const& c : choices) {
          if (c == text) {
            *target = text;
            return;
          }
        }
        throw UsageError("--" + name + ": " + quote(text) + " is not one of " + metavar);
      });
}

void ArgParser::add_string(std::string const& name, std::string metavar, std::string help,
                           std::string* target, std::function<void(std::string const&)> check) {
  add(name, std::move(metavar), std::move(help), true,
      [name, target, check](std::string const& text) {
        if (check) {
          try {
            check(text);
          } catch (std::invalid_argument const& e) {
            throw UsageError("--" + name + ": " + e.what());
          }
        }
        *target = text;
      });
}

void ArgParser::fail(std::string const& message) const { throw UsageError(message); }

bool ArgParser::parse(int argc, char const* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      fail("unexpected argument " + quote(arg) + " (options start with --; see --help)");
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    Option* opt = nullptr;
    for (auto& o : options_) {
      if (o.name == name) opt = &o;
    }
    if (opt == nullptr) fail("unknown option --" + name + " (see --help)");
    if (!opt->takes_value) {
      if (has_value) fail("--" + name + " takes no value");
    } else if (!has_value) {
      if (i + 1 >= argc) fail("--" + name + " needs a value (" + opt->metavar + ")");
      value = argv[++i];
    }
    if (opt->given && opt->takes_value) fail("--" + name + " given twice");
    opt->set(value);
    opt->given = true;
  }
  return true;
}

bool ArgParser::given(std::string const& name) const {
  for (auto const& o : options_) {
    if (o.name == name) return o.given;
  }
  return false;
}

std::string ArgParser::help() const {
  std::string out = summary_ + "\n\nOptions:\n";
  std::size_t next_section = 0;
  for (std::size_t i = 0; i <= options_.size(); ++i) {
    while (next_section < sections_.size() && sections_[next_section].first == i) {
      out += "\n" + sections_[next_section++].second + "\n";
    }
    if (i == options_.size()) break;
    auto const& o = options_[i];
    std::string head = "  --" + o.name + (o.metavar.empty() ? "" : " " + o.metavar);
    if (head.size() < 28) {
      head.resize(28, ' ');
    } else {
      head += "\n" + std::string(28, ' ');
    }
    // Indent continuation lines of the help text under the first.
    std::string text;
    for (char c : o.help) {
      text += c;
      if (c == '\n') text += std::string(28, ' ');
    }
    out += head + text + "\n";
  }
  out += "  --help                    this text\n";
  return out;
}

}  // namespace nn
