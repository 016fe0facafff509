// Internal: attribution of GPU activities to the ranges that launched them — the heart of the
// "cupti" GPU source, kept free of CUPTI so the CPU tests drive it with synthetic activities.
//
// How it works.
// - Hot path (a launch call, on the launching thread): note_launch() stores correlation id ->
//   (thread, innermost open range, the thread's launch sequence number, call time) in a lock-free
//   CorrelationTable, and counts the launch in the thread's sequence. Ranges (begin/end) keep, per
//   thread, the sequence number at which they began; a range that launched anything leaves an
//   "instance" [seq_begin, seq_end) when it ends. No lock, no allocation per launch.
// - Activities (kernels, copies, memsets, allocations) arrive later on another thread; each is
//   looked up in the table and parked with its launch until the work is "settled".
// - Settling (a flush: snapshot, write, exit; or when too much is parked) sorts a thread's parked
//   work by sequence number; the work of an instance is the contiguous run [seq_begin, seq_end),
//   which includes the work of every range nested inside it. Per instance: busy = union of its
//   intervals (concurrent work once), span = first start to last end; summed per path node.
//   Ranges still open at a settle keep a partial sum and finish when they end.
// - Delegated launches: work launched by a thread that opens no ranges (NCCL's launch thread, a
//   library's worker) on a stream that a range made current (CurrentStream before the range) is
//   counted for that range (owner_at), as if the range had launched it: such a range reserves
//   one sequence number at its begin, and the work is given that number at a settle. A thread
//   with ranges of its own keeps its launches outside them unattributed, as before.
//
// Lock order: settle_mutex_, then State::mutex, then a ThreadData::lock, then mutex_ (innermost).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/cupti/correlation.hpp>
#include <nsightkit/detail/cupti/stream_owners.hpp>
#include <nsightkit/detail/cupti/thread_work.hpp>
#include <nsightkit/detail/report/gpu_source.hpp>
#include <nsightkit/detail/report/record.hpp>
#include <nsightkit/detail/report/state.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Where a thread's launch callback finds its thread's data (set by its first range).
struct LaunchCursor {
  AttributionThread* thread{nullptr};
};

NSIGHTKIT_DETAIL_VISIBLE inline thread_local LaunchCursor launch_cursor{};

class AttributionSource : public GpuSource {
 public:
  explicit AttributionSource(std::size_t correlation_log2 = 18) : table_{correlation_log2} {}

  // ---- fed by the backend (CUPTI, or a test) ----

  /// A launch call (kernel, copy, memset, graph launch, allocation) is entered on this thread.
  void note_launch(std::uint32_t correlation, std::int64_t now) noexcept {
    Launch l;
    l.entered = now;
    if (State const* s = state(); s != nullptr && !counting(*s)) {
      l.thread = outside_window;  // a warm-up step under window-only: dropped when it arrives
    } else if (AttributionThread* t = launch_cursor.thread) {
      l.thread = t->index;
      l.node = t->open.empty() ? no_node : t->open.back().node;
      l.seq = t->seq.load(std::memory_order_relaxed);
      l.generation = static_cast<std::uint32_t>(*t->generation);
      t->seq.store(l.seq + 1, std::memory_order_relaxed);
    }
    table_.put(correlation, l);
  }

  /// A host-blocking call `api` (interned with intern_name) returned after `ns` on the calling
  /// thread: charged to the thread's innermost range.
  void note_sync(std::uint32_t api, std::int64_t ns) noexcept {
    AttributionThread const* t = launch_cursor.thread;
    if (t == nullptr || t->open.empty()) return;
    std::uint32_t const node = t->open.back().node;
    auto const generation = static_cast<std::uint32_t>(*t->generation);
    NSIGHTKIT_DETAIL_TRY {
      std::lock_guard<std::mutex> lock{mutex_};
      ThreadWork& tw = thread_work(t->index);
      if (static_cast<std::uint32_t>(tw.generation) != generation) {
        if (tw.generation > *t->generation) return;  // a reset this thread has not seen yet
        renew(tw, *t->generation);
      }
      node_work(tw, node).add_sync(api, ns);
    }
    NSIGHTKIT_DETAIL_CATCH(...) {}
  }

  /// A stream capture begins (true) or ends (false) on the calling thread: graph nodes captured
  /// meanwhile belong to the ranges opened inside it.
  void note_capture(bool begin) noexcept {
    if (AttributionThread* t = launch_cursor.thread) {
      t->capture_base = begin ? static_cast<int>(t->open.size()) : -1;
    } else if (begin) {
      pending_capture_base() = 0;  // no range yet on this thread: every range is inside
    }
    if (!begin) pending_capture_base() = -1;
  }

  /// A graph node was created, on the calling thread: if it is being captured, the node's work
  /// will be attributed on replay to the ranges open inside the capture (their names, relative to
  /// where the capture began), under whatever range is open around the replay.
  void note_graph_node(std::uint64_t node_id) noexcept {
    AttributionThread const* t = launch_cursor.thread;
    int base = t != nullptr ? t->capture_base : -1;
    if (base < 0 && pending_capture_base() >= 0) base = 0;
    if (base < 0) return;  // built with the graph API, not captured: the launch's range gets it
    NSIGHTKIT_DETAIL_TRY {
      std::vector<Component> path;
      if (t != nullptr && t->td != nullptr) {
        for (std::size_t i = static_cast<std::size_t>(base); i < t->open.size(); ++i) {
          std::uint32_t const n = t->open[i].node;
          if (n < t->td->nodes.size()) {
            path.push_back(Component{t->td->nodes[n].domain, t->td->nodes[n].name});
          }
        }
      }
      std::lock_guard<std::mutex> lock{mutex_};
      graph_nodes_[node_id] = paths_.intern(std::move(path));
    }
    NSIGHTKIT_DETAIL_CATCH(...) {}
  }

  /// A graph's node was cloned (instantiation, or a graph copied): the clone's work is the
  /// original's.
  void note_graph_clone(std::uint64_t clone_id, std::uint64_t original_id) noexcept {
    NSIGHTKIT_DETAIL_TRY {
      std::lock_guard<std::mutex> lock{mutex_};
      auto it = graph_nodes_.find(original_id);
      if (it != graph_nodes_.end()) graph_nodes_[clone_id] = it->second;
    }
    NSIGHTKIT_DETAIL_CATCH(...) {}
  }

  /// Activities arrived (any thread). Kernel names are interned by the caller (intern_name).
  void add_activities(GpuActivity const* a, std::size_t n) {
    bool settle = false;
    {
      std::lock_guard<std::mutex> lock{mutex_};
      for (std::size_t i = 0; i < n; ++i) add_one(a[i]);
      settle = parked_ > max_parked_;
    }
    if (settle && state() != nullptr) settle_all(*state(), false);
  }

  /// CUPTI dropped `n` records (its buffers were full).
  void add_dropped(std::uint64_t n) noexcept { dropped_.fetch_add(n, std::memory_order_relaxed); }

  /// The id of a kernel name (stable for the process); 0 is "(other kernels)".
  std::uint32_t intern_name(char const* name) {
    std::lock_guard<std::mutex> lock{mutex_};
    auto it = name_by_pointer_.find(name);
    if (it != name_by_pointer_.end()) return it->second;
    auto const id = static_cast<std::uint32_t>(names_.size());
    names_.emplace_back(name != nullptr ? name : "?");
    name_by_pointer_.emplace(name, id);
    return id;
  }

  /// Parked activities beyond which the oldest work is settled without waiting for a flush.
  void set_max_parked(std::size_t n) noexcept { max_parked_ = n; }

  // ---- GpuSource ----

  void begin(State& s, ThreadData& td, Frame& f, GpuContext const& ctx) override {
    AttributionThread& t = data(td);
    launch_cursor.thread = &t;  // this thread's launch callbacks find their ranges here
    f.gpu = static_cast<std::uint32_t>(t.open.size());
    AttributionThread::Open o{f.node, t.seq.load(std::memory_order_relaxed)};
    o.stream = ctx.stream;
    if (ctx.stream != nullptr && (t.open.empty() || t.open.back().stream != ctx.stream) &&
        stream_key(ctx.stream, o.key)) {
      // It made the stream current: a sequence number of its own for what other threads launch
      // there on its behalf, inside it (and its parents) whether or not it launches anything.
      o.owns = true;
      o.start = s.now();
      t.seq.store(o.seq_begin + 1, std::memory_order_relaxed);
    }
    t.open.push_back(o);
  }

  void end(State& s, ThreadData& td, Frame const& f) override {
    AttributionThread& t = data(td);
    if (f.gpu >= t.open.size()) return;
    AttributionThread::Open const o = t.open[f.gpu];
    t.open.erase(t.open.begin() + f.gpu, t.open.begin() + f.gpu + 1);
    std::uint32_t const now = t.seq.load(std::memory_order_relaxed);
    if (now != o.seq_begin)
      t.closed.push_back(AttributionThread::Instance{o.node, o.seq_begin, now});
    if (o.owns) {
      if (t.owned.size() >= StreamOwners::max_per_stream) {  // nothing settled for long
        t.owned.erase(t.owned.begin(), t.owned.begin() + StreamOwners::max_per_stream / 2);
      }
      t.owned.push_back(
          AttributionThread::Owned{o.key, o.node, o.seq_begin, *t.generation, o.start, s.now()});
    }
  }

  void drop_open(State& s, ThreadData& td) override {
    (void)s;
    if (auto* t = static_cast<AttributionThread*>(td.gpu[cupti_slot].get())) t->open.clear();
  }

  void poll(State& /*s*/, ThreadData& /*td*/) override {}

  void flush(State& s) override {
    if (!stopped_.load(std::memory_order_acquire)) deliver();
    settle_all(s, true);
  }

  void shutdown(State& s) noexcept override {
    (void)s;
    stopped_.store(true, std::memory_order_release);
  }

  void fill(State& s, GpuTimingStats& out) override {
    (void)s;
    out.source = name();
    std::lock_guard<std::mutex> lock{mutex_};
    out.records = records_;
    out.records_dropped = dropped_.load(std::memory_order_relaxed);
    out.records_unattributed = unattributed_;
    out.records_late = late_;
    out.records_delegated = delegated_count_;
    out.error = error_;
    for (auto const& [key, d] : devices_) {
      std::int64_t const overlap =
          std::max<std::int64_t>(0, d.kernel.busy + d.copy.busy - d.kernel_or_copy.busy);
      out.devices.push_back(GpuDeviceStats{static_cast<std::uint32_t>(key), d.kernels, d.copies,
                                           d.busy, d.any ? d.last - d.first : 0, d.kernel.busy,
                                           d.copy.busy, overlap});
    }
    for (auto const& [key, d] : streams_) {
      out.streams.push_back(GpuStreamStats{static_cast<std::uint32_t>(key >> 32),
                                           static_cast<std::uint32_t>(key), d.kernels, d.copies,
                                           d.busy, std::string{}});
    }
  }

  void copy_work(State& s, ThreadData& td, std::vector<GpuWork>& nodes) override {
    (void)s;
    std::lock_guard<std::mutex> lock{mutex_};
    if (td.index >= threads_.size()) return;
    ThreadWork const& tw = threads_[td.index];
    if (tw.generation != td.generation) return;
    std::size_t const n = std::min(nodes.size(), tw.nodes.size());
    for (std::size_t i = 0; i < n; ++i) nodes[i] = tw.nodes[i];
  }

  [[nodiscard]] std::string kernel_name(std::uint32_t id) const override {
    std::lock_guard<std::mutex> lock{mutex_};
    if (id == 0 || id >= names_.size()) return "(other kernels)";
    return demangle(names_[id].c_str());
  }

  /// Report::reset(): the totals start again (each thread's sums go with its generation, and
  /// work launched before the reset is dropped when it arrives).
  void reset_counters() noexcept override {
    std::lock_guard<std::mutex> lock{mutex_};
    devices_.clear();
    streams_.clear();
    records_ = unattributed_ = late_ = delegated_count_ = 0;
    owners_.clear();
    dropped_.store(0, std::memory_order_relaxed);
  }

 protected:
  /// Makes every activity of work launched so far arrive (waits for the GPU, flushes buffers).
  virtual void deliver() {}

  /// Records an error once (shown in the outputs).
  void set_error(std::string e) {
    std::lock_guard<std::mutex> lock{mutex_};
    if (error_.empty()) error_ = std::move(e);
  }

  std::atomic<bool> stopped_{false};

 private:
  static int& pending_capture_base() noexcept {
    thread_local int base = -1;
    return base;
  }

  static AttributionThread& data(ThreadData& td) {
    auto& slot = td.gpu[cupti_slot];
    if (slot == nullptr) {
      auto t = std::make_unique<AttributionThread>();
      t->index = static_cast<std::uint32_t>(td.index);
      t->generation = &td.stack_generation;
      t->td = &td;
      slot = std::move(t);
    }
    return static_cast<AttributionThread&>(*slot);
  }

  ThreadWork& thread_work(std::uint32_t index) {
    if (threads_.size() <= index) threads_.resize(std::size_t{index} + 1);
    return threads_[index];
  }

  /// After reset(): the thread's sums of the old generation go; its parked work of the new one
  /// stays. Under mutex_.
  void renew(ThreadWork& tw, std::uint64_t generation) {
    if (tw.generation == generation) return;
    std::vector<Parked> parked = std::move(tw.parked);
    tw = ThreadWork{};
    tw.generation = generation;
    for (Parked const& p : parked) {
      if (p.launch.generation == static_cast<std::uint32_t>(generation)) tw.parked.push_back(p);
    }
    parked_ -= parked.size() - tw.parked.size();
  }

  /// One activity, under mutex_.
  void add_one(GpuActivity const& a) {
    Launch const l = table_.get(a.correlation);
    if (l.thread == outside_window) return;  // not captured: as if CUPTI had not collected it
    ++records_;
    if (a.kind == GpuActivity::Kind::alloc || a.kind == GpuActivity::Kind::free) {
      memory(a, l);
      return;
    }
    total(devices_[a.device], a, true);
    total(streams_[(std::uint64_t{a.device} << 32) | a.stream], a, false);
    std::uint32_t replay = no_node;
    if (a.graph_node != 0) {
      auto g = graph_nodes_.find(a.graph_node);
      if (g != graph_nodes_.end() && g->second < paths_.size() && !paths_[g->second].empty())
        replay = g->second;
    }
    // A replayed node with a captured path needs no open range: launched at the top level, its
    // work goes to the captured path itself.
    if (!l.known() || (l.node == no_node && replay == no_node)) {
      if (!l.known() && l.entered != 0) {
        // Launched by a thread that opens no ranges: perhaps on behalf of the range that owns
        // its stream (looked up at the next settle, when every thread's ranges are known).
        delegated_.push_back(Parked{a, l, no_node, no_node});
        ++parked_;
        return;
      }
      ++unattributed_;
      return;
    }
    ThreadWork& tw = thread_work(l.thread);
    tw.parked.push_back(Parked{a, l, replay, no_node});
    tw.arrived = std::max(tw.arrived, l.seq + 1);
    ++parked_;
  }

  /// A device allocation or free, attributed at once (they arrive in the order made).
  void memory(GpuActivity const& a, Launch const& l) {
    if (a.kind == GpuActivity::Kind::alloc) {
      if (!l.known() || l.node == no_node) {
        ++unattributed_;
        return;
      }
      ThreadWork& tw = thread_work(l.thread);
      if (static_cast<std::uint32_t>(tw.generation) != l.generation) {
        if (static_cast<std::uint32_t>(tw.generation) > l.generation) return;  // before a reset
        renew(tw, l.generation);  // the first work of this generation on that thread
      }
      GpuWork& w = node_work(tw, l.node);
      ++w.allocations;
      w.allocated_bytes += a.bytes;
      w.live_bytes += a.bytes;
      w.peak_bytes = std::max(w.peak_bytes, w.live_bytes);
      allocations_[a.address] = Allocation{l.thread, l.node, tw.generation, a.bytes};
      return;
    }
    auto it = allocations_.find(a.address);
    if (it == allocations_.end()) return;  // allocated before the report saw it
    Allocation const al = it->second;
    allocations_.erase(it);
    ThreadWork& tw = thread_work(al.thread);
    if (tw.generation != al.generation) return;
    GpuWork& w = node_work(tw, al.node);
    w.freed_bytes += al.bytes;
    w.live_bytes -= std::min(w.live_bytes, al.bytes);
  }

  /// Settles one thread: the ended ranges whose work may be complete, and the part of open ones.
  void settle(State& s, ThreadData& td, bool everything, std::vector<Slice>& slices) {
    std::vector<AttributionThread::Instance> closed;
    std::vector<AttributionThread::Open> open;
    std::vector<std::uint32_t> parents;
    std::uint32_t seq = 0;
    std::uint64_t generation = 0;
    {
      SpinGuard lock{td.lock};
      auto* t = static_cast<AttributionThread*>(td.gpu[cupti_slot].get());
      if (t == nullptr) return;
      closed.assign(t->closed.begin(), t->closed.end());  // not swapped: the recording
      t->closed.clear();  // thread keeps its capacity, so its next ranges do not allocate
      open = t->open;
      seq = t->seq.load(std::memory_order_relaxed);
      generation = td.generation;
      {
        // Replayed graph work: the nodes of the captured paths under the replay's range, made
        // now (in this thread's tree, under its lock).
        std::lock_guard<std::mutex> lock2{mutex_};
        ThreadWork& tw = thread_work(static_cast<std::uint32_t>(td.index));
        for (Parked& p : tw.parked) {
          if (p.replay == no_node || p.target != no_node ||
              p.launch.generation != static_cast<std::uint32_t>(generation) ||
              p.replay >= paths_.size())
            continue;
          std::uint32_t node = p.launch.node < td.nodes.size() ? p.launch.node : no_node;
          for (Component const& c : paths_[p.replay]) {
            node = find_node(s, td, node, c.domain.c_str(), c.name);
          }
          p.target = node;
        }
      }
      parents.reserve(td.nodes.size());
      for (Node const& n : td.nodes) parents.push_back(n.parent);
    }
    std::lock_guard<std::mutex> lock{mutex_};
    ThreadWork& tw = thread_work(static_cast<std::uint32_t>(td.index));
    renew(tw, generation);
    // Work launched before `limit` is settled: all of it at a flush (the GPU was waited for and
    // every record delivered). A forced settle (too much parked) takes only launches well behind
    // the newest one whose work arrived: records come back in about launch order, so theirs are
    // in; one that still comes later is counted for its own path only ("late").
    std::uint32_t const margin =
        static_cast<std::uint32_t>(std::max<std::size_t>(max_parked_ / 4, 1));
    std::uint32_t const limit =
        everything ? seq : std::min(seq, tw.arrived > margin ? tw.arrived - margin : 0u);
    closed.insert(closed.end(), tw.deferred.begin(), tw.deferred.end());
    tw.deferred.clear();
    std::vector<AttributionThread::Instance> ready;
    for (auto const& i : closed) (i.seq_end <= limit ? ready : tw.deferred).push_back(i);
    std::vector<Parked> now, later;
    for (Parked const& p : tw.parked) {
      if (p.launch.generation != static_cast<std::uint32_t>(generation))
        continue;  // before a reset
      (p.launch.seq < limit ? now : later).push_back(p);
    }
    parked_ -= tw.parked.size() - later.size();
    tw.parked = std::move(later);
    // A replayed graph node's work goes to its captured path (and that path's ancestors), per
    // replay; the rest by the thread's launch sequence.
    std::vector<Parked> replayed;
    {
      std::vector<Parked> rest;
      for (Parked const& p : now) (p.target != no_node ? replayed : rest).push_back(p);
      now.swap(rest);
    }
    account_replays(tw, replayed, parents, slices);
    std::sort(now.begin(), now.end(),
              [](Parked const& a, Parked const& b) { return a.launch.seq < b.launch.seq; });
    std::vector<std::uint8_t> own(now.size(), 0);
    Parked const* const base = now.data();
    Parked const* const end = base + now.size();
    auto first_at = [&](std::uint32_t at) {
      return std::lower_bound(base, end, at,
                              [](Parked const& p, std::uint32_t v) { return p.launch.seq < v; });
    };
    for (auto const& i : ready) {
      account(tw, i.node, i.seq_begin, first_at(i.seq_begin), first_at(i.seq_end), true, own, base);
    }
    // Ranges still open, and ended ones whose work is not all settled yet: their part so far.
    for (auto const& o : open) {
      account(tw, o.node, o.seq_begin, first_at(o.seq_begin), first_at(limit), false, own, base);
    }
    for (auto const& d : tw.deferred) {
      account(tw, d.node, d.seq_begin, first_at(d.seq_begin), first_at(limit), false, own, base);
    }
    for (std::size_t k = 0; k < now.size(); ++k) {
      Parked const& p = now[k];
      slices.push_back(Slice{p.activity.start, p.activity.end - p.activity.start, p.launch.entered,
                             p.launch.node, p.activity.device, p.activity.stream,
                             p.activity.correlation, label_key(p.activity)});
      if (own[k] != 0) continue;
      // Its range's work was settled before it arrived: counted for its own path only.
      ++late_;
      GpuWork& w = node_work(tw, p.launch.node);
      if (p.activity.kind == GpuActivity::Kind::kernel) {
        ++w.kernels;
        ++w.self_kernels;
        w.kernel_ns += p.activity.end - p.activity.start;
        if (p.delegated) {
          ++w.delegated_kernels;
          w.delegated_kernel_ns += p.activity.end - p.activity.start;
        }
      }
    }
  }

  void settle_totals() {
    for (auto& [key, t] : devices_) {
      (void)key;
      t.busy += union_length(t.pending, t.frontier);
      t.pending.clear();
      t.kernel.settle();
      t.copy.settle();
      t.kernel_or_copy.settle();
    }
    for (auto& [key, t] : streams_) {
      (void)key;
      t.busy += union_length(t.pending, t.frontier);
      t.pending.clear();
    }
  }

  void settle_all(State& s, bool everything) {
    std::unique_lock<std::mutex> serial{settle_mutex_, std::defer_lock};
    if (everything) {
      serial.lock();
    } else if (!serial.try_lock()) {
      return;  // a settle is under way
    }
    std::size_t const cap = s.max_trace_events.load(std::memory_order_relaxed);
    bool const trace = s.trace.load(std::memory_order_relaxed);
    std::vector<ThreadData*> const threads = all_threads(s);
    delegate(threads, everything);
    for (ThreadData* td : threads) {
      std::vector<Slice> slices;
      settle(s, *td, everything, slices);
      if (!trace || slices.empty()) continue;
      std::unordered_map<std::uint64_t, std::string const*> text;
      labels_.resolve(slices, names_, mutex_, text);
      SpinGuard lock{td->lock};
      for (Slice const& g : slices) {
        if (g.node >= td->nodes.size()) continue;
        if (td->gpu_trace.size() >= cap) {
          ++td->trace_dropped;
          continue;
        }
        td->gpu_trace.push_back(
            GpuSlice{g.start, g.dur, g.node, td->track_id(g.stream, static_cast<int>(g.device)),
                     g.launched, g.correlation, thread_label(*td, g.label, text)});
      }
    }
    std::lock_guard<std::mutex> lock{mutex_};
    settle_totals();
  }

  /// Gives the work launched by threads without ranges to the ranges that own its streams: the
  /// work joins its owner's thread as if that range had launched it. Work no range owns is
  /// counted as unattributed.
  void delegate(std::vector<ThreadData*> const& threads, bool everything) {
    owners_.collect(threads);
    std::lock_guard<std::mutex> lock{mutex_};
    for (Parked& p : delegated_) {
      --parked_;
      StreamOwner o{};
      if (!owners_.find((std::uint64_t{p.activity.device} << 32) | p.activity.stream,
                        p.launch.entered, o)) {
        ++unattributed_;
        continue;
      }
      ++delegated_count_;
      p.delegated = true;
      p.launch = Launch{o.thread, o.node, o.seq, static_cast<std::uint32_t>(o.generation),
                        p.launch.entered};
      ThreadWork& tw = thread_work(o.thread);
      tw.parked.push_back(p);
      tw.arrived = std::max(tw.arrived, o.seq + 1);
      ++parked_;
    }
    delegated_.clear();
    owners_.prune(everything);
  }

  CorrelationTable table_;
  std::mutex settle_mutex_;
  mutable std::mutex mutex_;
  std::vector<ThreadWork> threads_;
  std::map<std::uint32_t, Totals> devices_;
  std::map<std::uint64_t, Totals> streams_;
  std::unordered_map<std::uint64_t, Allocation> allocations_;
  std::vector<std::string> names_{"(other kernels)"};
  SliceLabels labels_;                                            // of trace slices
  std::unordered_map<std::uint64_t, std::uint32_t> graph_nodes_;  // node id -> relative path
  CapturedPaths paths_;                                           // under mutex_
  std::unordered_map<char const*, std::uint32_t> name_by_pointer_;
  std::vector<Parked> delegated_;  // launched outside any range, not yet given an owner
  StreamOwners owners_;
  std::size_t parked_{0};
  std::size_t max_parked_{std::size_t{1} << 20};
  std::uint64_t records_{0}, unattributed_{0}, late_{0}, delegated_count_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::string error_;
};

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
