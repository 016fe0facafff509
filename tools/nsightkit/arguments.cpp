// Parsing a subcommand's command line and running it with the common messages (arguments.hpp).
#include "arguments.hpp"

#include "report_file.hpp"

#include <nsightkit/detail/text.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

namespace nsightkit_command {

namespace {

std::string quoted(std::string const& s) { return nsightkit::detail::quote_value(s); }

}  // namespace

Arguments::Arguments(std::vector<std::string> const& args, std::vector<OptionSpec> const& specs) {
  bool options = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string const& a = args[i];
    if (!options || a.size() < 2 || a[0] != '-') {
      words_.push_back(a);
      continue;
    }
    if (a == "--") {
      options = false;
      continue;
    }
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    std::string name = a, value;
    bool inline_value = false;
    if (a.rfind("--", 0) == 0) {
      std::size_t const eq = a.find('=');
      if (eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
    }
    OptionSpec const* spec = nullptr;
    for (OptionSpec const& s : specs) {
      if (name == s.name || (s.short_name != nullptr && name == s.short_name)) spec = &s;
    }
    if (spec == nullptr) throw UsageError("unknown option " + quoted(name));
    std::string const long_name = spec->name;
    if (!spec->takes_value) {
      if (inline_value) throw UsageError(long_name + " takes no value");
      value.clear();
    } else if (!inline_value) {
      if (i + 1 >= args.size()) throw UsageError(long_name + " needs a value");
      value = args[++i];
    }
    auto& slot = values_[long_name];
    if (!slot.empty() && !spec->repeatable) throw UsageError(long_name + " is given twice");
    slot.push_back(std::move(value));
  }
}

std::string Arguments::value(std::string const& name, std::string const& def) const {
  auto const it = values_.find(name);
  return it == values_.end() ? def : it->second.back();
}

std::vector<std::string> Arguments::values(std::string const& name) const {
  auto const it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::uint64_t Arguments::count(std::string const& name, std::uint64_t def, std::uint64_t min,
                               std::uint64_t max) const {
  if (!has(name)) return def;
  std::string const v = value(name);
  std::uint64_t out = 0;
  if (!nsightkit::detail::parse_count(v, min, max, out)) {
    throw UsageError(name + " must be a whole number from " + std::to_string(min) +
                     (max == UINT64_MAX ? std::string{" up"} : " to " + std::to_string(max)) +
                     ", not " + quoted(v));
  }
  return out;
}

double Arguments::number(std::string const& name, double def) const {
  if (!has(name)) return def;
  std::string const v = value(name);
  char* end = nullptr;
  double const d = v.empty() ? -1.0 : std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(d) || d < 0)
    throw UsageError(name + " must be a number >= 0, not " + quoted(v));
  return d;
}

std::string Arguments::choice(std::string const& name, std::vector<std::string> const& choices,
                              std::string const& def) const {
  if (!has(name)) return def;
  std::string const v = value(name);
  std::string list;
  for (std::string const& c : choices) {
    if (c == v) return v;
    list += (list.empty() ? "" : ", ") + c;
  }
  throw UsageError(name + " must be one of " + list + ", not " + quoted(v));
}

int run_subcommand(char const* command, char const* help, std::vector<std::string> const& args,
                   std::vector<OptionSpec> const& specs,
                   std::function<int(Arguments const&)> const& body) {
  try {
    Arguments const a{args, specs};
    if (a.help()) {
      std::fputs(help, stdout);
      return 0;
    }
    return body(a);
  } catch (UsageError const& e) {
    std::fprintf(stderr, "%s: error: %s (%s --help says more)\n", command, e.what(), command);
    return 2;
  } catch (InputError const& e) {
    std::fprintf(stderr, "%s: error: %s\n", command, e.what());
    return 2;
  } catch (std::bad_alloc const&) {
    std::fprintf(stderr, "%s: error: out of memory\n", command);
    return 1;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "%s: internal error: %s (please report it with the input files)\n",
                 command, e.what());
    return 1;
  }
}

}  // namespace nsightkit_command
