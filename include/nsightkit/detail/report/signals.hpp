// Internal: the report's signal handler — the part of the signal path that runs in the signal's
// context. It only sets a bit, writes one byte to the watcher's pipe (watcher.hpp), and calls the
// handler the program had installed before the report's, at once and with the same arguments, as
// the program would have seen it; the writing happens on the watcher's thread.
//
// Roles: an `end` signal (ReportOptions::signals) makes the report write every output, then do
// what the signal did before: the program's handler (already called here), or the default action
// (the watcher restores it and raises the signal again, so the process ends by that signal). A
// second end signal whose default action the report will take, arriving while the outputs are
// written, ends the process at once. A `trigger` signal (ReportOptions::trigger_signal) requests
// a capture. A signal the process ignored (SIG_IGN) is left ignored. When the report's handler is
// no longer wanted (the watcher stopped, at exit) it acts as the previous disposition would.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/signal_names.hpp>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#if !defined(_WIN32)
#include <pthread.h>
#include <unistd.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Blocks every asynchronous signal in the calling thread (a thread the report owns), so that
/// signals reach the program's threads as they did before the report started it.
inline void block_async_signals() noexcept {
#if !defined(_WIN32)
  sigset_t set;
  sigfillset(&set);
  for (int const sync : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) {
    sigdelset(&set, sync);
  }
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
#endif
}

}  // namespace detail::report

namespace detail::report::signals {

#if !defined(_WIN32)

/// Signal numbers the report can handle are below this (one bit each in `pending`).
inline constexpr int max_signal = 64;

enum class Role : unsigned char { none, end, trigger };

/// One signal as the report handles it.
struct Slot {
  std::atomic<Role> role{Role::none};  // read by the handler
  struct sigaction previous {};        // set before the handler is installed, read by it
  bool installed{false};               // under Signals::mutex
};

struct Signals {
  std::mutex mutex;  // install() and uninstall()
  Slot slots[max_signal];
  std::atomic<std::uint64_t> pending{0};  // a bit per signal received and not handled yet
  std::atomic<int> wake_fd{-1};           // the watcher's pipe; -1: no watcher, act as before
  std::atomic<int> ending{0};             // the end signal being handled with its default action
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
                  std::atomic<int>::is_always_lock_free && std::atomic<Role>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

NSIGHTKIT_DETAIL_VISIBLE inline Signals signal_state{};

/// Whether `a` is a handler function (not SIG_DFL or SIG_IGN).
inline bool is_handler(struct sigaction const& a) noexcept {
  if ((a.sa_flags & SA_SIGINFO) != 0) return a.sa_sigaction != nullptr;
  return a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN;
}

/// Writes `text` to stderr (async-signal-safe).
inline void say(char const* text) noexcept {
  std::size_t const n = std::strlen(text);
  ssize_t const rc = ::write(2, text, n);
  (void)rc;
}

/// Takes `sig`'s default action now: from a handler the signal is delivered when it returns.
inline void default_action(int sig) noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

/// Does what `previous` would have done with the signal (in the handler's context).
inline void act_as_before(int sig, struct sigaction const& previous, siginfo_t* info,
                          void* context) noexcept {
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler == SIG_DFL) {
    default_action(sig);
  } else if (previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  }
}

inline void on_signal(int sig, siginfo_t* info, void* context) noexcept;

/// Whether the report's handler is the one the process runs for `sig` now (async-signal-safe).
inline bool owned(int sig) noexcept {
  struct sigaction now {};
  if (::sigaction(sig, nullptr, &now) != 0) return false;
  return (now.sa_flags & SA_SIGINFO) != 0 && now.sa_sigaction == &on_signal;
}

/// The handler. Async-signal-safe: atomics, write(2), sigaction, raise, and the program's own
/// previous handler.
inline void on_signal(int sig, siginfo_t* info, void* context) noexcept {
  int const saved = errno;
  if (sig <= 0 || sig >= max_signal) return;
  Signals& st = signal_state;
  Slot& slot = st.slots[sig];
  Role const role = slot.role.load(std::memory_order_acquire);
  int const fd = st.wake_fd.load(std::memory_order_acquire);
  if (role == Role::none || fd < 0) {
    act_as_before(sig, slot.previous, info, context);
    errno = saved;
    return;
  }
  bool const program_handles = is_handler(slot.previous);
  if (role == Role::end && !program_handles) {
    int expected = 0;
    if (!st.ending.compare_exchange_strong(expected, sig, std::memory_order_acq_rel)) {
      say("nsightkit report: ");
      say(signal_full_name(sig));
      say(" while the outputs are being written: the process ends now (outputs not yet in place "
          "are lost; those already written are whole)\n");
      default_action(sig);
      errno = saved;
      return;
    }
  }
  st.pending.fetch_or(std::uint64_t{1} << sig, std::memory_order_acq_rel);
  char const byte = static_cast<char>(sig);
  ssize_t const rc = ::write(fd, &byte, 1);  // a full pipe already holds a wake-up
  (void)rc;
  if (program_handles) act_as_before(sig, slot.previous, info, context);
  errno = saved;
}

/// Installs the handler for `ends` (role end) and `trigger` (role trigger; 0: none), and gives
/// every other signal it held back to what the process had before. Returns the signals left
/// alone because the process ignores them.
inline std::vector<int> install(std::vector<int> const& ends, int trigger) {
  std::vector<int> ignored;
  std::lock_guard<std::mutex> lock{signal_state.mutex};
  for (int sig = 1; sig < max_signal; ++sig) {
    Role want = sig == trigger ? Role::trigger : Role::none;
    for (int const e : ends) {
      if (e == sig) want = Role::end;
    }
    Slot& slot = signal_state.slots[sig];
    if (want == Role::none) {
      if (!slot.installed) continue;
      slot.role.store(Role::none, std::memory_order_release);
      if (owned(sig)) {  // a handler installed after the report's stays; ours then acts as before
        ::sigaction(sig, &slot.previous, nullptr);
        slot.installed = false;
      }
      continue;
    }
    if (slot.installed) {
      slot.role.store(want, std::memory_order_release);
      continue;
    }
    struct sigaction now {};
    if (::sigaction(sig, nullptr, &now) != 0) continue;
    if ((now.sa_flags & SA_SIGINFO) == 0 && now.sa_handler == SIG_IGN) {
      ignored.push_back(sig);
      continue;
    }
    slot.previous = now;
    slot.role.store(want, std::memory_order_release);
    struct sigaction ours {};
    ours.sa_sigaction = &on_signal;
    // The program's own handler keeps its mask and its choice of restarting interrupted calls;
    // where it had none, interrupted calls restart (the program never sees EINTR it did not ask
    // for).
    bool const program = is_handler(now);
    if (program) {
      ours.sa_mask = now.sa_mask;
    } else {
      sigemptyset(&ours.sa_mask);
    }
    ours.sa_flags =
        SA_SIGINFO | (program ? (now.sa_flags & (SA_RESTART | SA_ONSTACK)) : SA_RESTART);
    if (::sigaction(sig, &ours, nullptr) == 0) {
      slot.installed = true;
    } else {
      slot.role.store(Role::none, std::memory_order_release);
    }
  }
  return ignored;
}

/// Gives every signal back to what the process had before (at exit).
inline void uninstall() { (void)install({}, 0); }

/// The role of `sig` now.
inline Role role_of(int sig) noexcept {
  if (sig <= 0 || sig >= max_signal) return Role::none;
  return signal_state.slots[sig].role.load(std::memory_order_acquire);
}

/// Whether the program had its own handler for `sig` when the report installed its own.
inline bool program_handles(int sig) noexcept {
  return sig > 0 && sig < max_signal && is_handler(signal_state.slots[sig].previous);
}

#endif  // !_WIN32

}  // namespace detail::report::signals
NSIGHTKIT_DETAIL_END_NAMESPACE
