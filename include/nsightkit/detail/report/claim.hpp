// Internal: one report per process — the claim a copy of the report makes on the process, which
// a second copy whose symbols were not unified with the first (a plugin loaded with
// dlopen(RTLD_LOCAL) by a compiler that emits no unique symbols, or the NVTX tool library of
// `nsightkit profile`) finds before it starts a report of its own.
//
// The claim is the name of an empty memfd, close-on-exec: "nsightkit-report-owner" followed by the
// claim's time, the owner's kind ("program" or "tool"), the address of its state and of its NVTX
// entry. A name is set once, when the file is made, so a reader never sees half a claim; every
// copy of nsightkit in the process can list /proc/self/fd, whatever the loader did with its
// symbols; nothing is written to the environment, which other threads may be reading.
// Two copies claiming at once both see both claims and agree on the earlier one.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/process.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#if defined(__linux__)
#include <dirent.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Set in a copy of nsightkit that found another copy's report in the process.
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<bool> duplicate_copy{false};

/// How the copy of the report that owns the process takes an NVTX module: the NVTX tool library
/// (`nsightkit profile`) hands every module to the program's own report through it.
using NvtxAttach = int (*)(void const* (*)(std::uint32_t));

/// Who owns the process's report, as the owner's claim says: "program" (a copy compiled into the
/// program or its libraries) or "tool" (the NVTX tool library).
#if defined(NSIGHTKIT_DETAIL_NVTX_TOOL)
inline constexpr char const claim_kind[] = "tool";
#else
inline constexpr char const claim_kind[] = "program";
#endif

/// The start of every claim's name.
inline constexpr char const claim_prefix[] = "nsightkit-report-owner";

/// A claim on the process, as its name tells it.
struct Claim {
  bool found{false};
  int fd{-1};                  // the memfd that carries it
  std::uint64_t time{0};       // CLOCK_MONOTONIC nanoseconds when it was made
  std::string kind;            // "program" or "tool"
  void const* state{nullptr};  // the owner's state_ptr
  NvtxAttach attach{nullptr};  // its NVTX entry
};

/// Parses a claim's name ("nsightkit-report-owner TIME KIND STATE ATTACH"); false for any other.
inline bool parse_claim(std::string_view name, Claim& c) {
  std::string_view const prefix{claim_prefix};
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  std::string const rest{name.substr(prefix.size())};
  unsigned long long time = 0, state = 0, attach = 0;
  char kind[16] = {};
  if (std::sscanf(rest.c_str(), " %llu %15s %llx %llx", &time, kind, &state, &attach) != 4)
    return false;
  c.found = true;
  c.time = time;
  c.kind = kind;
  c.state = reinterpret_cast<void const*>(static_cast<std::uintptr_t>(state));
  c.attach = reinterpret_cast<NvtxAttach>(static_cast<std::uintptr_t>(attach));
  return true;
}

/// Every claim in the process (Linux; elsewhere none can be made or found).
inline std::vector<Claim> list_claims() {
  std::vector<Claim> out;
#if defined(__linux__)
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  int const self = ::dirfd(dir);
  std::string const memfd = std::string{"/memfd:"} + claim_prefix;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long const fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == self) continue;
    char link[512];
    ssize_t const n = ::readlinkat(self, e->d_name, link, sizeof link - 1);
    if (n <= 0) continue;
    std::string_view target{link, static_cast<std::size_t>(n)};
    if (target.compare(0, memfd.size(), memfd) != 0) continue;
    Claim c;
    if (!parse_claim(target.substr(7), c)) continue;  // after "/memfd:"
    c.fd = static_cast<int>(fd);
    out.push_back(c);
  }
  ::closedir(dir);
#endif
  return out;
}

/// The claim that `fd` carries now (null `found` when it carries none).
inline Claim claim_at(int fd) {
  Claim c;
#if defined(__linux__)
  char path[64], link[512];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t const n = ::readlink(path, link, sizeof link - 1);
  std::string_view const target{link, n > 0 ? static_cast<std::size_t>(n) : 0};
  if (n > 7 && target.compare(0, 7, "/memfd:") == 0 && parse_claim(target.substr(7), c)) c.fd = fd;
#else
  (void)fd;
#endif
  return c;
}

/// The claim that owns the process: the earliest of those made (null `found` when none). Once
/// found it is checked in one look (the NVTX tool library asks for every module NVTX loads).
inline Claim read_claim() {
  static std::atomic<int> owner_fd{-1};
  Claim best;
  NSIGHTKIT_DETAIL_TRY {
    int const known = owner_fd.load(std::memory_order_acquire);
    if (known >= 0) {
      Claim const c = claim_at(known);
      if (c.found) return c;
    }
    for (Claim const& c : list_claims()) {
      if (!best.found || c.time < best.time || (c.time == best.time && c.fd < best.fd)) best = c;
    }
    // The owner is the earliest claim: a later claim never takes its place while its fd is open.
    if (best.found) owner_fd.store(best.fd, std::memory_order_release);
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
  return best;
}

/// Makes this copy's claim (its memfd stays open for the life of the process); the fd, or -1
/// where no claim can be made (not Linux, no memfd_create).
inline int make_claim(void const* state, NvtxAttach attach) noexcept {
#if defined(__linux__) && defined(SYS_memfd_create)
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  auto const t = static_cast<unsigned long long>(ts.tv_sec) * 1000000000ull +
                 static_cast<unsigned long long>(ts.tv_nsec);
  char name[200];
  std::snprintf(name, sizeof name, "%s %llu %s %llx %llx", claim_prefix, t, claim_kind,
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(state)),
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(attach)));
  return static_cast<int>(::syscall(SYS_memfd_create, name, 1u /* MFD_CLOEXEC */));
#else
  (void)state;
  (void)attach;
  return -1;
#endif
}

/// Claims the process for this copy of the report (`state` is its state_ptr's address, `attach`
/// its NVTX entry). False, with one message, when another copy already owns it.
inline bool claim_process(void const* state, NvtxAttach attach) {
  int const mine = make_claim(state, attach);
  Claim const owner = read_claim();
  if (!owner.found || owner.fd == mine || owner.state == state) return true;
#if defined(__linux__)
  if (mine >= 0) ::close(mine);
#endif
  if (!duplicate_copy.exchange(true)) {
    if (owner.kind == "tool") {
      std::fprintf(stderr,
                   "nsightkit report: nsightkit's NVTX tool (nsightkit profile) started this "
                   "process's report before the program's own copy did; the program's copy "
                   "stays off and its ranges reach the report through NVTX\n");
    } else {
      std::fprintf(
          stderr,
          "nsightkit report: this module carries a second copy of nsightkit's report (it embeds "
          "nsightkit and was loaded so that its symbols are not shared, e.g. dlopen(RTLD_LOCAL) "
          "with a compiler that emits no unique symbols); its ranges are not in the process's "
          "report, and this copy stays off. Load it with RTLD_GLOBAL or link it normally.\n");
    }
  }
  return false;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
