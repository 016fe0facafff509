// Pinned memory on the CPU: the pool's rules (size classes, statistics, stream-ordered reuse,
// cap, release, misuse detection, threads) through detail::pinned::PoolCore with a fake backend
// whose events the test completes by hand; the public types' contracts; and the clear CudaError
// at first use where no driver or GPU exists (on a GPU machine the same tests check success).
#include "support.hpp"

#include <nsightkit/detail/pinned/pool_core.hpp>
#include <nsightkit/pinned.hpp>
#include <nsightkit/stream.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <new>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

// ---- a fake backend -------------------------------------------------------------------------
// Memory from operator new; "streams" are ints and "events" complete only when the test says so
// (finish(stream)), in stream order, as CUDA's do. It also checks how the pool uses it: frees of
// unknown memory, wrong sizes, events recorded on another device's stream, use of destroyed
// events — each appended to `errors`, which every test expects empty.
namespace nsk_test {

struct FakeState {
  struct EventRecord {
    int device{0};
    int stream{-1};
    std::uint64_t ticket{0};
    bool destroyed{false};
  };

  mutable std::mutex mutex;
  std::unordered_map<void*, std::size_t> live;  // memory handed to the pool, by address
  std::size_t live_bytes{0};
  std::size_t budget{std::numeric_limits<std::size_t>::max()};  // more live bytes: bad_alloc
  std::uint64_t allocations{0};
  std::uint64_t frees{0};
  std::map<int, std::uint64_t> recorded;   // per stream: events recorded so far
  std::map<int, std::uint64_t> completed;  // per stream: events completed so far
  std::vector<EventRecord> events;         // by Event::id
  std::set<int> capturing;                 // streams "capturing a graph"
  std::set<int> record_fails;              // streams on which recording fails
  std::set<int> sync_fails;                // streams on which synchronizing fails
  bool query_throws{false};
  std::vector<int> synchronized;  // streams synchronized, in order
  std::uint64_t waits{0};
  std::vector<std::string> errors;  // misuse of the backend by the pool

  void finish(int stream) {
    std::lock_guard<std::mutex> lock{mutex};
    completed[stream] = recorded[stream];
  }
  std::size_t live_count() const {
    std::lock_guard<std::mutex> lock{mutex};
    return live.size();
  }
  std::size_t live_total() const {
    std::lock_guard<std::mutex> lock{mutex};
    return live_bytes;
  }
  std::uint64_t free_count() const {
    std::lock_guard<std::mutex> lock{mutex};
    return frees;
  }
  std::size_t events_created() const {
    std::lock_guard<std::mutex> lock{mutex};
    return events.size();
  }
  std::vector<std::string> error_list() const {
    std::lock_guard<std::mutex> lock{mutex};
    return errors;
  }
};

struct FakeBackend {
  using Stream = int;
  struct Event {
    std::size_t id{std::numeric_limits<std::size_t>::max()};
  };
  static constexpr char const* allocate_label = "fake_alloc";
  static constexpr char const* free_label = "fake_free";
  static constexpr std::size_t alignment = 4096;

  std::shared_ptr<FakeState> state = std::make_shared<FakeState>();

  void* allocate(std::size_t bytes) {
    std::lock_guard<std::mutex> lock{state->mutex};
    if (bytes > state->budget || state->live_bytes > state->budget - bytes) throw std::bad_alloc{};
    void* p = ::operator new (bytes, std::align_val_t{alignment});
    state->live.emplace(p, bytes);
    state->live_bytes += bytes;
    ++state->allocations;
    return p;
  }

  void deallocate(void* p, std::size_t bytes) noexcept {
    std::lock_guard<std::mutex> lock{state->mutex};
    auto it = state->live.find(p);
    if (it == state->live.end()) {
      state->errors.emplace_back("free of unknown memory");
      return;
    }
    if (it->second != bytes) state->errors.emplace_back("free with the wrong size");
    state->live_bytes -= it->second;
    state->live.erase(it);
    ++state->frees;
    ::operator delete (p, std::align_val_t{alignment});
  }

  // Streams 0..99 live on device 0, 100..199 on device 1, ...
  int device_of(int stream) const { return stream / 100; }

  Event create_event(int device) {
    std::lock_guard<std::mutex> lock{state->mutex};
    state->events.push_back({device, -1, 0, false});
    return Event{state->events.size() - 1};
  }

  void destroy_event(Event e) noexcept {
    std::lock_guard<std::mutex> lock{state->mutex};
    auto& r = state->events.at(e.id);
    if (r.destroyed) state->errors.emplace_back("event destroyed twice");
    r.destroyed = true;
  }

  nsightkit::detail::pinned::RecordStatus record(Event e, int stream) noexcept {
    std::lock_guard<std::mutex> lock{state->mutex};
    auto& r = state->events.at(e.id);
    if (r.destroyed) state->errors.emplace_back("record of a destroyed event");
    if (r.device != device_of(stream))
      state->errors.emplace_back("event recorded on another device's stream");
    if (state->capturing.count(stream) != 0)
      return nsightkit::detail::pinned::RecordStatus::capturing;
    if (state->record_fails.count(stream) != 0)
      return nsightkit::detail::pinned::RecordStatus::failed;
    r.stream = stream;
    r.ticket = ++state->recorded[stream];
    return nsightkit::detail::pinned::RecordStatus::recorded;
  }

  bool completed(Event e) {
    std::lock_guard<std::mutex> lock{state->mutex};
    if (state->query_throws) throw std::runtime_error{"fake event query failure"};
    auto const& r = state->events.at(e.id);
    if (r.stream < 0) {
      state->errors.emplace_back("query of an event never recorded");
      return true;
    }
    return r.ticket <= state->completed[r.stream];
  }

  void wait(Event e) noexcept {
    std::lock_guard<std::mutex> lock{state->mutex};
    ++state->waits;
    auto const& r = state->events.at(e.id);
    if (r.stream >= 0) state->completed[r.stream] = std::max(state->completed[r.stream], r.ticket);
  }

  bool synchronize(int stream) noexcept {
    std::lock_guard<std::mutex> lock{state->mutex};
    state->synchronized.push_back(stream);
    if (state->sync_fails.count(stream) != 0) return false;
    state->completed[stream] = state->recorded[stream];
    return true;
  }
};

using FakePool = nsightkit::detail::pinned::PoolCore<FakeBackend>;

}  // namespace nsk_test

using nsightkit::PinnedAllocator;
using nsightkit::PinnedMemoryPool;
using nsightkit::PinnedMemoryResource;
using nsightkit::PinnedPoolOptions;
using nsightkit::StreamView;
using nsightkit::detail::ByteSize;
using nsightkit::detail::pinned::PoolStatus;
using nsightkit::detail::pinned::size_class;
using nsightkit::testing::Recorder;
using nsk_test::expect;
using nsk_test::FakePool;

namespace {

constexpr std::size_t KiB = std::size_t{1} << 10;
constexpr std::size_t MiB = std::size_t{1} << 20;

// The invariants every snapshot must satisfy.
void check_invariants(nsightkit::PinnedPoolStats const& s) {
  CHECK(s.allocations == s.cache_hits + s.host_alloc_calls);
  CHECK(s.bytes_requested <= s.bytes_in_use);
  CHECK(s.peak_bytes_in_use >= s.bytes_in_use);
  CHECK(s.peak_bytes_reserved >= s.bytes_reserved());
}

// True when a CUDA device is usable here (the GPU machine); false on the CPU CI.
bool have_gpu() {
  int n = 0;
  bool const ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  (void)cudaGetLastError();
  return ok;
}

std::vector<std::string>& misuse_messages() {
  static std::vector<std::string> messages;
  return messages;
}
void record_misuse(char const* message) { misuse_messages().emplace_back(message); }

}  // namespace

// ---- size classes -----------------------------------------------------------------------------

TEST_CASE("size classes: a page at least, four classes per power of two, powers of two exact") {
  CHECK(size_class(0) == 0);
  CHECK(size_class(1) == 4 * KiB);
  CHECK(size_class(4 * KiB) == 4 * KiB);
  CHECK(size_class(4 * KiB + 1) == 5 * KiB);
  CHECK(size_class(6 * KiB - 1) == 6 * KiB);
  CHECK(size_class(7 * KiB + 1) == 8 * KiB);
  CHECK(size_class(8 * KiB + 1) == 10 * KiB);
  CHECK(size_class(1 * MiB) == 1 * MiB);
  CHECK(size_class(1 * MiB + 1) == 1 * MiB + 256 * KiB);
  CHECK(size_class(1 * MiB + 300 * KiB) == 1 * MiB + 512 * KiB);
  CHECK(size_class(64 * MiB) == 64 * MiB);
  CHECK(size_class(100 * MiB) == 112 * MiB);
  CHECK(PinnedMemoryPool::block_size(100 * MiB) == 112 * MiB);
  CHECK(PinnedMemoryPool::block_size(std::numeric_limits<std::size_t>::max()) == 0);
}

TEST_CASE("size classes: never smaller than the request, at most 25% larger, monotonic") {
  std::mt19937_64 rng{42};
  std::uniform_int_distribution<int> shift{0, 40};
  std::size_t previous_request = 0;
  std::size_t previous_class = 0;
  for (int i = 0; i < 20000; ++i) {
    std::size_t const base = std::size_t{1} << shift(rng);
    std::size_t const bytes = base + (rng() % base);
    std::size_t const c = size_class(bytes);
    INFO("bytes " << bytes << " class " << c);
    REQUIRE(c >= bytes);
    REQUIRE(c % 1024 == 0);
    if (bytes > 4 * KiB) REQUIRE((c - bytes) * 4 < c);
    // Same class for every request between a class boundary and the class.
    REQUIRE(size_class(c) == c);
    if (bytes >= previous_request) REQUIRE(c >= previous_class);
    previous_request = bytes;
    previous_class = c;
  }
}

TEST_CASE("byte counts in range names use binary units") {
  CHECK(fmt::format("{}", ByteSize{0}) == "0 B");
  CHECK(fmt::format("{}", ByteSize{100}) == "100 B");
  CHECK(fmt::format("{}", ByteSize{1023}) == "1023 B");
  CHECK(fmt::format("{}", ByteSize{4 * KiB}) == "4 KiB");
  CHECK(fmt::format("{}", ByteSize{1 * MiB}) == "1 MiB");
  CHECK(fmt::format("{}", ByteSize{64 * MiB}) == "64 MiB");
  CHECK(fmt::format("{}", ByteSize{3 * MiB / 2}) == "1.5 MiB");
  CHECK(fmt::format("{}", ByteSize{std::size_t{5} << 30}) == "5 GiB");
}

// ---- the pool's rules, with a fake backend ------------------------------------------------------

TEST_CASE("a freed block is reused for the same size class and the statistics follow") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  void* a = pool.allocate(1000);
  REQUIRE(a != nullptr);
  auto s = pool.stats();
  CHECK(s.allocations == 1);
  CHECK(s.host_alloc_calls == 1);
  CHECK(s.cache_hits == 0);
  CHECK(s.bytes_in_use == 4 * KiB);
  CHECK(s.bytes_requested == 1000);
  CHECK(s.blocks_in_use == 1);
  CHECK(fake.live_total() == 4 * KiB);

  CHECK(pool.deallocate(a, 1000).status == PoolStatus::ok);
  s = pool.stats();
  CHECK(s.bytes_in_use == 0);
  CHECK(s.bytes_requested == 0);
  CHECK(s.bytes_cached == 4 * KiB);
  CHECK(s.blocks_cached == 1);
  CHECK(s.deallocations == 1);

  void* b = pool.allocate(4000);  // same class: the cached block
  CHECK(b == a);
  s = pool.stats();
  CHECK(s.cache_hits == 1);
  CHECK(s.host_alloc_calls == 1);
  CHECK(s.bytes_cached == 0);
  CHECK(s.bytes_requested == 4000);

  void* c = pool.allocate(5000);  // another class: new memory
  CHECK(c != a);
  s = pool.stats();
  CHECK(s.host_alloc_calls == 2);
  CHECK(s.bytes_in_use == 4 * KiB + 5 * KiB);
  CHECK(s.peak_bytes_in_use == 9 * KiB);
  CHECK(s.peak_bytes_reserved == 9 * KiB);
  check_invariants(s);

  CHECK(pool.deallocate(b, 4000).status == PoolStatus::ok);
  CHECK(pool.deallocate(c, 5000).status == PoolStatus::ok);
  CHECK(pool.stats().peak_bytes_in_use == 9 * KiB);
  CHECK(fake.error_list().empty());
}

namespace {
std::vector<std::pair<std::string, double>> counter_samples;  // what the test sink received
void record_counter(char const* name, double value) noexcept {
  counter_samples.emplace_back(name, value);
}
}  // namespace

TEST_CASE("the pools' bytes in use go to the counter sink as a process-wide total") {
  auto const previous = nsightkit::detail::counter_sink.exchange(&record_counter);
  counter_samples.clear();
  auto const base = static_cast<double>(nsightkit::detail::pinned_bytes_in_use.value());
  {
    FakePool one;
    FakePool two;
    void* a = one.allocate(1000);  // 4 KiB class
    void* b = two.allocate(5000);  // 5 KiB class
    CHECK(one.deallocate(a, 1000).status == PoolStatus::ok);
    CHECK(two.deallocate(b, 5000).status == PoolStatus::ok);
  }
  nsightkit::detail::counter_sink.store(previous);
  std::vector<double> values;
  for (auto const& [name, value] : counter_samples) {
    CHECK(name == "pinned pool bytes in use");
    values.push_back(value - base);
  }
  CHECK(values == std::vector<double>{4.0 * KiB, 9.0 * KiB, 5.0 * KiB, 0.0});
}

TEST_CASE("core: zero bytes is nullptr and no allocation, freeing nullptr does nothing") {
  FakePool pool;
  CHECK(pool.allocate(0) == nullptr);
  CHECK(pool.deallocate(nullptr, 0).status == PoolStatus::ok);
  CHECK(pool.deallocate(nullptr, 0, 3).status == PoolStatus::ok);
  auto const s = pool.stats();
  CHECK(s.allocations == 0);
  CHECK(s.deallocations == 0);
  CHECK(pool.backend().state->allocations == 0);
}

TEST_CASE("an absurd size is std::bad_alloc before the backend is asked") {
  FakePool pool;
  CHECK_THROWS_AS(pool.allocate(std::numeric_limits<std::size_t>::max()), std::bad_alloc);
  CHECK(pool.backend().state->allocations == 0);
  CHECK(pool.stats().allocations == 0);
}

TEST_CASE("stream-ordered reuse: a block freed on a stream waits for that stream's event") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  int const stream = 7;
  void* a = pool.allocate(1 * MiB);
  pool.deallocate(a, 1 * MiB, stream);

  // The "copy" on stream 7 has not finished: a new block, and the host did not wait.
  void* b = pool.allocate(1 * MiB);
  CHECK(b != a);
  auto s = pool.stats();
  CHECK(s.pending_misses == 1);
  CHECK(s.host_alloc_calls == 2);
  CHECK(fake.synchronized.empty());
  CHECK(fake.waits == 0);

  fake.finish(stream);  // now the event completed
  void* c = pool.allocate(1 * MiB);
  CHECK(c == a);
  s = pool.stats();
  CHECK(s.cache_hits == 1);
  CHECK(s.pending_misses == 1);
  check_invariants(s);

  pool.deallocate(b, 1 * MiB);
  pool.deallocate(c, 1 * MiB);
  CHECK(fake.error_list().empty());
}

TEST_CASE("stream-ordered reuse: the oldest completed block is handed out first") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  void* a = pool.allocate(64 * KiB);
  void* b = pool.allocate(64 * KiB);
  void* c = pool.allocate(64 * KiB);
  pool.deallocate(a, 64 * KiB, 1);  // still in flight on stream 1
  pool.deallocate(b, 64 * KiB, 2);
  pool.deallocate(c, 64 * KiB);  // idle at once
  fake.finish(2);
  void* first = pool.allocate(64 * KiB);
  CHECK(first == b);  // a is older but still in flight
  void* second = pool.allocate(64 * KiB);
  CHECK(second == c);
  void* d = pool.allocate(64 * KiB);
  CHECK(d != a);
  fake.finish(1);
  void* last = pool.allocate(64 * KiB);
  CHECK(last == a);
  CHECK(pool.stats().cache_hits == 3);
  for (void* p : {first, second, d, last}) pool.deallocate(p, 64 * KiB);
  CHECK(pool.stats().bytes_in_use == 0);
  CHECK(fake.error_list().empty());
}

TEST_CASE("events complete in stream order: a later free on the same stream waits longer") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  void* a = pool.allocate(8 * KiB);
  void* b = pool.allocate(8 * KiB);
  pool.deallocate(a, 8 * KiB, 5);
  {
    std::lock_guard<std::mutex> lock{fake.mutex};
    fake.completed[5] = 1;  // the stream passed a's event only
  }
  pool.deallocate(b, 8 * KiB, 5);
  void* first = pool.allocate(8 * KiB);
  CHECK(first == a);
  void* c = pool.allocate(8 * KiB);
  CHECK(c != b);
  fake.finish(5);
  void* last = pool.allocate(8 * KiB);
  CHECK(last == b);
  for (void* p : {first, c, last}) pool.deallocate(p, 8 * KiB);
  CHECK(fake.error_list().empty());
}

TEST_CASE("record_stream: a block used on several streams waits for all of them") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  void* a = pool.allocate(16 * KiB);
  CHECK(pool.record_stream(a, 1).status == PoolStatus::ok);
  CHECK(pool.record_stream(a, 2).status == PoolStatus::ok);
  CHECK(pool.record_stream(a, 2).status == PoolStatus::ok);  // noted once
  pool.deallocate(a, 16 * KiB, 3);
  fake.finish(1);
  fake.finish(3);
  void* b = pool.allocate(16 * KiB);
  CHECK(b != a);  // stream 2 still uses it
  fake.finish(2);
  void* again = pool.allocate(16 * KiB);
  CHECK(again == a);
  CHECK(fake.events_created() == 3);
  {
    std::lock_guard<std::mutex> lock{fake.mutex};
    CHECK(fake.recorded[2] == 1);
  }

  // Streams noted by record_stream are waited for by a free without a stream too; and the
  // notes do not survive into the next owner.
  CHECK(pool.record_stream(b, 4).status == PoolStatus::ok);
  pool.deallocate(b, 16 * KiB);
  void* c = pool.allocate(16 * KiB);
  CHECK(c != b);
  fake.finish(4);
  CHECK(pool.allocate(16 * KiB) == b);
  pool.deallocate(b, 16 * KiB);
  CHECK(pool.allocate(16 * KiB) == b);
  for (void* p : {again, b, c}) pool.deallocate(p, 16 * KiB);
  CHECK(pool.stats().bytes_in_use == 0);
  CHECK(fake.error_list().empty());
}

TEST_CASE("events are pooled: a steady pipeline creates no new events") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  for (int i = 0; i < 200; ++i) {
    void* p = pool.allocate(256 * KiB);
    pool.deallocate(p, 256 * KiB, 9);
    fake.finish(9);
  }
  auto const s = pool.stats();
  CHECK(s.events_created == 1);
  CHECK(fake.events_created() == 1);
  CHECK(s.host_alloc_calls == 1);
  CHECK(s.cache_hits == 199);

  // Two blocks in flight at a time: the pool grows to two blocks and two events, then stops.
  FakePool pipelined;
  auto& fake2 = *pipelined.backend().state;
  void* in_flight = nullptr;
  for (int i = 0; i < 100; ++i) {
    void* p = pipelined.allocate(256 * KiB);
    pipelined.deallocate(p, 256 * KiB, 9);
    if (in_flight != nullptr) {
      std::lock_guard<std::mutex> lock{fake2.mutex};
      fake2.completed[9] = fake2.recorded[9] - 1;  // all but the newest copy done
    }
    in_flight = p;
  }
  auto const t = pipelined.stats();
  CHECK(t.host_alloc_calls == 2);
  CHECK(t.events_created <= 2);
  CHECK(fake.error_list().empty());
  CHECK(fake2.error_list().empty());
}

TEST_CASE("events are kept per device: an event is only recorded on its device's streams") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  for (int i = 0; i < 10; ++i) {
    void* a = pool.allocate(4 * KiB);
    void* b = pool.allocate(4 * KiB);
    pool.deallocate(a, 4 * KiB, 1);    // device 0
    pool.deallocate(b, 4 * KiB, 101);  // device 1
    fake.finish(1);
    fake.finish(101);
  }
  CHECK(pool.stats().events_created == 2);
  CHECK(fake.error_list().empty());
}

TEST_CASE("cap: completed cached blocks beyond max_cached_bytes are freed, oldest first") {
  FakePool pool{2 * MiB};
  auto& fake = *pool.backend().state;
  void* a = pool.allocate(1 * MiB);
  void* b = pool.allocate(1 * MiB);
  void* c = pool.allocate(1 * MiB);
  pool.deallocate(a, 1 * MiB);
  pool.deallocate(b, 1 * MiB);
  CHECK(fake.free_count() == 0);
  pool.deallocate(c, 1 * MiB);  // 3 MiB cached > 2 MiB: a (the oldest) goes
  auto s = pool.stats();
  CHECK(s.bytes_cached == 2 * MiB);
  CHECK(s.blocks_cached == 2);
  CHECK(s.free_host_calls == 1);
  CHECK(fake.free_count() == 1);
  {
    std::lock_guard<std::mutex> lock{fake.mutex};
    CHECK(fake.live.count(a) == 0);
    CHECK(fake.live.count(b) == 1);
    CHECK(fake.live.count(c) == 1);
  }
  CHECK(pool.max_cached_bytes() == 2 * MiB);
  CHECK(fake.error_list().empty());
}

TEST_CASE("cap: blocks in flight are never freed early, and are trimmed once complete") {
  FakePool pool{0};  // cache nothing
  auto& fake = *pool.backend().state;
  void* a = pool.allocate(1 * MiB);
  pool.deallocate(a, 1 * MiB);  // idle: freed at once
  CHECK(fake.free_count() == 1);
  CHECK(pool.stats().bytes_cached == 0);

  void* b = pool.allocate(1 * MiB);
  pool.deallocate(b, 1 * MiB, 4);  // in flight: kept although over the cap
  CHECK(fake.free_count() == 1);
  CHECK(pool.stats().bytes_cached == 1 * MiB);

  void* c = pool.allocate(2 * MiB);  // still in flight: still kept
  CHECK(fake.free_count() == 1);
  fake.finish(4);
  void* d = pool.allocate(4 * MiB);  // the next call that finds it complete trims it
  CHECK(fake.free_count() == 2);
  auto const s = pool.stats();
  CHECK(s.bytes_cached == 0);
  CHECK(s.free_host_calls == 2);
  pool.deallocate(c, 2 * MiB);
  pool.deallocate(d, 4 * MiB);
  CHECK(fake.live_count() == 0);
  CHECK(fake.error_list().empty());
}

TEST_CASE("cap: a cache hit also trims blocks that completed since") {
  FakePool pool{1 * MiB};
  auto& fake = *pool.backend().state;
  void* a = pool.allocate(1 * MiB);
  void* b = pool.allocate(2 * MiB);
  pool.deallocate(a, 1 * MiB, 1);
  pool.deallocate(b, 2 * MiB, 1);  // 3 MiB cached, all in flight: kept
  CHECK(pool.stats().bytes_cached == 3 * MiB);
  fake.finish(1);
  void* c = pool.allocate(1 * MiB);  // a hit; b completed meanwhile and is over the cap
  CHECK(c == a);
  auto const s = pool.stats();
  CHECK(s.bytes_cached == 0);
  CHECK(s.free_host_calls == 1);
  CHECK(fake.live_count() == 1);
  pool.deallocate(c, 1 * MiB);
  CHECK(pool.stats().bytes_cached == 1 * MiB);  // at the cap, kept
  CHECK(fake.error_list().empty());
}

TEST_CASE("release returns completed cached blocks and keeps those in flight") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  void* a = pool.allocate(1 * MiB);
  void* b = pool.allocate(2 * MiB);
  void* c = pool.allocate(4 * MiB);
  pool.deallocate(a, 1 * MiB);
  pool.deallocate(b, 2 * MiB, 6);
  CHECK(pool.release() == 1 * MiB);
  auto s = pool.stats();
  CHECK(s.bytes_cached == 2 * MiB);
  CHECK(s.bytes_in_use == 4 * MiB);
  CHECK(s.free_host_calls == 1);
  CHECK(fake.live_count() == 2);
  CHECK(pool.release() == 0);
  fake.finish(6);
  CHECK(pool.release() == 2 * MiB);
  CHECK(pool.stats().bytes_cached == 0);
  CHECK(fake.live_count() == 1);  // c is still in use
  pool.deallocate(c, 4 * MiB);
  CHECK(pool.release() == 4 * MiB);
  s = pool.stats();
  CHECK(s.host_alloc_calls == s.free_host_calls);
  CHECK(s.bytes_reserved() == 0);
  CHECK(fake.live_count() == 0);
  CHECK(fake.error_list().empty());
}

TEST_CASE("misuse is detected: foreign pointer, double free, wrong size, record on a free block") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  int on_stack = 0;
  CHECK(pool.deallocate(&on_stack, sizeof on_stack).status == PoolStatus::foreign_pointer);
  CHECK(pool.deallocate(&on_stack, sizeof on_stack, 1).status == PoolStatus::foreign_pointer);
  CHECK(pool.record_stream(&on_stack, 1).status == PoolStatus::foreign_pointer);

  void* a = pool.allocate(10 * KiB);
  char* inside = static_cast<char*>(a) + 16;  // inside a block is still not a block
  CHECK(pool.deallocate(inside, 10 * KiB).status == PoolStatus::foreign_pointer);
  auto const wrong = pool.deallocate(a, 100 * KiB);
  CHECK(wrong.status == PoolStatus::size_mismatch);
  CHECK(wrong.block_size == 10 * KiB);
  CHECK(pool.deallocate(a, 9 * KiB + 1).status == PoolStatus::ok);  // same class is the same block
  auto const twice = pool.deallocate(a, 10 * KiB);
  CHECK(twice.status == PoolStatus::double_free);
  CHECK(twice.block_size == 10 * KiB);
  CHECK(pool.deallocate(a, 10 * KiB, 2).status == PoolStatus::double_free);
  CHECK(pool.record_stream(a, 2).status == PoolStatus::double_free);

  // None of that changed the books.
  auto const s = pool.stats();
  CHECK(s.deallocations == 1);
  CHECK(s.blocks_cached == 1);
  CHECK(s.bytes_in_use == 0);
  CHECK(s.events_created == 0);
  CHECK(fake.error_list().empty());
  CHECK(std::string{nsightkit::detail::pinned::describe(PoolStatus::double_free)}.find(
            "double free") != std::string::npos);
}

TEST_CASE("out of memory: cached idle blocks are released and the allocation retried once") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  void* a = pool.allocate(1 * MiB);
  void* b = pool.allocate(1 * MiB);
  pool.deallocate(a, 1 * MiB);
  pool.deallocate(b, 1 * MiB);
  {
    std::lock_guard<std::mutex> lock{fake.mutex};
    fake.budget = 2 * MiB + 512 * KiB;
  }
  void* c = pool.allocate(2 * MiB);  // fails at first, succeeds after the cache was released
  CHECK(c != nullptr);
  auto s = pool.stats();
  CHECK(s.free_host_calls == 2);
  CHECK(s.host_alloc_calls == 3);
  CHECK(s.bytes_cached == 0);
  check_invariants(s);

  // Nothing left to release: std::bad_alloc, books unchanged.
  CHECK_THROWS_AS(pool.allocate(1 * MiB), std::bad_alloc);
  s = pool.stats();
  CHECK(s.allocations == 3);
  CHECK(s.bytes_in_use == 2 * MiB);
  pool.deallocate(c, 2 * MiB);
  CHECK(fake.error_list().empty());
}

TEST_CASE("a free on a stream capturing a graph retires the block: never reused") {
  std::shared_ptr<nsk_test::FakeState> state;
  {
    FakePool pool;
    state = pool.backend().state;
    state->capturing.insert(3);
    void* a = pool.allocate(32 * KiB);
    pool.deallocate(a, 32 * KiB, 3);
    auto s = pool.stats();
    CHECK(s.bytes_retired == 32 * KiB);
    CHECK(s.bytes_cached == 0);
    CHECK(s.bytes_reserved() == 32 * KiB);
    state->finish(3);
    void* b = pool.allocate(32 * KiB);
    CHECK(b != a);
    CHECK(pool.release() == 0);
    CHECK(pool.deallocate(a, 32 * KiB).status == PoolStatus::double_free);
    pool.deallocate(b, 32 * KiB);
  }
  CHECK(state->live_count() == 0);  // returned at destruction
  CHECK(state->error_list().empty());
}

TEST_CASE("a failed event record falls back to synchronizing the stream") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  fake.record_fails.insert(8);
  void* a = pool.allocate(4 * KiB);
  pool.deallocate(a, 4 * KiB, 8);
  CHECK(fake.synchronized == std::vector<int>{8});
  CHECK(pool.allocate(4 * KiB) == a);  // the stream was idle after the synchronization

  fake.sync_fails.insert(8);  // and when that fails too, the block is retired
  pool.deallocate(a, 4 * KiB, 8);
  CHECK(pool.stats().bytes_retired == 4 * KiB);
  void* b = pool.allocate(4 * KiB);
  CHECK(b != a);
  pool.deallocate(b, 4 * KiB);
  CHECK(fake.error_list().empty());
}

TEST_CASE("an event query failure propagates from allocate and the pool stays consistent") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  void* a = pool.allocate(4 * KiB);
  pool.deallocate(a, 4 * KiB, 1);
  fake.query_throws = true;
  CHECK_THROWS_AS(pool.allocate(4 * KiB), std::runtime_error);
  fake.query_throws = false;
  fake.finish(1);
  void* b = pool.allocate(4 * KiB);
  CHECK(b == a);
  pool.deallocate(b, 4 * KiB);
  check_invariants(pool.stats());
}

TEST_CASE("destruction waits for blocks in flight, frees the cache, leaks blocks in use") {
  auto state = std::make_shared<nsk_test::FakeState>();
  void* kept = nullptr;
  {
    FakePool pool{std::numeric_limits<std::size_t>::max(), nsk_test::FakeBackend{state}};
    void* a = pool.allocate(4 * KiB);
    void* b = pool.allocate(8 * KiB);
    kept = pool.allocate(16 * KiB);
    pool.deallocate(a, 4 * KiB, 2);
    pool.deallocate(b, 8 * KiB);
  }
  CHECK(state->waits == 1);
  CHECK(state->live_count() == 1);
  {
    std::lock_guard<std::mutex> lock{state->mutex};
    CHECK(state->live.count(kept) == 1);
    for (auto const& e : state->events) CHECK(e.destroyed);
  }
  nsk_test::FakeBackend{state}.deallocate(kept, 16 * KiB);
  CHECK(state->error_list().empty());
}

TEST_CASE("new memory is an NVTX range with the byte count and a cache hit emits nothing") {
  FakePool pool;
  Recorder rec;
  void* a = pool.allocate(1 * MiB);
  CHECK(rec.lines() == expect({"push nsightkit fake_alloc 1 MiB", "pop nsightkit"}));
  if constexpr (nsightkit::enabled) {
    auto const events = rec.range_events();
    REQUIRE(events.size() == 2);
    CHECK(events[0].payload.kind == nsightkit::testing::RecordedPayload::Kind::uint64);
    CHECK(events[0].payload.u == 1 * MiB);
  }
  pool.deallocate(a, 1 * MiB);
  void* b = pool.allocate(1 * MiB);
  CHECK(rec.lines().size() == (nsightkit::enabled ? 2u : 0u));
  pool.deallocate(b, 1 * MiB);
  CHECK(pool.release() == 1 * MiB);
  CHECK(rec.lines() == expect({"push nsightkit fake_alloc 1 MiB", "pop nsightkit",
                               "push nsightkit fake_free 1 MiB", "pop nsightkit"}));
  CHECK(rec.open_ranges() == 0);
}

TEST_CASE("many threads allocating and freeing: no block is handed out twice, books balance") {
  FakePool pool;
  auto& fake = *pool.backend().state;
  constexpr int threads = 8;
  constexpr int iterations = 3000;
  std::size_t const sizes[] = {100, 4 * KiB, 5 * KiB, 64 * KiB, 1 * MiB};
  std::atomic<int> overwritten{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng{static_cast<unsigned>(t + 1)};
      int const stream = t;  // each thread its own stream
      std::vector<std::pair<void*, std::size_t>> held;
      for (int i = 0; i < iterations; ++i) {
        std::size_t const bytes = sizes[rng() % (sizeof sizes / sizeof sizes[0])];
        auto* p = static_cast<unsigned char*>(pool.allocate(bytes));
        auto const tag = static_cast<unsigned char>(t + 1);
        p[0] = tag;
        p[bytes - 1] = tag;
        held.emplace_back(p, bytes);
        if (held.size() > 3 || i + 1 == iterations) {
          for (auto const& [q, n] : held) {
            auto* c = static_cast<unsigned char*>(q);
            if (c[0] != tag || c[n - 1] != tag) overwritten.fetch_add(1);
            if (rng() % 2 == 0) {
              pool.deallocate(q, n, stream);
            } else {
              pool.deallocate(q, n);
            }
          }
          held.clear();
          if (rng() % 4 == 0) fake.finish(stream);
        }
        if (i % 1000 == 999) (void)pool.stats();
      }
    });
  }
  for (auto& w : workers) w.join();
  CHECK(overwritten.load() == 0);
  auto s = pool.stats();
  CHECK(s.allocations == std::uint64_t{threads} * iterations);
  CHECK(s.deallocations == s.allocations);
  CHECK(s.bytes_in_use == 0);
  CHECK(s.blocks_in_use == 0);
  CHECK(s.bytes_requested == 0);
  CHECK(s.blocks_cached == fake.live_count());
  CHECK(s.bytes_cached == fake.live_total());
  CHECK(s.host_alloc_calls == fake.allocations);
  CHECK(s.cache_hits > 0);
  check_invariants(s);
  for (int t = 0; t < threads; ++t) fake.finish(t);
  CHECK(pool.release() == s.bytes_cached);
  s = pool.stats();
  CHECK(s.host_alloc_calls == s.free_host_calls);
  CHECK(fake.live_count() == 0);
  CHECK(fake.error_list().empty());
}

// ---- StreamView ---------------------------------------------------------------------------------

TEST_CASE("StreamView is explicit, cannot be made from 0 or nullptr, and names default streams") {
  STATIC_REQUIRE(std::is_constructible_v<StreamView, cudaStream_t>);
  STATIC_REQUIRE_FALSE(std::is_convertible_v<cudaStream_t, StreamView>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<StreamView, int>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<StreamView, long>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<StreamView, unsigned>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<StreamView, std::nullptr_t>);
  STATIC_REQUIRE_FALSE(std::is_default_constructible_v<StreamView>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<StreamView>);
  STATIC_REQUIRE(sizeof(StreamView) == sizeof(cudaStream_t));

  constexpr StreamView d = StreamView::default_stream();
  STATIC_REQUIRE(d.is_default());
  STATIC_REQUIRE(d.value() == cudaStream_t{});
  CHECK(StreamView::legacy().value() == cudaStreamLegacy);
  CHECK(StreamView::per_thread().value() == cudaStreamPerThread);
  CHECK_FALSE(StreamView::legacy().is_default());
  CHECK(StreamView::legacy() != d);
  CHECK(StreamView::legacy() != StreamView::per_thread());

  auto* const fake_handle = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x1000});
  StreamView const s{fake_handle};
  CHECK(s.value() == fake_handle);
  CHECK(s == StreamView{fake_handle});
  CHECK(std::hash<StreamView>{}(s) == std::hash<cudaStream_t>{}(fake_handle));
}

// ---- the public types' contracts (no GPU needed) ------------------------------------------------

TEST_CASE("PinnedAllocator: allocator traits, rebind and equality") {
  using A = PinnedAllocator<float>;
  using Traits = std::allocator_traits<A>;
  STATIC_REQUIRE(std::is_same_v<Traits::value_type, float>);
  STATIC_REQUIRE(std::is_same_v<Traits::rebind_alloc<double>, PinnedAllocator<double>>);
  STATIC_REQUIRE(Traits::propagate_on_container_copy_assignment::value);
  STATIC_REQUIRE(Traits::propagate_on_container_move_assignment::value);
  STATIC_REQUIRE(Traits::propagate_on_container_swap::value);
  STATIC_REQUIRE_FALSE(Traits::is_always_equal::value);
  STATIC_REQUIRE(std::is_nothrow_copy_constructible_v<A>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<A>);

  PinnedMemoryPool p1;
  PinnedMemoryPool p2;
  auto* const h = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x2000});
  CHECK(A{} == A{});
  CHECK(A{p1} == A{p1});
  CHECK(A{p1} != A{p2});
  CHECK(A{p1} != A{});
  CHECK(A{p1, StreamView{h}} == A{p1, StreamView{h}});
  CHECK(A{p1, StreamView{h}} != A{p1});
  CHECK(A{p1, StreamView::default_stream()} != A{p1, StreamView{h}});

  A const with_stream{p1, StreamView{h}};
  PinnedAllocator<double> const rebound{with_stream};
  CHECK(rebound.pool() == &p1);
  REQUIRE(rebound.stream().has_value());
  CHECK(rebound.stream()->value() == h);
  CHECK(rebound == with_stream);
  CHECK(PinnedAllocator<double>{A{}}.pool() == nullptr);
}

TEST_CASE(
    "PinnedAllocator: zero elements is nullptr, an overflowing count is bad_array_new_length") {
  PinnedAllocator<double> a;
  CHECK(a.allocate(0) == nullptr);
  a.deallocate(nullptr, 0);
  CHECK_THROWS_AS(a.allocate(std::numeric_limits<std::size_t>::max() / 4),
                  std::bad_array_new_length);
  PinnedMemoryPool pool;
  PinnedAllocator<double> b{pool};
  CHECK(b.allocate(0) == nullptr);
  CHECK(pool.stats().allocations == 0);
}

TEST_CASE("resources: zero bytes owns nothing, bad alignment is a clear std::invalid_argument") {
  PinnedMemoryResource r;
  PinnedMemoryPool pool;
  // Not nullptr: libstdc++ declares memory_resource::allocate returns_nonnull.
  void* const z1 = r.allocate(0);
  void* const z2 = pool.allocate(0, 256);
  CHECK(z1 != nullptr);
  CHECK(z1 == z2);
  CHECK(reinterpret_cast<std::uintptr_t>(z1) % 256 == 0);
  r.deallocate(z1, 0);
  pool.deallocate(z2, 0);
  pool.deallocate(z2, 0, StreamView::default_stream());
  CHECK(pool.stats().allocations == 0);
  CHECK(pool.stats().deallocations == 0);
  CHECK_THROWS_WITH(r.allocate(64, 512), Catch::Contains("alignment 512 exceeds the 256"));
  std::size_t not_a_power_of_two = 3;  // a variable: clang rejects the constant at compile time
  CHECK_THROWS_WITH(pool.allocate(64, not_a_power_of_two),
                    Catch::Contains("alignment 3 is not a power of two"));
  CHECK_THROWS_AS(pool.allocate(64, 512), std::invalid_argument);
  CHECK(pool.stats().allocations == 0);
}

TEST_CASE("resources compare as the standard says") {
  PinnedMemoryResource a;
  PinnedMemoryResource b{cudaHostAllocPortable};
  PinnedMemoryPool p1;
  PinnedMemoryPool p2;
  std::pmr::memory_resource& ra = a;
  CHECK(ra.is_equal(b));  // cudaFreeHost frees memory of either
  CHECK(b.flags() == cudaHostAllocPortable);
  CHECK_FALSE(ra.is_equal(p1));
  CHECK(p1.is_equal(p1));
  CHECK_FALSE(p1.is_equal(p2));
  CHECK_FALSE(p1.is_equal(a));
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<PinnedMemoryPool>);
  STATIC_REQUIRE_FALSE(std::is_move_constructible_v<PinnedMemoryPool>);
}

TEST_CASE("PinnedMemoryPool reports misuse to the handler (default: message and abort)") {
  misuse_messages().clear();
  PinnedPoolOptions options;
  options.on_misuse = &record_misuse;
  PinnedMemoryPool pool{options};
  int x = 0;
  pool.deallocate(&x, sizeof x);
  pool.deallocate(&x, sizeof x, StreamView::default_stream());
  pool.record_stream(&x, StreamView::per_thread());
  REQUIRE(misuse_messages().size() == 3);
  CHECK_THAT(misuse_messages()[0], Catch::Contains("nsightkit::PinnedMemoryPool::deallocate"));
  CHECK_THAT(misuse_messages()[0], Catch::Contains("foreign pointer"));
  CHECK_THAT(misuse_messages()[2], Catch::Contains("record_stream"));
  CHECK(pool.stats().deallocations == 0);
  CHECK(PinnedMemoryPool{}.options().on_misuse == nullptr);
}

TEST_CASE("PinnedBlock: empty handles, moves, and acquire(0)") {
  PinnedMemoryPool pool;
  nsightkit::PinnedBlock empty;
  CHECK_FALSE(empty);
  CHECK(empty.data() == nullptr);
  CHECK(empty.size() == 0);
  CHECK(empty.pool() == nullptr);
  CHECK_THROWS_AS(empty.record_stream(StreamView::default_stream()), std::logic_error);
  empty.reset();
  empty.reset(StreamView::per_thread());
  nsightkit::PinnedBlock zero = pool.acquire(0);
  CHECK_FALSE(zero);
  nsightkit::PinnedBlock moved{std::move(zero)};
  CHECK_FALSE(moved);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<nsightkit::PinnedBlock>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<nsightkit::PinnedBlock>);
  CHECK(pool.stats().allocations == 0);
}

// ---- no driver / no GPU: a clear CudaError at first use -----------------------------------------

TEST_CASE("without a driver or GPU the first allocation is a clear CudaError (with one it works)") {
  bool const gpu = have_gpu();
  PinnedMemoryPool pool;  // constructing makes no CUDA call, so it succeeds everywhere
  PinnedMemoryResource resource;
  if (!gpu) {
    int n = 0;
    cudaError_t const expected = cudaGetDeviceCount(&n);
    (void)cudaGetLastError();
    INFO("cudaGetDeviceCount: " << cudaGetErrorName(expected));
    try {
      (void)pool.allocate(1 * MiB);
      FAIL("allocation succeeded without a usable device");
    } catch (nsightkit::CudaError const& e) {
      CHECK(e.code() != cudaSuccess);
      CHECK_THAT(std::string{e.what()}, Catch::Contains("cudaHostAlloc"));
      CHECK_THAT(std::string{e.what()}, Catch::Contains(cudaGetErrorName(e.code())));
      CHECK_THAT(std::string{e.what()}, Catch::Contains("pinned memory"));
    }
    CHECK_THROWS_AS(resource.allocate(4096), nsightkit::CudaError);
    std::vector<int, PinnedAllocator<int>> v;
    CHECK_THROWS_AS(v.resize(16), nsightkit::CudaError);
    std::pmr::vector<int> w{&pool};
    CHECK_THROWS_AS(w.push_back(1), nsightkit::CudaError);
    auto const s = pool.stats();
    CHECK(s.allocations == 0);
    CHECK(s.host_alloc_calls == 0);
    CHECK(s.bytes_reserved() == 0);
    // Still usable afterwards: the next attempt fails the same clear way, nothing crashes.
    CHECK_THROWS_AS(pool.allocate(1 * MiB), nsightkit::CudaError);
    return;
  }
  void* p = pool.allocate(1 * MiB);
  CHECK(p != nullptr);
  pool.deallocate(p, 1 * MiB);
  void* q = resource.allocate(4096);
  CHECK(q != nullptr);
  resource.deallocate(q, 4096);
  CHECK(pool.stats().allocations == 1);
}
