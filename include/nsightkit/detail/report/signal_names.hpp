// Internal: the signals the report may handle, by the names users write (`signals=TERM+USR1`,
// `trigger-signal=USR2`) and print. Only signals a scheduler, a terminal or a user sends to end or
// poke a job: never the synchronous ones a fault raises (SEGV, BUS, FPE, ILL), ABRT, or the ones
// no process can catch (KILL, STOP).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/text.hpp>

#include <csignal>
#include <cstdint>
#include <string>
#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

struct SignalName {
  char const* name;  // lower case, without "sig"
  char const* full;  // as printed: "SIGTERM"
  int number;
};

/// The signals the report handles, by name (those this platform defines).
inline constexpr SignalName handled_signals[] = {
    {"term", "SIGTERM", SIGTERM}, {"int", "SIGINT", SIGINT},
#if defined(SIGHUP)
    {"hup", "SIGHUP", SIGHUP},
#endif
#if defined(SIGQUIT)
    {"quit", "SIGQUIT", SIGQUIT},
#endif
#if defined(SIGUSR1)
    {"usr1", "SIGUSR1", SIGUSR1}, {"usr2", "SIGUSR2", SIGUSR2},
#endif
#if defined(SIGALRM)
    {"alrm", "SIGALRM", SIGALRM},
#endif
#if defined(SIGXCPU)
    {"xcpu", "SIGXCPU", SIGXCPU},
#endif
#if defined(SIGPWR)
    {"pwr", "SIGPWR", SIGPWR},
#endif
};

/// `name` in upper case.
inline std::string upper(std::string_view name) {
  std::string out{name};
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

/// "SIGTERM" for SIGTERM; "signal N" for a signal not in the table.
inline std::string signal_name(int number) {
  for (SignalName const& s : handled_signals) {
    if (s.number == number) return s.full;
  }
  return "signal " + std::to_string(number);
}

/// "SIGTERM" for SIGTERM, "a signal" for one not in the table (async-signal-safe: no allocation).
inline char const* signal_full_name(int number) noexcept {
  for (SignalName const& s : handled_signals) {
    if (s.number == number) return s.full;
  }
  return "a signal";
}

/// The number of a signal named "TERM", "SIGTERM", "sigterm" or given by number ("15"); 0 when
/// the report does not handle such a signal.
inline int signal_number(std::string_view text) noexcept {
  text = trim(text);
  std::uint64_t n = 0;
  if (parse_count(text, 1, 1024, n)) {
    for (SignalName const& s : handled_signals) {
      if (static_cast<std::uint64_t>(s.number) == n) return s.number;
    }
    return 0;
  }
  if (text.size() > 3 && equals_word(text.substr(0, 3), "sig")) text.remove_prefix(3);
  for (SignalName const& s : handled_signals) {
    if (equals_word(text, s.name)) return s.number;
  }
  return 0;
}

/// The names of the signals the report handles, for messages ("TERM, INT, HUP, ...").
inline std::string handled_signal_names() {
  std::string out;
  for (SignalName const& s : handled_signals) {
    if (!out.empty()) out += ", ";
    out += upper(s.name);
  }
  return out;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
