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

/// A launcher variable that carries a process rank, and those that carry the number of ranks.
struct RankVariable {
  char const* rank;
  char const* sizes[2];  // the first one set counts; null: none
};

/// The launcher variables that carry a global rank, in order of precedence. A rank counts when
/// its world has more than one rank (or the launcher does not say how many).
inline constexpr RankVariable rank_variables[] = {
    {"OMPI_COMM_WORLD_RANK", {"OMPI_COMM_WORLD_SIZE", nullptr}},
    {"PMI_RANK", {"PMI_SIZE", nullptr}},
    {"SLURM_PROCID", {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}},
    {"RANK", {"WORLD_SIZE", nullptr}},
};

/// The launcher variable of a rank among the processes of one host (torchrun, DeepSpeed): it
/// repeats on every host, so it names files only with the host's name beside it.
inline constexpr RankVariable local_rank_variable{"LOCAL_RANK", {"LOCAL_WORLD_SIZE", nullptr}};

/// A rank, the variable it came from and the number of ranks (-1: not said).
struct LauncherRank {
  int rank;
  char const* variable;
  int size{-1};
};

/// Set once a message about bad rank variables was printed (one message per process).
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<bool> rank_warning_printed{false};

/// The rank and number of ranks a component that knows them better than the launcher's variables
/// (nsightkit::mpi) set for this process; rank -1: none. Read before the variables.
struct ProcessRank {
  std::atomic<int> rank{-1};
  std::atomic<int> size{-1};
};
NSIGHTKIT_DETAIL_VISIBLE inline ProcessRank process_rank{};

/// Sets this process's rank among `size` ranks (nsightkit::mpi::enable()): nothing is written to
/// the environment, which other threads and libraries may be reading.
inline void set_process_rank(int rank, int size) noexcept {
  process_rank.size.store(size, std::memory_order_relaxed);
  process_rank.rank.store(rank, std::memory_order_release);
}

namespace launcher {

/// Reads `v`'s rank and size. False when its rank variable is unset; a value that is not a
/// non-negative integer is added to `bad` and skipped.
inline bool read(RankVariable const& v, std::optional<LauncherRank>& out, std::string& bad) {
  auto number = [&](char const* name, int& n) {
    char const* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return false;
    std::uint64_t x = 0;
    if (parse_count(trim(value), 0, static_cast<std::uint64_t>(std::numeric_limits<int>::max()),
                    x)) {
      n = static_cast<int>(x);
      return true;
    }
    NSIGHTKIT_DETAIL_TRY {
      if (!bad.empty()) bad += ", ";
      bad += name;
      bad += '=';
      bad += quote_value(value);
    }
    NSIGHTKIT_DETAIL_CATCH(...) {}
    return false;
  };
  int rank = 0;
  if (!number(v.rank, rank)) return false;
  int size = -1;
  for (char const* s : v.sizes) {
    if (s != nullptr && number(s, size)) break;
  }
  if (!out) out = LauncherRank{rank, v.rank, size};
  return true;
}

}  // namespace launcher

/// Reads the launcher variables: the global rank (first variable holding a non-negative integer)
/// and the host-local one. Variables set to anything else are skipped; the first call that meets
/// any prints one message naming every one of them.
inline void read_launcher_ranks(std::optional<LauncherRank>& global,
                                std::optional<LauncherRank>& local) noexcept {
  std::string bad;
  NSIGHTKIT_DETAIL_TRY {
    for (RankVariable const& v : rank_variables) (void)launcher::read(v, global, bad);
    (void)launcher::read(local_rank_variable, local, bad);
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
  if (!bad.empty() && !rank_warning_printed.exchange(true)) {
    std::fprintf(stderr, "nsightkit: ignoring %s (not a non-negative integer rank)%s\n",
                 bad.c_str(), global || local ? "" : "; no rank is used");
  }
}

/// The rank of this process among several: the one nsightkit::mpi set, else the first launcher
/// variable that holds a non-negative integer, when its world has more than one rank (a single
/// task, `srun -n 1 ./app`, has none).
inline std::optional<LauncherRank> launcher_rank() noexcept {
  int const r = process_rank.rank.load(std::memory_order_acquire);
  if (r >= 0) {
    int const size = process_rank.size.load(std::memory_order_relaxed);
    if (size == 1) return std::nullopt;
    return LauncherRank{r, "MPI_Comm_rank", size};
  }
  std::optional<LauncherRank> global, local;
  read_launcher_ranks(global, local);
  if (global && global->size == 1) return std::nullopt;
  return global;
}

/// The rank of this process among the processes of its host (LOCAL_RANK, when its host runs more
/// than one), used only where no global rank names the process.
inline std::optional<LauncherRank> local_launcher_rank() noexcept {
  if (process_rank.rank.load(std::memory_order_acquire) >= 0) return std::nullopt;
  std::optional<LauncherRank> global, local;
  read_launcher_ranks(global, local);
  if (global || !local || local->size == 1) return std::nullopt;
  return local;
}

/// The rank of this process, or -1.
inline int launcher_rank_or_none() noexcept {
  auto const r = launcher_rank();
  return r ? r->rank : -1;
}

/// This host's name, up to its first dot ("localhost" when it cannot be read).
inline std::string host_name() {
  char name[256] = {};
#if !defined(_WIN32)
  if (::gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
#endif
  std::string h{name};
  h = h.substr(0, h.find('.'));
  for (char& c : h) {
    if (c == '/' || c == '\\') c = '_';
  }
  return h.empty() ? std::string{"localhost"} : h;
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
    "NSIGHTKIT_REPORT_STRICT",
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
/// How many unknown NSIGHTKIT_* variables check_environment_once() named (a strict report fails
/// on them).
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<int> unknown_variables{0};

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
      if (m.empty()) continue;
      std::fprintf(stderr, "%s\n", m.c_str());
      unknown_variables.fetch_add(1, std::memory_order_relaxed);
    }
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
#endif
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
