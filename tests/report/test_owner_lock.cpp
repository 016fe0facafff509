// The lock of a recording thread's data (detail/report/owner_lock.hpp): the owner's side without
// a locked instruction (where membarrier is available) and the other threads' side exclude each
// other, each waits for the other, and a forked child can still take it.
#include <nsightkit/detail/report/owner_lock.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#if defined(__unix__)
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#endif

namespace nd = nsightkit::detail::report;

namespace {

struct Shared {
  std::int64_t a{0};
  std::int64_t b{0};
};

// The owner adds 1 to both fields, two other threads add 1000 to both and check that they are
// equal: a torn update (either side inside while the other is) shows as a != b, or as a lost
// update in the totals (and as a data race under ThreadSanitizer).
void exclusion(nd::OwnerLock& lock) {
  constexpr int owner_rounds = 200000;
  constexpr int other_rounds = 300;
  Shared shared;
  std::atomic<int> torn{0};
  std::atomic<bool> owner_done{false};
  std::thread owner{[&] {
    for (int i = 0; i < owner_rounds; ++i) {
      lock.lock_owner();
      ++shared.a;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      ++shared.b;
      lock.unlock_owner();
    }
    owner_done = true;
  }};
  std::vector<std::thread> others;
  for (int t = 0; t < 2; ++t) {
    others.emplace_back([&] {
      for (int i = 0; i < other_rounds; ++i) {
        lock.lock();
        if (shared.a != shared.b) ++torn;
        shared.a += 1000;
        shared.b += 1000;
        lock.unlock();
        std::this_thread::yield();
      }
    });
  }
  owner.join();
  for (auto& t : others) t.join();
  REQUIRE(owner_done);
  CHECK(torn == 0);
  std::int64_t const expected = owner_rounds + std::int64_t{2} * other_rounds * 1000;
  CHECK(shared.a == expected);
  CHECK(shared.b == expected);
}

using Side = void (nd::OwnerLock::*)() noexcept;

// A second thread takes `lock` with `hold`, writes `first`, waits 30 ms, writes `second` and
// leaves with `release`; once it is inside, this thread takes the lock with `take` and returns
// the value it reads there.
int read_after_wait(nd::OwnerLock& lock, Side hold, Side release, Side take, Side give, int first,
                    int second) {
  int value = 0;
  std::atomic<bool> inside{false};
  std::thread holder{[&] {
    (lock.*hold)();
    inside = true;
    value = first;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    value = second;
    (lock.*release)();
  }};
  while (!inside) std::this_thread::yield();
  (lock.*take)();
  int const seen = value;
  (lock.*give)();
  holder.join();
  return seen;
}

}  // namespace

TEST_CASE("an owner lock is asymmetric exactly where membarrier is ready") {
  nd::OwnerLock lock;
  CHECK(lock.asymmetric() == nd::membarrier_ready());
  CHECK(nd::membarrier_ready() == nd::membarrier_ready());  // decided once
  CHECK_FALSE(nd::OwnerLock{false}.asymmetric());
#if NSIGHTKIT_DETAIL_MEMBARRIER
  INFO("membarrier compiled in; ready here: " << nd::membarrier_ready());
#endif
}

TEST_CASE("the owner and the other threads never hold an owner lock at once") {
  SECTION("asymmetric where available") {
    nd::OwnerLock lock;
    exclusion(lock);
  }
  SECTION("a plain spin lock for everyone") {
    nd::OwnerLock lock{false};
    exclusion(lock);
  }
}

TEST_CASE("each side of an owner lock waits for the other to leave") {
  for (bool asymmetric : {true, false}) {
    if (asymmetric && !nd::membarrier_ready()) continue;
    INFO("asymmetric: " << asymmetric);
    nd::OwnerLock lock{asymmetric};
    // Another thread holds it: the owner waits, then sees everything it wrote.
    CHECK(read_after_wait(lock, &nd::OwnerLock::lock, &nd::OwnerLock::unlock,
                          &nd::OwnerLock::lock_owner, &nd::OwnerLock::unlock_owner, 1, 2) == 2);
    // The owner holds it: another thread waits, then sees everything it wrote.
    CHECK(read_after_wait(lock, &nd::OwnerLock::lock_owner, &nd::OwnerLock::unlock_owner,
                          &nd::OwnerLock::lock, &nd::OwnerLock::unlock, 4, 5) == 5);
  }
}

#if defined(__unix__)
TEST_CASE("a forked child takes an owner lock from either side") {
  nd::OwnerLock lock;
  lock.lock_owner();
  lock.unlock_owner();
  pid_t const child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    lock.lock();  // the other side's barrier in a new address space
    lock.unlock();
    lock.lock_owner();
    lock.unlock_owner();
    nd::OwnerLock fresh;
    fresh.lock();
    fresh.unlock();
    ::_exit(0);
  }
  int status = -1;
  pid_t waited = 0;
  for (int i = 0; i < 1000 && waited == 0; ++i) {  // at most 10 s: a hang fails, not blocks
    waited = ::waitpid(child, &status, WNOHANG);
    if (waited == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (waited == 0) {
    ::kill(child, SIGKILL);
    (void)::waitpid(child, &status, 0);
  }
  REQUIRE(waited == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
#endif
