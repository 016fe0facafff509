// Internal: the lock of one recording thread's data, nearly free for the thread that owns it.
//
// The owner takes it at every range begin and end; other threads (a snapshot, the trace writer, a
// GPU source delivering work, fork) take it rarely. So the costs are moved to the rare side: the
// owner marks itself busy with a plain store and then reads whether another thread wants the lock
// (no locked instruction, no fence); another thread announces itself, then makes every running
// thread of the process execute a full memory barrier (Linux's membarrier, private expedited), and
// then waits until the owner is not busy. After that barrier an owner either was already seen busy
// or sees the announcement and steps back until the other thread is done. An uncontended owner
// pair costs about what two plain stores do, far less than an atomic exchange on cloud vCPUs.
//
// Where membarrier cannot be registered (another OS, an old kernel, a seccomp filter), every side
// takes an ordinary spin lock, as before.
#pragma once

#include <nsightkit/config.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>

#if defined(__linux__) && defined(__has_include)
#if __has_include(<linux/membarrier.h>) && __has_include(<sys/syscall.h>)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(SYS_membarrier)
#define NSIGHTKIT_DETAIL_MEMBARRIER 1
#endif
#endif
#endif
#ifndef NSIGHTKIT_DETAIL_MEMBARRIER
#define NSIGHTKIT_DETAIL_MEMBARRIER 0
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// A test-and-test-and-set lock: one atomic exchange to take it uncontended.
class SpinLock {
 public:
  void lock() noexcept {
    while (flag_.exchange(true, std::memory_order_acquire)) {
      while (flag_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

#if NSIGHTKIT_DETAIL_MEMBARRIER
inline long membarrier_call(int cmd) noexcept { return ::syscall(SYS_membarrier, cmd, 0, 0); }
#endif

/// True when this process may use membarrier's private expedited barrier (registered once).
inline bool membarrier_ready() noexcept {
#if NSIGHTKIT_DETAIL_MEMBARRIER
  static bool const ready = [] {
    long const commands = membarrier_call(MEMBARRIER_CMD_QUERY);
    if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }();
  return ready;
#else
  return false;
#endif
}

/// Every running thread of the process executes a full memory barrier before this returns.
inline void heavy_barrier() noexcept {
#if NSIGHTKIT_DETAIL_MEMBARRIER
  int const saved = errno;  // the caller's errno is not the report's business
  bool done = membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
  // A registration is per address space: register again (it did succeed in this process once).
  if (!done && errno == EPERM && membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
    done = membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
  constexpr int global = 1;  // MEMBARRIER_CMD_GLOBAL (MEMBARRIER_CMD_SHARED before Linux 4.16)
  if (!done) done = membarrier_call(global) == 0;
  errno = saved;
  if (done) return;
#endif
  // Not reached where registration succeeded, unless the syscall was forbidden afterwards. A
  // store still held in an owner's store buffer becomes visible within microseconds; waiting far
  // longer than that before looking at the owner stands in for the barrier.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::this_thread::sleep_for(std::chrono::milliseconds{1});
}

/// See the file comment. lock_owner()/unlock_owner() only from the owning thread (the same one
/// every time); lock()/unlock() from any thread, the owner included when it is not inside.
class OwnerLock {
 public:
  OwnerLock() noexcept : OwnerLock(membarrier_ready()) {}
  /// `asymmetric` false: a plain spin lock for everyone (tests compare both).
  explicit OwnerLock(bool asymmetric) noexcept : asymmetric_{asymmetric} {}
  OwnerLock(OwnerLock const&) = delete;
  OwnerLock& operator=(OwnerLock const&) = delete;

  [[nodiscard]] bool asymmetric() const noexcept { return asymmetric_; }

  void lock_owner() noexcept {
    if (!asymmetric_) return others_.lock();
    for (;;) {
      busy_.store(true, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the CPU's reordering: heavy_barrier
      if (!wanted_.load(std::memory_order_acquire)) return;
      busy_.store(false, std::memory_order_release);
      while (wanted_.load(std::memory_order_acquire)) std::this_thread::yield();
    }
  }

  void unlock_owner() noexcept {
    if (!asymmetric_) return others_.unlock();
    busy_.store(false, std::memory_order_release);
  }

  void lock() noexcept {
    others_.lock();
    if (!asymmetric_) return;
    wanted_.store(true, std::memory_order_relaxed);
    heavy_barrier();
    while (busy_.load(std::memory_order_acquire)) std::this_thread::yield();
  }

  void unlock() noexcept {
    if (asymmetric_) wanted_.store(false, std::memory_order_release);
    others_.unlock();
  }

 private:
  bool const asymmetric_;
  std::atomic<bool> busy_{false};    // the owner is inside
  std::atomic<bool> wanted_{false};  // another thread is inside or waiting
  SpinLock others_;                  // among the other threads; everyone's when not asymmetric
};

/// Holds an OwnerLock for a scope, from a thread that is not its owner (or the owner outside).
using SpinGuard = std::lock_guard<OwnerLock>;

/// Holds an OwnerLock for a scope, from its owner.
class OwnerGuard {
 public:
  explicit OwnerGuard(OwnerLock& l) noexcept : l_{l} { l_.lock_owner(); }
  ~OwnerGuard() { l_.unlock_owner(); }
  OwnerGuard(OwnerGuard const&) = delete;
  OwnerGuard& operator=(OwnerGuard const&) = delete;

 private:
  OwnerLock& l_;
};

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
