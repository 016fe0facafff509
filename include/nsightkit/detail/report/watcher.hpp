// Internal: the watcher — a thread the report owns while it handles signals, writes periodic
// snapshots or watches a trigger file. It sleeps in poll() on a pipe that the signal handler
// (signals.hpp) and the report write one byte to, and wakes for:
//   - an end signal: every output is written (the table for stdout/stderr too, unless the program
//     handles the signal itself or nsightkit::mpi merges tables), then the signal's default
//     action ends the process (the program's own handler already ran in the signal's context);
//   - a trigger (the trigger signal, or the trigger file appearing): every capture window captures
//     its next warm-up and active steps (capture_state.hpp), and the outputs are written when
//     they end; without any window, the outputs are written at once;
//   - the end of a requested capture, and the snapshot period: the file outputs are written.
// It blocks every asynchronous signal, so the kernel delivers them to the program's threads, as
// it did before the report. A forked child has none: there signals act as before the report.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/report/output/writing.hpp>
#include <nsightkit/detail/report/signal_names.hpp>
#include <nsightkit/detail/report/signals.hpp>
#include <nsightkit/detail/report/write_hook.hpp>
#include <nsightkit/report_types.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if !defined(_WIN32)
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

class Watcher;
/// The process's watcher once one was made (never freed: its thread may run until exit).
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<Watcher*> watcher_ptr{nullptr};

#if !defined(_WIN32)

class Watcher {
 public:
  static Watcher& get() {
    static Watcher* const w = new Watcher{};
    return *w;
  }
  static Watcher* existing() noexcept { return watcher_ptr.load(std::memory_order_acquire); }

  /// Applies the options' signals, trigger, trigger file and snapshot period; starts the thread
  /// when any of them is wanted. The report's state mutex must not be held.
  void configure(ReportOptions const& o) {
    bool const wanted = !o.signals.empty() || o.trigger_signal != 0 || !o.trigger_file.empty() ||
                        o.snapshot_every.count() > 0;
    {
      std::lock_guard<std::mutex> lock{mutex_};
      every_ = o.snapshot_every;
      next_snapshot_ = std::chrono::steady_clock::now() + every_;
      trigger_file_ = o.trigger_file;
      file_seen_ = FileId{};
      if (wanted && !start_locked()) return;
    }
    std::vector<int> const ignored =
        signals::install(wanted ? o.signals : std::vector<int>{}, wanted ? o.trigger_signal : 0);
    for (int const sig : ignored) {
      std::fprintf(stderr,
                   "nsightkit report: %s is ignored by this process (SIG_IGN, e.g. nohup); the "
                   "report leaves it ignored\n",
                   signal_name(sig).c_str());
    }
    wake();  // the period or the file may have changed
  }

  /// The steps of a requested capture ended: the outputs are written (on the watcher's thread).
  void capture_ended() noexcept {
    capture_writes_.fetch_add(1, std::memory_order_acq_rel);
    wake();
  }

  /// Exit: the thread finishes what it is writing and stops; signals act as they did before.
  void stop() noexcept {
    exiting_.store(true, std::memory_order_release);
    signals::signal_state.wake_fd.store(-1, std::memory_order_release);
    std::thread* t = nullptr;
    {
      std::lock_guard<std::mutex> lock{mutex_};
      stop_ = true;
      t = thread_;
      thread_ = nullptr;
    }
    char const byte = 0;
    if (write_fd_ >= 0) {
      ssize_t const rc = ::write(write_fd_, &byte, 1);
      (void)rc;
    }
    if (t != nullptr) {
      if (t->get_id() != std::this_thread::get_id()) {
        t->join();
      } else {
        t->detach();  // stopped from its own work: it returns after this
      }
      delete t;
    }
    NSIGHTKIT_DETAIL_TRY { signals::uninstall(); }
    NSIGHTKIT_DETAIL_CATCH(...) {}
  }

  /// Fork: held across it, so the child never inherits the watcher's lock taken.
  void fork_lock() noexcept { mutex_.lock(); }
  void fork_unlock() noexcept { mutex_.unlock(); }
  /// A forked child: the parent's thread does not run here and its pipe is the parent's. The
  /// child starts no thread of its own (a process forked from threads may not, POSIX says, before
  /// it execs): its signals act as they did before the report, and its outputs are written at
  /// exit. Under the lock (fork_lock()).
  void after_fork_child() noexcept {
    signals::signal_state.wake_fd.store(-1, std::memory_order_release);
    thread_ = nullptr;  // the parent's: it does not exist in the child
    if (read_fd_ >= 0) ::close(read_fd_);
    if (write_fd_ >= 0) ::close(write_fd_);
    read_fd_ = write_fd_ = -1;
    stop_ = true;
    signals::signal_state.pending.store(0, std::memory_order_relaxed);
    signals::signal_state.ending.store(0, std::memory_order_relaxed);
    capture_writes_.store(0, std::memory_order_relaxed);
  }

 private:
  Watcher() noexcept { watcher_ptr.store(this, std::memory_order_release); }

  struct FileId {
    bool seen{false};
    dev_t dev{};
    ino_t ino{};
    std::int64_t mtime_ns{0};
  };

  /// Makes the pipe and the thread if they are not there. Under mutex_.
  bool start_locked() {
    if (thread_ != nullptr) return true;
    if (stop_) return false;
    int fds[2];
    if (::pipe(fds) != 0) {
      std::fprintf(stderr,
                   "nsightkit report: cannot make the pipe its signal handler needs; signals and "
                   "snapshots are not handled\n");
      return false;
    }
    for (int const fd : fds) {
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    thread_ = new std::thread{[this] { run(); }};  // deleted by stop(), never joinable
    signals::signal_state.wake_fd.store(write_fd_, std::memory_order_release);
    return true;
  }

  void wake() noexcept {
    char const byte = 0;
    if (write_fd_ < 0) return;
    ssize_t const rc = ::write(write_fd_, &byte, 1);
    (void)rc;
  }

  /// Milliseconds until the next timed job (the snapshot, the file's next look), -1 for none.
  int timeout_ms() {
    std::lock_guard<std::mutex> lock{mutex_};
    auto const now = std::chrono::steady_clock::now();
    long long ms = -1;
    if (every_.count() > 0) {
      ms = std::chrono::duration_cast<std::chrono::milliseconds>(next_snapshot_ - now).count();
      if (ms < 0) ms = 0;
    }
    if (!trigger_file_.empty()) {
      long long const f =
          std::chrono::duration_cast<std::chrono::milliseconds>(next_file_look_ - now).count();
      ms = ms < 0 ? (f < 0 ? 0 : f) : std::min(ms, f < 0 ? 0 : f);
    }
    return ms < 0 ? -1 : static_cast<int>(std::min(ms, 60'000LL));
  }

  void run() {
    block_async_signals();
    for (;;) {
      pollfd p{read_fd_, POLLIN, 0};
      int const rc = ::poll(&p, 1, timeout_ms());
      if (rc > 0) {
        char buf[64];
        while (::read(read_fd_, buf, sizeof buf) > 0) {
        }
      }
      {
        std::lock_guard<std::mutex> lock{mutex_};
        if (stop_) return;
      }
      NSIGHTKIT_DETAIL_TRY { work(); }
      NSIGHTKIT_DETAIL_CATCH(...) {}  // out of memory: the next wake-up tries again
    }
  }

  void work() {
    std::uint64_t const bits = signals::signal_state.pending.exchange(0, std::memory_order_acq_rel);
    for (int sig = 1; sig < signals::max_signal; ++sig) {
      if ((bits & (std::uint64_t{1} << sig)) == 0) continue;
      signals::Role const role = signals::role_of(sig);
      if (role == signals::Role::trigger) {
        request_capture_now(signal_name(sig));
      } else {
        end_signal(sig);  // also for a signal whose role ended since: it was received as one
      }
    }
    if (capture_writes_.exchange(0, std::memory_order_acq_rel) != 0) {
      WriteWay way;
      way.console_table = false;
      way.occasion = "the requested capture's steps ended";
      (void)write_local(way);
    }
    auto const now = std::chrono::steady_clock::now();
    std::string file;
    bool snapshot_due = false;
    {
      std::lock_guard<std::mutex> lock{mutex_};
      if (!trigger_file_.empty() && now >= next_file_look_) {
        next_file_look_ = now + std::chrono::milliseconds(200);
        file = trigger_file_;
      }
      if (every_.count() > 0 && now >= next_snapshot_) {
        snapshot_due = true;
        next_snapshot_ = now + every_;
      }
    }
    if (!file.empty() && file_appeared(file)) request_capture_now("trigger file '" + file + "'");
    if (snapshot_due) {
      WriteWay way;
      way.console_table = false;
      way.quiet = true;
      (void)write_local(way);
    }
  }

  /// Whether the trigger file is there and new (it is removed; where it cannot be, a changed
  /// file counts as new).
  bool file_appeared(std::string const& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    FileId const id{true, st.st_dev, st.st_ino,
                    static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 +
                        static_cast<std::int64_t>(st.st_mtim.tv_nsec)};
    bool const removed = ::unlink(path.c_str()) == 0;
    std::lock_guard<std::mutex> lock{mutex_};
    if (!removed && file_seen_.seen && file_seen_.dev == id.dev && file_seen_.ino == id.ino &&
        file_seen_.mtime_ns == id.mtime_ns) {
      return false;
    }
    file_seen_ = removed ? FileId{} : id;
    return true;
  }

  /// A trigger: the capture windows capture their next steps; without any, the outputs now.
  void request_capture_now(std::string const& by) {
    if (capture_state.windows.load(std::memory_order_acquire) > 0) {
      request_capture();
      std::fprintf(stderr,
                   "nsightkit report: capture requested by %s: the capture window captures its "
                   "next warm-up and active steps; the outputs are written when they end\n",
                   by.c_str());
      return;
    }
    std::string const why = "requested by " + by + "; the program has no capture window";
    WriteWay way;
    way.console_table = false;
    way.occasion = why.c_str();
    (void)write_local(way);
  }

  /// An end signal: every output, then what the signal did before.
  void end_signal(int sig) {
    bool const program = signals::program_handles(sig);
    std::string const occasion = "at " + signal_name(sig);
    WriteWay way;
    way.console_table = !program && write_hook.load(std::memory_order_acquire) == nullptr;
    way.occasion = occasion.c_str();
    way.urgent = true;
    (void)write_local(way);
    if (program) return;  // its handler ran at the signal: the program decides what comes next
    if (exiting_.load(std::memory_order_acquire)) return;  // it exits anyway, with its status
    // No other write may begin (and be cut) before the process ends: a write that began since
    // finishes first, then the lock is kept.
    std::unique_lock<std::mutex> const last = lock_writes(true);
    std::fflush(stderr);
    signals::default_action(sig);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);  // delivered here, now: the process ends
    std::_Exit(128 + sig);                        // not reached unless the signal was lost
  }

  std::mutex mutex_;  // everything below but the thread's own work
  std::thread* thread_{nullptr};
  int read_fd_{-1};
  int write_fd_{-1};
  bool stop_{false};
  std::atomic<bool> exiting_{false};
  std::atomic<unsigned> capture_writes_{0};
  std::chrono::milliseconds every_{0};
  std::chrono::steady_clock::time_point next_snapshot_{};
  std::string trigger_file_;
  std::chrono::steady_clock::time_point next_file_look_{};
  FileId file_seen_{};
};

#endif  // !_WIN32

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
