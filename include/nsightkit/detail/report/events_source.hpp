// Internal: the "events" GPU source — a range's GPU time is the span between two events recorded
// on the stream the thread declared current (CurrentStream, GpuRange).
//
// A pair of events per range, taken from a per-thread pool, is recorded when the range begins and
// ends; pairs are resolved later without blocking (a few after each pop) and only the snapshot
// waits for the rest. Every event call goes through EventApi, a table of plain functions over
// opaque handles: the CUDA driver's by default (loaded at run time, so the report links no CUDA
// library), a fake in the tests. What it measures is the stream's wall time between the two
// events, which includes the GPU waiting for work to arrive; docs/report.md says so.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/event_api.hpp>
#include <nsightkit/detail/report/gpu_source.hpp>
#include <nsightkit/detail/report/state.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// A begin/end event pair of one range.
struct EventPair {
  void* begin{nullptr};
  void* end{nullptr};
  EventApi const* api{nullptr};
  void* stream{nullptr};
  int device{0};
  std::uint32_t node{no_node};
  std::uint32_t anchor{0};
  std::uint64_t generation{0};
  bool trace{false};
};

/// A reference event on an idle stream whose CPU time is known: GPU times are placed on the CPU
/// time line relative to it (a new one per device each second keeps float precision).
struct Anchor {
  void* event{nullptr};
  EventApi const* api{nullptr};
  int device{0};
  std::int64_t cpu_ns{0};
  std::uint32_t refs{0};
  bool current{false};
  bool alive{false};
};

struct FreeEvent {
  void* event;
  EventApi const* api;
  int device;
};

/// The events source's data for one thread.
struct EventsThread final : ThreadGpu {
  std::vector<EventPair> open;  // pairs of open frames; a slot with null api is free
  std::deque<EventPair> pending;
  std::vector<FreeEvent> free_events;
  std::vector<Anchor> anchors;
};

struct AnchorStream {
  EventApi const* api;
  int device;
  void* stream;
};

/// Pending pairs per thread beyond which new ranges are not timed (bounded memory when the GPU
/// falls far behind).
inline constexpr std::size_t max_pending_pairs = std::size_t{1} << 16;

class EventsSource final : public GpuSource {
 public:
  [[nodiscard]] char const* name() const noexcept override { return "events"; }

  void begin(State& s, ThreadData& td, Frame& f, GpuContext const& ctx) override {
    if (ctx.events == nullptr || stopped()) return;  // most ranges: no stream declared
    std::size_t const depth_limit = s.gpu_depth.load(std::memory_order_relaxed);
    if (depth_limit != 0 && f.depth > depth_limit) return;
    EventApi const& api = *ctx.events;
    EventsThread& et = data(td);
    if (et.pending.size() >= max_pending_pairs) {
      skipped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    int device = 0;
    if (int const st = api.current_device(&device); st != 0) {
      return fail(api, st, EventCall::current_device);
    }
    bool capturing = false;
    if (int const st = api.stream_capturing(ctx.stream, &capturing); st != 0) {
      return fail(api, st, EventCall::stream_capturing);
    }
    if (capturing) {  // an event recorded now would belong to the graph, not to this range's run
      skipped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::uint32_t const anchor = current_anchor(s, et, api, device);
    if (anchor == no_node) return;
    void* begin = nullptr;
    void* end = nullptr;
    if (!take_event(et, api, device, &begin)) return;
    if (!take_event(et, api, device, &end)) {
      give_event(et, &api, device, begin);
      return;
    }
    if (int const st = api.event_record(begin, ctx.stream); st != 0) {
      give_event(et, &api, device, begin);
      give_event(et, &api, device, end);
      return fail(api, st, EventCall::event_record);
    }
    ++et.anchors[anchor].refs;
    f.gpu = static_cast<std::uint32_t>(et.open.size());
    et.open.push_back(EventPair{begin, end, &api, ctx.stream, device, f.node, anchor, td.generation,
                                s.trace.load(std::memory_order_relaxed)});
    register_at_exit();
  }

  void end(State& s, ThreadData& td, Frame const& f) override {
    (void)s;
    EventsThread& et = data(td);
    if (f.gpu >= et.open.size()) return;
    EventPair const p = et.open[f.gpu];
    et.open[f.gpu].api = nullptr;
    while (!et.open.empty() && et.open.back().api == nullptr) et.open.pop_back();
    if (p.api == nullptr) return;
    if (stopped()) {
      release(et, p);
      return;
    }
    if (int const st = p.api->event_record(p.end, p.stream); st != 0) {
      release(et, p);
      return fail(*p.api, st, EventCall::event_record);
    }
    et.pending.push_back(p);
  }

  void drop_open(State& s, ThreadData& td) override {
    (void)s;
    auto* et = static_cast<EventsThread*>(td.gpu[events_slot].get());
    if (et == nullptr) return;
    for (EventPair const& p : et->open) {
      if (p.api != nullptr) release(*et, p);
    }
    et->open.clear();
  }

  void poll(State& s, ThreadData& td) override {
    auto* et = static_cast<EventsThread*>(td.gpu[events_slot].get());
    if (et != nullptr && !et->pending.empty()) resolve(s, td, *et, 4);
  }

  void flush(State& s) override {
    for (ThreadData* td : all_threads(s)) {
      std::vector<std::pair<EventApi const*, void*>> wait;
      {
        SpinGuard lock{td->lock};
        auto* et = static_cast<EventsThread*>(td->gpu[events_slot].get());
        if (et == nullptr || et->pending.empty()) continue;
        for (EventPair const& p : et->pending) {
          wait.emplace_back(p.api, p.end);
          if (p.trace && p.anchor < et->anchors.size())
            wait.emplace_back(p.api, et->anchors[p.anchor].event);
        }
      }
      // The wait happens outside the thread's lock, so the thread keeps recording meanwhile.
      for (auto const& w : wait) {
        if (stopped()) break;
        int const st = w.first->event_synchronize(w.second);
        if (st != 0 && st != w.first->not_ready) {
          fail(*w.first, st, EventCall::event_synchronize);
          break;
        }
      }
      SpinGuard lock{td->lock};
      auto* et = static_cast<EventsThread*>(td->gpu[events_slot].get());
      if (et != nullptr) resolve(s, *td, *et, static_cast<std::size_t>(-1));
    }
  }

  void shutdown(State& s) noexcept override {
    (void)s;
    shutdown_.store(true, std::memory_order_release);
  }

  void fill(State& s, GpuTimingStats& out) override {
    out.source = name();
    out.ranges_timed = timed_.load(std::memory_order_relaxed);
    out.ranges_skipped = skipped_.load(std::memory_order_relaxed);
    out.events_created = created_.load(std::memory_order_relaxed);
    for (ThreadData* td : all_threads(s)) {
      SpinGuard lock{td->lock};
      if (auto* et = static_cast<EventsThread*>(td->gpu[events_slot].get()))
        out.ranges_pending += et->pending.size();
    }
    std::lock_guard<std::mutex> lock{mutex_};
    out.error = error_;
  }

  /// Forgets a failure (tests that inject a failing EventApi, then time again).
  void clear_failure() noexcept {
    std::lock_guard<std::mutex> lock{mutex_};
    failed_.store(false, std::memory_order_release);
    error_.clear();
  }

  /// A child forked from a process that used the GPU: the parent's events and streams belong to
  /// the parent's CUDA contexts; forget them without calling CUDA.
  void forget_after_fork(State& s) noexcept {
    for (auto const& t : s.threads) {
      if (t->gpu[events_slot] != nullptr) (void)t->gpu[events_slot].release();  // leaked: no CUDA
    }
    anchor_streams_.clear();
    timed_.store(0);
    skipped_.store(0);
    created_.store(0);
  }

  /// Held across fork() (after every thread lock, the lock order), so no other thread holds it.
  void fork_lock() noexcept { mutex_.lock(); }
  void fork_unlock() noexcept { mutex_.unlock(); }

  /// True once this source made a CUDA call that initialises CUDA (created an event or stream).
  [[nodiscard]] bool used_cuda() const noexcept {
    return created_.load(std::memory_order_relaxed) != 0 || !anchor_streams_.empty();
  }

  /// Counters back to zero (Report::reset()).
  void reset_counters() noexcept override {
    timed_.store(0, std::memory_order_relaxed);
    skipped_.store(0, std::memory_order_relaxed);
  }

 private:
  bool stopped() const noexcept {
    return failed_.load(std::memory_order_relaxed) || shutdown_.load(std::memory_order_relaxed);
  }

  static EventsThread& data(ThreadData& td) {
    auto& slot = td.gpu[events_slot];
    if (slot == nullptr) slot = std::make_unique<EventsThread>();
    return static_cast<EventsThread&>(*slot);
  }

  void fail(EventApi const& api, int status, EventCall call) noexcept {
    if (api.is_shutdown(status)) {
      shutdown_.store(true, std::memory_order_release);
      return;
    }
    if (failed_.exchange(true)) return;
    char const* name = api.error_name(status);
    char const* text = api.error_string(status);
    char buf[512];
    if (status == unavailable_status) {
      std::snprintf(buf, sizeof buf, "no CUDA driver/device (%s)", text != nullptr ? text : "");
    } else {
      std::snprintf(buf, sizeof buf, "%s returned %s (%d): %s", driver_call_name(call),
                    name != nullptr ? name : "unknown error", status, text != nullptr ? text : "");
    }
    {
      std::lock_guard<std::mutex> lock{mutex_};
      NSIGHTKIT_DETAIL_TRY { error_ = buf; }
      NSIGHTKIT_DETAIL_CATCH(...) {}
    }
    std::fprintf(stderr,
                 "nsightkit report: GPU timing is off for the rest of the run: %s (CPU times are "
                 "still reported)\n",
                 buf);
  }

  bool take_event(EventsThread& et, EventApi const& api, int device, void** event) {
    for (std::size_t i = et.free_events.size(); i-- > 0;) {
      if (et.free_events[i].api == &api && et.free_events[i].device == device) {
        *event = et.free_events[i].event;
        et.free_events[i] = et.free_events.back();
        et.free_events.pop_back();
        return true;
      }
    }
    int const st = api.event_create(event);
    if (st != 0) {
      fail(api, st, EventCall::event_create);
      return false;
    }
    created_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  static void give_event(EventsThread& et, EventApi const* api, int device, void* event) {
    et.free_events.push_back(FreeEvent{event, api, device});
  }

  static void unref_anchor(EventsThread& et, std::uint32_t index) {
    if (index >= et.anchors.size()) return;
    Anchor& a = et.anchors[index];
    if (a.refs > 0) --a.refs;
    if (a.refs == 0 && !a.current && a.alive) {
      give_event(et, a.api, a.device, a.event);
      a.alive = false;
    }
  }

  static void release(EventsThread& et, EventPair const& p) {
    give_event(et, p.api, p.device, p.begin);
    give_event(et, p.api, p.device, p.end);
    unref_anchor(et, p.anchor);
  }

  /// The idle stream anchors are recorded on, one per device (and API); null on failure.
  void* anchor_stream(EventApi const& api, int device) {
    int st = 0;
    {
      std::lock_guard<std::mutex> lock{mutex_};
      for (auto const& a : anchor_streams_) {
        if (a.api == &api && a.device == device) return a.stream;
      }
      void* stream = nullptr;
      st = api.create_stream(&stream);
      if (st == 0) {
        anchor_streams_.push_back(AnchorStream{&api, device, stream});
        return stream;
      }
    }
    fail(api, st, EventCall::create_stream);
    return nullptr;
  }

  /// The current anchor of (api, device) for this thread, renewed once a second.
  std::uint32_t current_anchor(State& s, EventsThread& et, EventApi const& api, int device) {
    std::int64_t const now = s.now();
    std::uint32_t current = no_node;
    for (std::uint32_t i = 0; i < et.anchors.size(); ++i) {
      Anchor const& a = et.anchors[i];
      if (a.alive && a.current && a.api == &api && a.device == device) current = i;
    }
    if (current != no_node && now - et.anchors[current].cpu_ns < 1'000'000'000) return current;
    void* stream = anchor_stream(api, device);
    if (stream == nullptr) return no_node;
    void* event = nullptr;
    if (!take_event(et, api, device, &event)) return no_node;
    int const st = api.event_record(event, stream);
    if (st != 0) {
      give_event(et, &api, device, event);
      fail(api, st, EventCall::event_record);
      return no_node;
    }
    std::int64_t const cpu = s.now();  // the event is submitted to an idle stream: it runs now
    if (current != no_node) {
      et.anchors[current].current = false;
      et.anchors[current].refs += 1;  // balanced right below: frees it if no pair uses it
      unref_anchor(et, current);
    }
    Anchor fresh{event, &api, device, cpu, 0, true, true};
    for (std::uint32_t i = 0; i < et.anchors.size(); ++i) {
      if (!et.anchors[i].alive) {
        et.anchors[i] = fresh;
        return i;
      }
    }
    et.anchors.push_back(fresh);
    return static_cast<std::uint32_t>(et.anchors.size() - 1);
  }

  /// Resolves up to `max` completed pairs, oldest first, without waiting. Under the thread's lock.
  void resolve(State& s, ThreadData& td, EventsThread& et, std::size_t max) {
    std::size_t done = 0;
    std::size_t const cap = s.exact_samples.load(std::memory_order_relaxed);
    while (!et.pending.empty() && done < max) {
      EventPair const p = et.pending.front();
      if (stopped()) {
        release(et, p);  // CUDA is gone or broken: drop without calling it
        et.pending.pop_front();
        continue;
      }
      EventApi const& api = *p.api;
      int st = api.event_query(p.end);
      if (st == api.not_ready) break;
      if (st != 0) {
        fail(api, st, EventCall::event_query);
        continue;  // the loop drops the rest
      }
      double ns = 0.0;
      st = api.elapsed_ns(p.begin, p.end, &ns);
      if (st == api.not_ready) break;
      if (st != 0) {
        fail(api, st, EventCall::elapsed);
        continue;
      }
      double offset = 0.0;
      int anchor_st = 1;
      if (p.trace && p.anchor < et.anchors.size()) {
        anchor_st = api.elapsed_ns(et.anchors[p.anchor].event, p.begin, &offset);
        if (anchor_st == api.not_ready) break;
      }
      if (p.generation == td.generation && p.node < td.nodes.size()) {
        td.nodes[p.node].gpu.add(std::llround(ns), cap);
        timed_.fetch_add(1, std::memory_order_relaxed);
        if (p.trace && anchor_st == 0) {
          if (td.gpu_trace.size() < s.max_trace_events.load(std::memory_order_relaxed)) {
            td.gpu_trace.push_back(GpuSlice{et.anchors[p.anchor].cpu_ns + std::llround(offset),
                                            std::llround(ns), p.node,
                                            td.track(p.stream, p.device)});
          } else {
            ++td.trace_dropped;
          }
        }
      }
      release(et, p);
      et.pending.pop_front();
      ++done;
    }
  }

  void register_at_exit() {
    if (at_exit_registered_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock{mutex_};
    if (at_exit_registered_.load(std::memory_order_relaxed)) return;
    at_exit_registered_.store(true, std::memory_order_release);
    // Registered after CUDA initialised (it just ran), so it runs before CUDA's own teardown:
    // pending events are resolved while CUDA still works.
    std::atexit(&EventsSource::at_exit);
  }

  static void at_exit() noexcept;

  std::mutex mutex_;  // anchor streams, error text, at-exit registration
  std::vector<AnchorStream> anchor_streams_;
  std::string error_;
  std::atomic<bool> at_exit_registered_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> shutdown_{false};
  std::atomic<std::uint64_t> created_{0};
  std::atomic<std::uint64_t> timed_{0};
  std::atomic<std::uint64_t> skipped_{0};
};

/// The one events source of the process: default visibility, so every library embedding
/// nsightkit shares it; created on first use and never freed (used until the very end).
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<EventsSource*> events_source_ptr{nullptr};

inline EventsSource& events_source() noexcept {
  EventsSource* s = events_source_ptr.load(std::memory_order_acquire);
  if (s != nullptr) return *s;
  auto* fresh = new EventsSource{};  // bad_alloc here ends the program, as for a static's
  if (events_source_ptr.compare_exchange_strong(s, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;  // another thread (or library) created it first
  return *s;
}

inline void EventsSource::at_exit() noexcept {
  State* s = state();
  if (s != nullptr) {
    NSIGHTKIT_DETAIL_TRY { events_source().flush(*s); }
    NSIGHTKIT_DETAIL_CATCH(...) {}
  }
  // CUDA tears down after this handler: no CUDA call from the report from now on.
  events_source().shutdown_.store(true, std::memory_order_release);
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
