// Internal: facts about this process that several features need — its id, its rank under a
// launcher, whether it is a child forked from a process that ran nsightkit, and the check that
// warns about misspelt NSIGHTKIT_* environment variables.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/text.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#if defined(_WIN32)
#include <process.h>
#else
#include <unistd.h>
#endif

#if !defined(_WIN32)
extern "C" char** environ;  // POSIX: the process environment (declared by no standard header)
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// The id of this process.
inline long process_id() noexcept {
#if defined(_WIN32)
  return static_cast<long>(_getpid());
#else
  return static_cast<long>(::getpid());
#endif
}

/// The launcher variables that carry a process rank, in order of precedence.
inline constexpr char const* rank_variables[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                                                 "RANK", "LOCAL_RANK"};

/// A rank and the variable it came from.
struct LauncherRank {
  int rank;
  char const* variable;
};

/// Set once a message about bad rank variables was printed (one message per process).
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<bool> rank_warning_printed{false};

/// The rank of this process from the first launcher variable that holds a non-negative integer.
/// Variables set to anything else are skipped; the first call that meets any prints one message
/// naming every one of them.
inline std::optional<LauncherRank> launcher_rank() noexcept {
  std::optional<LauncherRank> found;
  std::string bad;
  for (char const* name : rank_variables) {
    char const* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    std::uint64_t n = 0;
    if (parse_count(trim(value), 0, static_cast<std::uint64_t>(std::numeric_limits<int>::max()),
                    n)) {
      if (!found) found = LauncherRank{static_cast<int>(n), name};
      continue;
    }
    NSIGHTKIT_DETAIL_TRY {
      if (!bad.empty()) bad += ", ";
      bad += name;
      bad += '=';
      bad += quote_value(value);
    }
    NSIGHTKIT_DETAIL_CATCH(...) {}
  }
  if (!bad.empty() && !rank_warning_printed.exchange(true)) {
    std::fprintf(stderr, "nsightkit: ignoring %s (not a non-negative integer rank)%s\n",
                 bad.c_str(), found ? "" : "; no rank is used");
  }
  return found;
}

/// The rank of this process, or -1.
inline int launcher_rank_or_none() noexcept {
  auto const r = launcher_rank();
  return r ? r->rank : -1;
}

// ---------------------------------------------------------------------------------------------
// Fork

/// The id of the process nsightkit last saw fork a child, in that child (0 elsewhere). Set by the
/// report's pthread_atfork child handler; outputs of a forked child get their own file names.
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<long> forked_from{0};

// ---------------------------------------------------------------------------------------------
// Environment

/// Every NSIGHTKIT_* environment variable nsightkit or its tools read.
inline constexpr char const* known_variables[] = {
    "NSIGHTKIT_REPORT",
    "NSIGHTKIT_REPORT_CLOCK",
    "NSIGHTKIT_REPORT_D3",
    "NSIGHTKIT_CAPTURE",
    "NSIGHTKIT_DETAIL_REPORT_OWNER",
    "NSIGHTKIT_IGNORE_UNKNOWN_VARIABLES",
    // Read by the build and the project's scripts, so a user may well have them exported.
    "NSIGHTKIT_NVTX3_INCLUDE_DIR",
    "NSIGHTKIT_NVTX3_PYPI_DIR",
    "NSIGHTKIT_NVTX_PIP",
    "NSIGHTKIT_CONAN_VERSION",
    "NSIGHTKIT_CONAN_EXTRA_FMT",
    "NSIGHTKIT_GPU_BUILD",
};

/// Edit distance of two short names, capped: enough to suggest the variable a user meant.
inline std::size_t name_distance(std::string_view a, std::string_view b) noexcept {
  constexpr std::size_t cap = 64;
  if (a.size() >= cap || b.size() >= cap) return cap;
  std::size_t row[cap + 1];
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t const up = row[j];
      std::size_t const sub = diag + (a[i - 1] == b[j - 1] ? 0 : 1);
      std::size_t best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
      row[j] = sub < best ? sub : best;
      diag = up;
    }
  }
  return row[b.size()];
}

/// The message for one unknown variable name ("" when it is known).
inline std::string unknown_variable_message(std::string_view name) {
  std::size_t best = static_cast<std::size_t>(-1);
  char const* suggestion = nullptr;
  for (char const* k : known_variables) {
    if (name == k) return {};
    std::size_t const d = name_distance(name, k);
    if (d < best) {
      best = d;
      suggestion = k;
    }
  }
  std::string m = "nsightkit: unknown environment variable ";
  m += printable(name);
  m += " is ignored";
  if (suggestion != nullptr && best <= 3) {
    m += " (did you mean ";
    m += suggestion;
    m += "?)";
  }
  m += "; set NSIGHTKIT_IGNORE_UNKNOWN_VARIABLES=1 to silence this";
  return m;
}

NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<bool> environment_checked{false};

/// Warns once per process, on stderr, about every NSIGHTKIT_* variable nsightkit does not know
/// (a misspelt variable would otherwise be ignored without a word).
inline void check_environment_once() noexcept {
  if (environment_checked.exchange(true)) return;
#if !defined(_WIN32)
  char const* silence = std::getenv("NSIGHTKIT_IGNORE_UNKNOWN_VARIABLES");
  if (silence != nullptr && !is_off_word(silence)) return;
  NSIGHTKIT_DETAIL_TRY {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view const entry{*e};
      if (entry.compare(0, 10, "NSIGHTKIT_") != 0) continue;
      std::string_view const name = entry.substr(0, entry.find('='));
      std::string const m = unknown_variable_message(name);
      if (!m.empty()) std::fprintf(stderr, "%s\n", m.c_str());
    }
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
#endif
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
