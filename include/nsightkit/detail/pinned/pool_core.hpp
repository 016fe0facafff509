// Internal: the bookkeeping of nsightkit::PinnedMemoryPool, free of CUDA so that it can be tested
// on machines without a GPU. The CUDA specifics come from a Backend (detail/pinned/cuda.hpp);
// tests plug in a fake whose "events" they complete by hand.
//
// Backend requirements (b is a Backend, s a Backend::Stream, e a Backend::Event):
//   Backend::Stream, Backend::Event            copyable handles; Stream is equality-comparable,
//                                              Event default-constructible
//   Backend::allocate_label, free_label        static constexpr char const*: NVTX range names
//   b.allocate(bytes) -> void*                 new memory; std::bad_alloc when out of memory,
//                                              any other exception for other failures
//   b.deallocate(p, bytes) noexcept            returns memory to the system
//   b.device_of(s) -> int                      key of the event free list (events are per device)
//   b.create_event(device) -> Event            may throw
//   b.destroy_event(e) noexcept
//   b.record(e, s) noexcept -> RecordStatus    recorded, capturing (CUDA stream capture), failed
//   b.completed(e) -> bool                     non-blocking; throws on errors other than
//                                              "not ready"
//   b.wait(e) noexcept                         blocks until e completed (destructor only)
//   b.synchronize(s) noexcept -> bool          fallback when recording failed
// allocate/deallocate are called without the pool's lock held (they may take milliseconds and
// run concurrently); the event functions are called with it held.
//
// Reuse rule. A block freed with streams gets one event recorded per stream. It is handed out
// again only after every one of its events reports completion (polled with b.completed(), never
// waited on). An allocation that finds no completed block of its size class allocates a new
// block instead of waiting: the host never blocks, and the pool grows to the number of blocks
// that are in flight at once (the pipeline depth), then stops growing.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/counter.hpp>
#include <nsightkit/detail/emit.hpp>
#include <nsightkit/detail/pinned/size_class.hpp>
#include <nsightkit/detail/pinned/status.hpp>
#include <nsightkit/pinned_types.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

namespace detail::pinned {

/// The pool's state and rules, parameterised on where memory and events come from.
template <class Backend>
class PoolCore {
 public:
  using Stream = typename Backend::Stream;  ///< the backend's stream handle
  using Event = typename Backend::Event;    ///< the backend's event handle

  /// An empty pool. Nothing is allocated (and the backend is not touched) until first use.
  explicit PoolCore(std::size_t max_cached_bytes = std::numeric_limits<std::size_t>::max(),
                    Backend backend = Backend{})
      : backend_{std::move(backend)}, max_cached_{max_cached_bytes} {}

  PoolCore(PoolCore const&) = delete;
  PoolCore& operator=(PoolCore const&) = delete;

  /// Waits for blocks still in flight, then returns every block it holds to the backend.
  /// Blocks still handed out are leaked (their owners may still use them) and reported on stderr.
  ~PoolCore() {
    std::size_t leaked_blocks = 0;
    std::size_t leaked_bytes = 0;
    for (auto& [p, b] : blocks_) {
      if (b.state == State::in_use) {
        ++leaked_blocks;
        leaked_bytes += b.size;
        continue;
      }
      for (auto& de : b.events) {
        backend_.wait(de.second);
        backend_.destroy_event(de.second);
      }
      upstream_free(p, b.size);
    }
    for (auto& [device, events] : idle_events_) {
      (void)device;
      for (Event& e : events) backend_.destroy_event(e);
    }
    if (leaked_blocks != 0) {
      std::fprintf(stderr,
                   "nsightkit: PinnedMemoryPool destroyed while %zu block(s) (%zu bytes) are still "
                   "in use; they are leaked, not freed\n",
                   leaked_blocks, leaked_bytes);
    }
  }

  /// A block of at least `bytes` bytes (nullptr for 0). Reuses a cached block of the same size
  /// class whose events all completed; otherwise allocates a new one (never waits).
  /// @throws std::bad_alloc when out of memory (after returning completed cached blocks to the
  ///         backend and retrying once) or when `bytes` is absurdly large; whatever the backend
  ///         throws for other failures.
  [[nodiscard]] void* allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    if (bytes > max_request) NSIGHTKIT_DETAIL_THROW(std::bad_alloc{});
    std::size_t const size = size_class(bytes);
    std::vector<Victim> victims;
    void* hit = nullptr;
    {
      std::lock_guard<std::mutex> lock{mutex_};
      hit = take_cached(size);
      if (hit != nullptr) {
        Block& b = blocks_.find(hit)->second;
        b.state = State::in_use;
        b.requested = bytes;
        ++stats_.cache_hits;
        stats_.bytes_cached -= size;
        --stats_.blocks_cached;
        note_in_use(size, bytes);
      }
      // Over the cap only while blocks in flight were kept: trim those that completed since.
      if (stats_.bytes_cached > max_cached_) collect_over_cap(victims);
    }
    free_victims(victims);
    if (hit != nullptr) return hit;
    void* p = nullptr;
    NSIGHTKIT_DETAIL_TRY { p = upstream_allocate(size); }
    NSIGHTKIT_DETAIL_CATCH(std::bad_alloc const&) {
      // Memory held in the cache may be what is missing: give back what is idle, try once more.
      if (release() == 0) NSIGHTKIT_DETAIL_RETHROW();
      p = upstream_allocate(size);
    }
    NSIGHTKIT_DETAIL_TRY {
      std::lock_guard<std::mutex> lock{mutex_};
      Block& b = blocks_[p];
      b.size = size;
      b.requested = bytes;
      b.state = State::in_use;
      ++stats_.host_alloc_calls;
      note_in_use(size, bytes);
    }
    NSIGHTKIT_DETAIL_CATCH(...) {
      upstream_free(p, size);
      NSIGHTKIT_DETAIL_RETHROW();
    }
    return p;
  }

  /// Gives a block back, reusable at once (or after the streams named by record_stream()).
  PoolResult deallocate(void* p, std::size_t bytes) noexcept {
    return give_back(p, bytes, nullptr);
  }

  /// Gives a block back that work on `stream` may still read or write: it is reused only after
  /// an event recorded on `stream` now (and on streams named by record_stream()) has completed.
  PoolResult deallocate(void* p, std::size_t bytes, Stream stream) noexcept {
    return give_back(p, bytes, &stream);
  }

  /// Notes that block `p` (in use) is also used on `stream`; deallocation will wait for it too.
  /// @throws std::bad_alloc if the note cannot be stored.
  PoolResult record_stream(void* p, Stream stream) {
    std::lock_guard<std::mutex> lock{mutex_};
    auto it = blocks_.find(p);
    if (it == blocks_.end()) return {PoolStatus::foreign_pointer, 0};
    Block& b = it->second;
    if (b.state != State::in_use) return {PoolStatus::double_free, b.size};
    if (std::find(b.streams.begin(), b.streams.end(), stream) == b.streams.end()) {
      b.streams.push_back(stream);
    }
    return {PoolStatus::ok, b.size};
  }

  /// Returns every cached block whose events completed to the backend; blocks still in flight stay.
  /// @return the bytes returned.
  /// @throws whatever Backend::completed() throws (a CUDA error reported by an event query).
  std::size_t release() {
    std::vector<Victim> victims;
    {
      std::lock_guard<std::mutex> lock{mutex_};
      for (auto& [size, list] : cached_) {
        for (auto it = list.begin(); it != list.end();) {
          Block& b = blocks_.find(*it)->second;
          if (!poll(b)) {
            ++it;
            continue;
          }
          victims.push_back({*it, size});
          it = list.erase(it);
        }
      }
      for (Victim const& v : victims) forget_cached(v);
    }
    std::size_t freed = 0;
    for (Victim const& v : victims) freed += v.size;
    free_victims(victims);
    return freed;
  }

  /// A consistent snapshot of the counters.
  [[nodiscard]] PinnedPoolStats stats() const {
    std::lock_guard<std::mutex> lock{mutex_};
    return stats_;
  }

  /// The cap on cached bytes given at construction.
  [[nodiscard]] std::size_t max_cached_bytes() const noexcept { return max_cached_; }

  /// The backend (tests drive their fake through it).
  [[nodiscard]] Backend& backend() noexcept { return backend_; }

 private:
  enum class State : std::uint8_t { in_use, cached, retired };

  struct Block {
    std::size_t size{0};       // the size class
    std::size_t requested{0};  // bytes asked for by the current owner
    State state{State::in_use};
    std::uint64_t freed_seq{0};                 // order of deallocation: oldest is evicted first
    std::vector<Stream> streams;                // record_stream() notes while in use
    std::vector<std::pair<int, Event>> events;  // pending (device, event) while cached
  };

  struct Victim {
    void* p;
    std::size_t size;
  };

  void* upstream_allocate(std::size_t size) {
    return in_memory_range(Backend::allocate_label, size, [&] { return backend_.allocate(size); });
  }

  void upstream_free(void* p, std::size_t size) noexcept {
    in_memory_range(Backend::free_label, size, [&] { backend_.deallocate(p, size); });
  }

  void free_victims(std::vector<Victim> const& victims) noexcept {
    for (Victim const& v : victims) upstream_free(v.p, v.size);
  }

  void note_in_use(std::size_t size, std::size_t requested) noexcept {
    ++stats_.allocations;
    ++stats_.blocks_in_use;
    stats_.bytes_in_use += size;
    pinned_bytes_in_use.add(static_cast<std::int64_t>(size));
    stats_.bytes_requested += requested;
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    stats_.peak_bytes_reserved = std::max(stats_.peak_bytes_reserved, stats_.bytes_reserved());
  }

  // True when every event of cached block b has completed; completed events go back to the
  // free list. Called with the lock held.
  bool poll(Block& b) {
    while (!b.events.empty()) {
      auto& de = b.events.back();
      if (!backend_.completed(de.second)) return false;
      idle_events_[de.first].push_back(de.second);
      b.events.pop_back();
    }
    return true;
  }

  // The oldest completed cached block of class `size`, unlinked from the cache list; or null.
  void* take_cached(std::size_t size) {
    auto it = cached_.find(size);
    if (it == cached_.end() || it->second.empty()) return nullptr;
    auto& list = it->second;
    for (auto li = list.begin(); li != list.end(); ++li) {
      if (poll(blocks_.find(*li)->second)) {
        void* p = *li;
        list.erase(li);
        return p;
      }
    }
    ++stats_.pending_misses;
    return nullptr;
  }

  // Drops a block already unlinked from cached_ from the books (the caller frees it).
  void forget_cached(Victim const& v) noexcept {
    blocks_.erase(v.p);
    stats_.bytes_cached -= v.size;
    --stats_.blocks_cached;
    ++stats_.free_host_calls;
  }

  // Picks completed cached blocks, oldest freed first, until the cache fits under the cap.
  // Blocks in flight are never picked: freeing memory a copy still reads would corrupt it.
  void collect_over_cap(std::vector<Victim>& victims) noexcept {
    NSIGHTKIT_DETAIL_TRY {
      std::vector<std::pair<std::uint64_t, void*>> order;
      order.reserve(stats_.blocks_cached);
      for (auto& [size, list] : cached_) {
        (void)size;
        for (void* p : list) order.emplace_back(blocks_.find(p)->second.freed_seq, p);
      }
      std::sort(order.begin(), order.end());
      for (auto const& [seq, p] : order) {
        (void)seq;
        if (stats_.bytes_cached <= max_cached_) break;
        Block& b = blocks_.find(p)->second;
        if (!poll(b)) continue;
        auto& list = cached_.find(b.size)->second;
        list.erase(std::find(list.begin(), list.end(), p));
        victims.push_back({p, b.size});
        forget_cached(victims.back());
      }
    }
    NSIGHTKIT_DETAIL_CATCH(...) {
      // Out of memory or an event query failed: keep the blocks; the cap is retried next time.
    }
  }

  // Takes an idle event of `device` or creates one; false if that failed.
  bool obtain_event(int device, Event& out) noexcept {
    NSIGHTKIT_DETAIL_TRY {
      auto& idle = idle_events_[device];
      if (!idle.empty()) {
        out = idle.back();
        idle.pop_back();
        return true;
      }
      out = backend_.create_event(device);
      ++stats_.events_created;
      return true;
    }
    NSIGHTKIT_DETAIL_CATCH(...) { return false; }
    return false;
  }

  void return_event(int device, Event e) noexcept {
    NSIGHTKIT_DETAIL_TRY { idle_events_[device].push_back(e); }
    NSIGHTKIT_DETAIL_CATCH(...) { backend_.destroy_event(e); }
  }

  // Records one event per stream on block b. False when the block cannot be reused safely (a
  // stream is capturing a graph, or neither an event nor a synchronization succeeded).
  bool record_events(Block& b, Stream const* named) noexcept {
    std::vector<Stream> streams = std::move(b.streams);
    b.streams.clear();
    NSIGHTKIT_DETAIL_TRY {
      if (named != nullptr && std::find(streams.begin(), streams.end(), *named) == streams.end()) {
        streams.push_back(*named);
      }
      b.events.reserve(streams.size());
    }
    NSIGHTKIT_DETAIL_CATCH(...) {
      // Out of memory for the bookkeeping: waiting for the streams is the only safe choice left.
      bool ok = named == nullptr || backend_.synchronize(*named);
      for (Stream const& s : streams) ok = backend_.synchronize(s) && ok;
      return ok;
    }
    bool reusable = true;
    for (Stream const& s : streams) {
      int device = 0;
      Event e{};
      bool have_event = false;
      NSIGHTKIT_DETAIL_TRY {
        device = backend_.device_of(s);
        have_event = obtain_event(device, e);
      }
      NSIGHTKIT_DETAIL_CATCH(...) { have_event = false; }
      RecordStatus const r = have_event ? backend_.record(e, s) : RecordStatus::failed;
      if (r == RecordStatus::recorded) {
        b.events.emplace_back(device, e);  // capacity reserved above: cannot throw
        continue;
      }
      if (have_event) return_event(device, e);
      // A graph being captured may replay from this block at any later time: never reuse it.
      if (r == RecordStatus::capturing) {
        reusable = false;
      } else if (!backend_.synchronize(s)) {
        reusable = false;
      }
    }
    return reusable;
  }

  PoolResult give_back(void* p, std::size_t bytes, Stream const* stream) noexcept {
    if (p == nullptr) return {PoolStatus::ok, 0};
    std::vector<Victim> victims;
    PoolResult result{};
    {
      std::lock_guard<std::mutex> lock{mutex_};
      auto it = blocks_.find(p);
      if (it == blocks_.end()) return {PoolStatus::foreign_pointer, 0};
      Block& b = it->second;
      result.block_size = b.size;
      if (b.state != State::in_use) return {PoolStatus::double_free, b.size};
      if (bytes > max_request || size_class(bytes) != b.size) {
        return {PoolStatus::size_mismatch, b.size};
      }
      ++stats_.deallocations;
      --stats_.blocks_in_use;
      stats_.bytes_in_use -= b.size;
      pinned_bytes_in_use.add(-static_cast<std::int64_t>(b.size));
      stats_.bytes_requested -= b.requested;
      b.requested = 0;
      bool reusable = record_events(b, stream);
      if (reusable) {
        NSIGHTKIT_DETAIL_TRY { cached_[b.size].push_back(p); }
        NSIGHTKIT_DETAIL_CATCH(...) {
          reusable = false;  // cannot list it: keep it out of circulation rather than lose track
        }
      }
      if (!reusable) {
        for (auto& de : b.events) return_event(de.first, de.second);
        b.events.clear();
        b.state = State::retired;
        stats_.bytes_retired += b.size;
        return result;
      }
      b.state = State::cached;
      b.freed_seq = ++seq_;
      stats_.bytes_cached += b.size;
      ++stats_.blocks_cached;
      if (stats_.bytes_cached > max_cached_) collect_over_cap(victims);
    }
    free_victims(victims);
    return result;
  }

  Backend backend_;
  std::size_t const max_cached_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;          // every block the pool owns, by address
  std::map<std::size_t, std::deque<void*>> cached_;  // cached blocks per class, oldest first
  std::unordered_map<int, std::vector<Event>> idle_events_;  // completed events per device
  PinnedPoolStats stats_{};
  std::uint64_t seq_{0};
};

}  // namespace detail::pinned
NSIGHTKIT_DETAIL_END_NAMESPACE
