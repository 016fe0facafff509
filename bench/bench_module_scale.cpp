// Module paths at scale: time and memory of deep stacks of module scopes and of many distinct
// module names, with a hook that reads every path (the worst case: every path is built) or with
// one current_module_path() at the bottom of the stack. Not a Google Benchmark program: these
// costs are paid once per distinct path (the first pass creates the paths, the second finds
// them), so each scenario runs twice in a fresh process (fork) that reports its own peak memory.
//
//   bench_module_scale                       depth 10^4 and 10^5, 10^5 and 10^6 names
//   bench_module_scale depth 20000           one scenario family, the sizes given
//   bench_module_scale names 20000 40000
//
// Columns: pass 1 and pass 2 wall and CPU time; "peak RSS +" the growth of the process' peak
// resident memory during the scenario (ru_maxrss; it includes the recursion's own stack, shown by
// the "no scope" row); "heap +" the bytes the scenario left allocated (mallinfo2: what the path
// table keeps for the rest of the process). Runs against any nsightkit version with module.hpp (the
// formatted-name row needs NSIGHTKIT_MODULE), so the same file measures before and after.
#include <nsightkit/module.hpp>

#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

namespace nsk = nsightkit;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu_s() {  // this process' CPU time: what a loaded machine's wall time hides
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

double heap_mib() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 const m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1024.0 * 1024.0);
#else
  return -1;  // not available: printed as such
#endif
}

volatile std::size_t sink = 0;  // what the hooks read, kept observable

// ---- the scenarios (each runs in its own child process) ----

[[gnu::noinline]] void nest(int depth, int levels) {
  nsk::ModuleScope scope{"deep"};
  if (depth + 1 < levels) {
    nest(depth + 1, levels);
  } else {
    sink = sink + nsk::current_module_path().size();
  }
}

[[gnu::noinline]] void nest_plain(int depth, int levels) {  // the recursion alone
  volatile char frame[160];                                 // about a ModuleScope's stack use
  frame[0] = static_cast<char>(depth);
  if (depth + 1 < levels) nest_plain(depth + 1, levels);
  sink = sink + static_cast<std::size_t>(frame[0]);
}

struct Deep {
  int levels;
  bool plain;
  void operator()() const {
    if (plain) {
      nest_plain(0, levels);
    } else {
      nest(0, levels);
    }
  }
};

/// Runs `fn` on a thread with a stack large enough for the deepest recursion, and waits.
template <class F>
void on_big_stack(F const& fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, std::size_t{1} << 30);
  pthread_t t;
  auto body = [](void* p) -> void* {
    (*static_cast<F const*>(p))();
    return nullptr;
  };
  if (pthread_create(&t, &attr, body, const_cast<F*>(&fn)) != 0) std::abort();
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
}

enum class Kind { deep_hook, deep_lazy, deep_plain, names_hook, names_formatted };

char const* label(Kind k) {
  switch (k) {
    case Kind::deep_hook: return "nested, a hook reads every path";
    case Kind::deep_lazy: return "nested, one current_module_path()";
    case Kind::deep_plain: return "nested, no scope (recursion only)";
    case Kind::names_hook: return "distinct names, a hook reads paths";
    case Kind::names_formatted: return "distinct formatted names, a hook";
  }
  return "?";
}

struct Result {
  double pass[2];
  double cpu[2];
  double rss_mib;
  double heap_mib;
};

Result run(Kind kind, int n) {
  std::vector<std::string> names;
  if (kind == Kind::names_hook) {
    names.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) names.push_back("n" + std::to_string(i));
  }
  nsk::HookHandle hook;
  if (kind == Kind::deep_hook || kind == Kind::names_hook || kind == Kind::names_formatted) {
    hook = nsk::add_pre_hook([](nsk::ModuleInfo const& m) { sink = sink + m.path.size(); });
  } else {
    nsk::track_module_paths();
  }
  double const heap0 = heap_mib();
  long const rss0 = peak_rss_kib();
  Result r{};
  for (int p = 0; p < 2; ++p) {
    double const t0 = now_s();
    double const c0 = cpu_s();
    switch (kind) {
      case Kind::deep_hook:
      case Kind::deep_lazy: on_big_stack(Deep{n, false}); break;
      case Kind::deep_plain: on_big_stack(Deep{n, true}); break;
      case Kind::names_hook: {
        nsk::ModuleScope parent{"wide"};
        for (auto const& name : names) nsk::ModuleScope child{name};
        break;
      }
      case Kind::names_formatted: {
#if defined(NSIGHTKIT_MODULE)
        nsk::ModuleScope parent{"wide"};
        for (int i = 0; i < n; ++i) nsk::ModuleScope child{"n{}", i};
#endif
        break;
      }
    }
    r.pass[p] = now_s() - t0;
    r.cpu[p] = cpu_s() - c0;
  }
  r.rss_mib = static_cast<double>(peak_rss_kib() - rss0) / 1024.0;
  r.heap_mib = heap_mib() - heap0;
  return r;
}

/// Runs one scenario in a child process and prints its row.
void row(Kind kind, int n) {
#if !defined(NSIGHTKIT_MODULE)
  if (kind == Kind::names_formatted) return;  // an nsightkit without formatted module names
#endif
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  pid_t const pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Result const r = run(kind, n);
    ssize_t const w = write(fds[1], &r, sizeof r);
    _exit(w == static_cast<ssize_t>(sizeof r) ? 0 : 1);
  }
  close(fds[1]);
  Result r{};
  ssize_t const got = read(fds[0], &r, sizeof r);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != static_cast<ssize_t>(sizeof r) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::printf("%-36s %8d   failed (status %d)\n", label(kind), n, status);
    return;
  }
  std::printf("%-36s %8d %7.3f %7.3f %7.3f %7.3f %9.1f %9.1f\n", label(kind), n, r.pass[0],
              r.cpu[0], r.pass[1], r.cpu[1], r.rss_mib, r.heap_mib);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> depths{10000, 100000};
  std::vector<int> counts{100000, 1000000};
  if (argc >= 2) {
    std::vector<int> sizes;
    for (int i = 2; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
    if (std::strcmp(argv[1], "depth") == 0) {
      counts.clear();
      if (!sizes.empty()) depths = sizes;
    } else if (std::strcmp(argv[1], "names") == 0) {
      depths.clear();
      if (!sizes.empty()) counts = sizes;
    } else {
      std::fprintf(stderr, "usage: %s [depth|names [sizes...]]\n", argv[0]);
      return 2;
    }
  }
  std::printf("nsightkit module paths at scale (%s, %s)\n", nsk::enabled ? "enabled" : "disabled",
#if defined(__VERSION__)
              __VERSION__
#else
              "unknown compiler"
#endif
  );
  std::printf("%-36s %8s %15s %15s %9s %9s\n", "", "", "pass 1 (s)", "pass 2 (s)", "peak RSS",
              "heap");
  std::printf("%-36s %8s %7s %7s %7s %7s %9s %9s\n", "scenario", "n", "wall", "cpu", "wall", "cpu",
              "+MiB", "+MiB");
  for (int d : depths) {
    for (Kind k : {Kind::deep_plain, Kind::deep_lazy, Kind::deep_hook}) row(k, d);
  }
  for (int n : counts) {
    for (Kind k : {Kind::names_hook, Kind::names_formatted}) row(k, n);
  }
  return 0;
}
