// A program for tests/report/run_long_jobs.py: threads record ranges, start/end ranges and counter
// samples until a signal ends the process, the way a long job runs until its scheduler stops it.
//
//   report_signals_demo [--threads N] [--paths N] [--handler before|after] [--write-loop]
//                       [--capture] [--steps N] [--fork] [--pace US]
//
// --handler installs the program's own handler for SIGTERM, SIGINT and SIGUSR1 before or after
// the report starts: SIGTERM and SIGINT set a flag (the program then stops its threads, records
// "after signal" and returns 0), SIGUSR1 is counted and the run goes on (a checkpoint signal). --paths makes the report large (slow to write). --write-loop calls
// Report::write() over and over from the main thread. --capture steps an on-demand capture
// window ("step" ranges, warm-up 1, active 3) and stops after --steps steps. --fork records in a
// forked child too, which waits for its own signal. --pace makes each recording thread pause US
// microseconds per iteration (a thread recording flat out makes more trace than a sanitized build
// formats: a backlog without end, which is not what a test of the write's order is about). The report starts from NSIGHTKIT_REPORT in
// main(), after --handler before, so this program is built with NSIGHTKIT_REPORT_NO_AUTOSTART.
// "ready" on stdout says every thread has recorded and, with --capture, the window exists (the
// child prints "child PID ready").
#include <nsightkit/capture.hpp>
#include <nsightkit/detail/counter.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

// Atomics, not volatile sig_atomic_t: the handler may run on any of the program's threads, and
// main() reads them on its own (lock-free atomics are async-signal-safe).
std::atomic<int> signalled{0};
std::atomic<int> usr1{0};  // SIGUSR1 handled (a checkpoint signal: the run goes on)
std::atomic<bool> stop{false};
std::atomic<int> started{0};  // threads that recorded their first iteration

extern "C" void on_signal(int sig) {
  if (sig == SIGUSR1) {
    usr1.fetch_add(1);
  } else {
    signalled.store(sig);
  }
}

void install_handler() {
  struct sigaction a {};
  a.sa_handler = &on_signal;
  sigemptyset(&a.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGUSR1}) sigaction(sig, &a, nullptr);
}

// ThreadSanitizer (clang 14) now and then loses a signal that lands on a thread outside a blocking
// call (seen on main() waiting for a mutex): the test then waits forever, the report untouched.
// Under it the program's threads block the signals and one thread takes them in sigsuspend(),
// where TSan delivers them at once; elsewhere any thread may take them, as in a real program.
#if defined(__SANITIZE_THREAD__)
#define NSIGHTKIT_DEMO_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NSIGHTKIT_DEMO_TSAN 1
#endif
#endif

#if defined(NSIGHTKIT_DEMO_TSAN)
sigset_t demo_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&set, sig);
  return set;
}
#endif

/// Under TSan: the signals go to one thread waiting in sigsuspend(); a no-op elsewhere.
void route_signals() {
#if defined(NSIGHTKIT_DEMO_TSAN)
  sigset_t const set = demo_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // inherited by every thread made after this
  std::thread{[] {
    sigset_t none;
    sigemptyset(&none);
    for (;;) sigsuspend(&none);
  }}.detach();
#endif
}

/// A forked child has main()'s mask and not the waiting thread: its signals are its own again.
void unroute_signals() {
#if defined(NSIGHTKIT_DEMO_TSAN)
  sigset_t const set = demo_signals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
#endif
}

int pace_us = 0;  // --pace: a pause per iteration, so the threads record at a bounded rate

void record(int id) {
  std::uint64_t i = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    if (pace_us > 0) ::usleep(static_cast<useconds_t>(pace_us));
    nsightkit::ScopedRange outer{"work"};
    {
      nsightkit::ScopedRange inner{"thread {}", id};
      nsightkit::UniqueRange request{"request"};
      nsightkit::detail::counter("demo queue depth", static_cast<double>(i % 7));
    }
    if (++i == 1) started.fetch_add(1);
    if (i % 64 == 0) std::this_thread::yield();
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 3, paths = 0, steps = 0;
  std::string handler;
  bool write_loop = false, capture = false, fork_child = false;
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string{argv[++i]} : std::string{}; };
    if (a == "--threads") threads = std::atoi(next().c_str());
    if (a == "--paths") paths = std::atoi(next().c_str());
    if (a == "--handler") handler = next();
    if (a == "--write-loop") write_loop = true;
    if (a == "--capture") capture = true;
    if (a == "--steps") steps = std::atoi(next().c_str());
    if (a == "--fork") fork_child = true;
    if (a == "--pace") pace_us = std::atoi(next().c_str());
  }
  route_signals();
  if (handler == "before") install_handler();
  if (!nsightkit::Report::enable_from_environment()) {
    std::fprintf(stderr, "demo: the report is off\n");
    return 2;
  }
  if (handler == "after") install_handler();
  for (int p = 0; p < paths; ++p) {
    nsightkit::ScopedRange r{"path {}", p};
  }
  if (fork_child) {
    pid_t const child = ::fork();
    if (child == 0) {
      unroute_signals();
      std::printf("child %ld ready\n", static_cast<long>(::getpid()));
      std::fflush(stdout);
      for (;;) {
        nsightkit::ScopedRange r{"in child"};
        ::usleep(1000);
      }
    }
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(record, t);
  while (started.load() < threads) std::this_thread::yield();
  { nsightkit::ScopedRange r{"main loop"}; }
  auto ready = [] {
    std::printf("ready\n");
    std::fflush(stdout);
  };
  if (!capture) ready();
  if (capture) {
    nsightkit::CaptureOptions o;
    o.backends = nsightkit::CaptureBackend::none;
    nsightkit::CaptureWindow window{nsightkit::CaptureSchedule::requested(1, 3), o};
    ready();  // only now can a request find the window
    for (int n = 0; (steps == 0 || n < steps) && signalled == 0; ++n) {
      auto step = window.step();
      nsightkit::ScopedRange r{"serve"};
      ::usleep(2000);
    }
  }
  while (signalled == 0 && !capture) {
    if (write_loop) {
      nsightkit::Report::write();
    } else {
      nsightkit::ScopedRange r{"main loop"};
      ::usleep(1000);
    }
  }
  stop.store(true);
  for (auto& w : workers) w.join();
  { nsightkit::ScopedRange r{"after signal"}; }
  if (signalled != 0) std::printf("handler called for signal %d\n", signalled.load());
  if (usr1 != 0) std::printf("SIGUSR1 handled %d times\n", usr1.load());
  return 0;
}
