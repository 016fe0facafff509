// Internal: the ordering rules of nsightkit::StreamPrefetcher, free of CUDA so that they can be
// tested on machines without a GPU. The CUDA specifics come from a Backend
// (detail/prefetch/cuda.hpp); the CPU tests plug in a fake GPU that executes the queued work of
// each stream in an order the test chooses and logs every call.
//
// Backend requirements (b is a Backend, s a Backend::Stream, e a Backend::Event):
//   Backend::Stream, Backend::Event          copyable handles; Event default-constructible
//   b.create_event(role, slot) -> Event      may throw; role is "copied" or "released" (for logs)
//   b.destroy_event(e) noexcept
//   b.record(e, s)                           cudaEventRecord; throws on failure
//   b.record_nothrow(e, s) noexcept -> bool  the same for the destructor
//   b.wait(s, e)                             cudaStreamWaitEvent: s waits for e's last record
//   b.query(e) -> bool                       cudaEventQuery: true when complete; never blocks
//   b.synchronize(e)                         cudaEventSynchronize: blocks the host; throws
//   b.synchronize_nothrow(e) noexcept        the same for the destructor
//   b.synchronize_stream_nothrow(s) noexcept fallback after a failed call left the state unknown
//
// The protocol, for depth d and batch M in slot M % d (each slot has two events: `copied`,
// recorded on the copy stream after the transfer of its batch, and `released`, recorded on the
// compute stream when the consumer moved past its batch):
//   fill(M)     source() -> host batch M                        [range "prefetch source"]
//               recycle the slot's previous batch M-d: if its `copied` has not completed
//                 (query), block on it [range "prefetch wait"] — the host is then d batches
//                 ahead of the GPU; destroy host batch M-d (a copy may read it until then)
//               copy stream waits `released` (the compute stream is done with batch M-d)
//               transfer(host M, slot) on the copy stream      [range "prefetch copy"]
//               record `copied` on the copy stream
//   deliver(N)  compute stream waits `copied` of batch N; the consumer gets batch N
//   advance     record `released` of batch N on the compute stream; fill(N+d); deliver(N+1)
//   start       fill(0) … fill(d-1); deliver(0)
// A source that runs dry, or throws, is not called again; a batch whose source call or transfer
// threw is delivered as that exception, after every earlier batch.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/counter.hpp>
#include <nsightkit/detail/emit.hpp>
#include <nsightkit/detail/function.hpp>
#include <nsightkit/prefetch_types.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

namespace detail::prefetch {

/// The largest depth a prefetcher accepts: each level holds a device slot and two events.
inline constexpr std::size_t max_depth = 64;

/// Throws std::invalid_argument naming the first problem with a prefetcher's arguments.
inline void check_arguments(std::size_t depth, bool has_source, bool has_transfer,
                            bool has_slot_factory) {
  if (depth == 0) {
    NSIGHTKIT_DETAIL_THROW(std::invalid_argument{
        "nsightkit::StreamPrefetcher: depth must be at least 1 (1 = no overlap, 2 = double "
        "buffering), got 0"});
  }
  if (depth > max_depth) {
    NSIGHTKIT_DETAIL_THROW(std::invalid_argument{
        "nsightkit::StreamPrefetcher: depth " + std::to_string(depth) + " exceeds the maximum of " +
        std::to_string(max_depth) + " (each level holds one device slot)"});
  }
  if (!has_source) {
    NSIGHTKIT_DETAIL_THROW(
        std::invalid_argument{"nsightkit::StreamPrefetcher: the source is an empty function"});
  }
  if (!has_transfer) {
    NSIGHTKIT_DETAIL_THROW(
        std::invalid_argument{"nsightkit::StreamPrefetcher: the transfer is an empty function"});
  }
  if (!has_slot_factory) {
    NSIGHTKIT_DETAIL_THROW(std::invalid_argument{
        "nsightkit::StreamPrefetcher: the slot factory is an empty function"});
  }
}

/// The end of a prefetcher's range (a sentinel: a prefetcher is an input range).
struct End {};

/// The input iterator of a prefetcher: dereferencing gives the current batch, ++ releases it
/// and moves to the next (which may throw the exception of the batch that failed).
template <class CoreT>
class Iterator {
 public:
  using iterator_category = std::input_iterator_tag;  ///< single pass
  using value_type = typename CoreT::Batch;           ///< the batch type
  using difference_type = std::ptrdiff_t;             ///< required by iterator_traits
  using pointer = value_type*;                        ///< pointer to the batch
  using reference = value_type&;                      ///< reference to the batch

  /// A singular iterator.
  Iterator() noexcept = default;
  /// An iterator over `core`'s current batch.
  explicit Iterator(CoreT* core) noexcept : core_{core} {}

  /// The current batch. @throws std::logic_error at the end
  reference operator*() const { return core_->current(); }
  /// The current batch. @throws std::logic_error at the end
  pointer operator->() const { return &core_->current(); }
  /// Releases the current batch and moves to the next. @throws what the next batch failed with
  Iterator& operator++() {
    core_->advance();
    return *this;
  }
  /// As prefix ++ (an input iterator's post-increment need not return the old value).
  void operator++(int) { core_->advance(); }

  /// True when no batch is current.
  friend bool operator==(Iterator const& i, End) noexcept {
    return i.core_ == nullptr || !i.core_->holding();
  }
  /// True when no batch is current.
  friend bool operator==(End e, Iterator const& i) noexcept { return i == e; }
  /// True while a batch is current.
  friend bool operator!=(Iterator const& i, End e) noexcept { return !(i == e); }
  /// True while a batch is current.
  friend bool operator!=(End e, Iterator const& i) noexcept { return !(i == e); }

 private:
  CoreT* core_{nullptr};
};

/// The state and rules of a prefetcher (see the file comment), parameterised on the backend.
/// Single-threaded by design: the consumer's thread drives it. Not copyable or movable (the
/// iterator and the transfer refer to it by address).
template <class Backend, class HostBatch, class Slot>
class Core {
 public:
  using Stream = typename Backend::Stream;                               ///< backend stream handle
  using Event = typename Backend::Event;                                 ///< backend event handle
  using Batch = PrefetchedBatch<HostBatch, Slot>;                        ///< what the consumer sees
  using Source = std::function<std::optional<HostBatch>()>;              ///< produces host batches
  using Transfer = std::function<void(HostBatch&, Slot&, std::size_t)>;  ///< enqueues copies
  using SlotFactory = std::function<Slot(std::size_t)>;                  ///< makes the device slots
  using iterator = Iterator<Core>;                                       ///< the input iterator

  /// Makes `depth` slots with `make_slot(0)` … `make_slot(depth - 1)` and two events per slot.
  /// Nothing is fetched before begin().
  /// @throws std::invalid_argument for a bad depth or an empty function; whatever make_slot or
  ///         Backend::create_event throws
  Core(Source source, Transfer transfer, SlotFactory const& make_slot, std::size_t depth,
       Stream compute, Stream copy, Backend backend = Backend{})
      : backend_{std::move(backend)},
        source_{std::move(source)},
        transfer_{std::move(transfer)},
        compute_{compute},
        copy_{copy},
        depth_{depth} {
    check_arguments(depth, static_cast<bool>(source_), static_cast<bool>(transfer_),
                    static_cast<bool>(make_slot));
    NSIGHTKIT_DETAIL_TRY {
      entries_.reserve(depth);
      for (std::size_t i = 0; i < depth; ++i) {
        entries_.push_back(std::make_unique<Entry>(make_slot(i), i));
      }
      for (auto& e : entries_) {
        e->copied = backend_.create_event("copied", e->batch.slot_index_);
        e->has_copied = true;
        e->released = backend_.create_event("released", e->batch.slot_index_);
        e->has_released = true;
      }
    }
    NSIGHTKIT_DETAIL_CATCH(...) {
      destroy_events();
      NSIGHTKIT_DETAIL_RETHROW();
    }
  }

  Core(Core const&) = delete;
  Core& operator=(Core const&) = delete;

  /// Waits for the work that may still touch a slot or a host batch — the copies in flight, and
  /// the compute work queued while a batch was held — then destroys events, host batches and
  /// slots. Never throws.
  ~Core() {
    std::int64_t waiting = 0;
    for (auto const& e : entries_) waiting += e->state == State::ready ? 1 : 0;
    prefetch_batches_waiting.add(-waiting);
    if (holding_) {
      // break, or an exception in the loop body: the consumer's queued work may read the slot.
      Entry& e = entry(current_);
      if (backend_.record_nothrow(e.released, compute_)) {
        e.release_recorded = true;
      } else {
        broken_ = true;
      }
      holding_ = false;
    }
    if (broken_) {
      // A failed call left it open what was queued: wait for both streams entirely.
      backend_.synchronize_stream_nothrow(copy_);
      backend_.synchronize_stream_nothrow(compute_);
    }
    for (auto& e : entries_) {
      if (e->release_recorded) backend_.synchronize_nothrow(e->released);
      if (e->copy_pending) backend_.synchronize_nothrow(e->copied);
    }
    destroy_events();
  }

  /// Starts the pipeline (the first `depth` batches) and returns an iterator on batch 0.
  /// @throws std::logic_error when called twice; the exception of batch 0 if it failed;
  ///         the backend's errors
  iterator begin() {
    start();
    return iterator{this};
  }

  /// The end sentinel.
  [[nodiscard]] End end() const noexcept { return {}; }

  /// Issues the first `depth` transfers and delivers batch 0 (see begin()).
  void start() {
    if (started_) {
      NSIGHTKIT_DETAIL_THROW(std::logic_error{
          "nsightkit::StreamPrefetcher: begin() was already called; a prefetcher is one pass "
          "over its source"});
    }
    started_ = true;
    for (std::size_t k = 0; k < depth_; ++k) fill(k);
    deliver(0);
  }

  /// Releases the current batch, issues the transfer `depth` batches ahead, delivers the next.
  /// @throws std::logic_error when no batch is current; the exception of the next batch if it
  ///         failed; the backend's errors
  void advance() {
    if (!holding_) {
      NSIGHTKIT_DETAIL_THROW(
          std::logic_error{"nsightkit::StreamPrefetcher: ++ on an iterator at the end"});
    }
    std::size_t const n = current_;
    guarded([&] {
      Entry& e = entry(n);
      backend_.record(e.released, compute_);
      e.release_recorded = true;
      e.state = State::idle;
      holding_ = false;
      fill(n + depth_);
    });
    deliver(n + 1);
  }

  /// True while the consumer holds a batch (between delivery and the next advance).
  [[nodiscard]] bool holding() const noexcept { return holding_; }

  /// The batch the consumer holds. @throws std::logic_error when none is held
  [[nodiscard]] Batch& current() {
    if (!holding_) {
      NSIGHTKIT_DETAIL_THROW(std::logic_error{
          "nsightkit::StreamPrefetcher: no current batch (the iterator is at the end)"});
    }
    return entry(current_).batch;
  }

  /// The number of slots (1 = no overlap, 2 = double buffering, …).
  [[nodiscard]] std::size_t depth() const noexcept { return depth_; }

  /// The counters so far.
  [[nodiscard]] PrefetchStats const& stats() const noexcept { return stats_; }

  /// The counters, for the transfer layer (bytes copied).
  [[nodiscard]] PrefetchStats& mutable_stats() noexcept { return stats_; }

  /// The backend (tests drive their fake through it).
  [[nodiscard]] Backend& backend() noexcept { return backend_; }

 private:
  enum class State : std::uint8_t { idle, ready, faulted, held };

  struct Entry {
    Entry(Slot&& slot, std::size_t slot_index) : batch{BatchKey{}, std::move(slot), slot_index} {}
    Batch batch;
    Event copied{};
    Event released{};
    bool has_copied{false};
    bool has_released{false};
    bool copy_pending{false};  // `copied` recorded and not yet seen complete by the host
    bool release_recorded{
        false};  // `released` recorded and no copy into the slot waited on it since
    State state{State::idle};
    std::exception_ptr error{};  // the failure of the batch filled into this entry
  };

  Entry& entry(std::size_t batch_index) noexcept { return *entries_[batch_index % depth_]; }

  // Runs backend work; a failure there leaves the queued work unknown: stop, and let the
  // destructor synchronize both streams.
  template <class F>
  void guarded(F&& f) {
    NSIGHTKIT_DETAIL_TRY { f(); }
    NSIGHTKIT_DETAIL_CATCH(...) {
      broken_ = true;
      holding_ = false;
      NSIGHTKIT_DETAIL_RETHROW();
    }
  }

  // Fetches batch m and issues its transfer (see the file comment). The exceptions of the
  // source and the transfer are kept for delivery; the backend's propagate.
  void fill(std::size_t m) {
    Entry& e = entry(m);
    e.state = State::idle;
    if (source_done_) return;
    std::exception_ptr error;
    std::optional<HostBatch> next = fetch(m, error);
    if (!error && !next) {
      source_done_ = true;
      return;
    }
    recycle(e);
    e.batch.index_ = m;
    if (!error) {
      NSIGHTKIT_DETAIL_TRY {
        e.batch.host_.emplace(std::move(*next));
        ++stats_.fetched;
      }
      NSIGHTKIT_DETAIL_CATCH(...) { error = std::current_exception(); }
    }
    if (error) {
      fault(e, std::move(error));
      return;
    }
    if (e.release_recorded) {
      // The slot is rewritten only after the compute work on its previous batch completed.
      guarded([&] { backend_.wait(copy_, e.released); });
      e.release_recorded = false;
    }
    {
      ScopedEmit<DefaultDomain> const range{Attributes{Payload{static_cast<std::uint64_t>(m)}},
                                            "prefetch copy"};
      NSIGHTKIT_DETAIL_TRY { transfer_(*e.batch.host_, e.batch.device_, m); }
      NSIGHTKIT_DETAIL_CATCH(...) { error = std::current_exception(); }
    }
    // Also after a failed transfer: whatever it queued is covered by the event.
    guarded([&] { backend_.record(e.copied, copy_); });
    e.copy_pending = true;
    if (error) {
      fault(e, std::move(error));
      return;
    }
    e.state = State::ready;
    prefetch_batches_waiting.add(1);
  }

  // Calls the source inside its range; its exception is kept in `error`. (Built in place:
  // HostBatch need not be assignable.)
  std::optional<HostBatch> fetch(std::size_t m, std::exception_ptr& error) {
    ScopedEmit<DefaultDomain> const range{Attributes{Payload{static_cast<std::uint64_t>(m)}},
                                          "prefetch source"};
    NSIGHTKIT_DETAIL_TRY { return source_(); }
    NSIGHTKIT_DETAIL_CATCH(...) { error = std::current_exception(); }
    return std::nullopt;
  }

  // Before the entry takes a new batch: its previous copy must be complete, because that copy
  // may read the previous host batch, which is destroyed here, and to bound how far the host
  // runs ahead of the GPU (pinned staging in flight). Blocks only when the GPU is behind.
  void recycle(Entry& e) {
    if (e.copy_pending) {
      guarded([&] {
        if (!backend_.query(e.copied)) {
          ScopedEmit<DefaultDomain> const range{
              Attributes{Payload{static_cast<std::uint64_t>(e.batch.index_)}}, "prefetch wait"};
          ++stats_.host_waits;
          backend_.synchronize(e.copied);
        }
      });
      e.copy_pending = false;
    }
    e.batch.host_.reset();
  }

  void fault(Entry& e, std::exception_ptr error) noexcept {
    source_done_ = true;  // never call the source again
    e.error = std::move(error);
    e.state = State::faulted;
  }

  void deliver(std::size_t n) {
    Entry& e = entry(n);
    if (e.state == State::faulted && e.batch.index_ == n) {
      e.state = State::idle;
      std::exception_ptr const error = std::exchange(e.error, nullptr);
      std::rethrow_exception(error);
    }
    if (e.state != State::ready || e.batch.index_ != n) return;  // the source ran dry
    guarded([&] { backend_.wait(compute_, e.copied); });
    e.state = State::held;
    prefetch_batches_waiting.add(-1);
    current_ = n;
    holding_ = true;
    ++stats_.delivered;
  }

  void destroy_events() noexcept {
    for (auto& e : entries_) {
      if (e->has_copied) backend_.destroy_event(e->copied);
      if (e->has_released) backend_.destroy_event(e->released);
      e->has_copied = false;
      e->has_released = false;
    }
  }

  Backend backend_;
  Source source_;
  Transfer transfer_;
  Stream compute_;
  Stream copy_;
  std::size_t depth_;
  std::vector<std::unique_ptr<Entry>> entries_;
  PrefetchStats stats_{};
  std::size_t current_{0};  // index of the batch the consumer holds, while holding_
  bool holding_{false};
  bool started_{false};
  bool source_done_{false};  // the source ran dry or threw: never call it again
  bool broken_{false};       // a backend call failed: the destructor synchronizes the streams
};

template <class It, class Sent, class HostBatch, class = void>
struct IsBatchIterator : std::false_type {};

template <class It, class Sent, class HostBatch>
struct IsBatchIterator<It, Sent, HostBatch,
                       std::void_t<decltype(*std::declval<It&>()), decltype(++std::declval<It&>()),
                                   decltype(static_cast<bool>(std::declval<It const&>() ==
                                                              std::declval<Sent const&>()))>>
    : std::is_constructible<HostBatch, decltype(*std::declval<It&>())> {};

/// True when [It, Sent) is an iterator range whose elements construct a HostBatch.
template <class It, class Sent, class HostBatch>
inline constexpr bool is_batch_iterator = IsBatchIterator<It, Sent, HostBatch>::value;

/// A source over an iterator range: each call constructs the next HostBatch from `*it`.
template <class It, class Sent, class HostBatch>
struct RangeSource {
  It it;     ///< the next element
  Sent end;  ///< the end of the range

  /// The next batch, or std::nullopt at the end.
  std::optional<HostBatch> operator()() {
    if (it == end) return std::nullopt;
    std::optional<HostBatch> batch{std::in_place, *it};
    ++it;
    return batch;
  }
};

}  // namespace detail::prefetch
NSIGHTKIT_DETAIL_END_NAMESPACE
