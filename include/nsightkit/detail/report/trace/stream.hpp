// Internal: the trace written to its file while the run goes on (trace=PATH).
//
// The file is a run of pieces, each one gzip member (or plain text, without ".gz"): the header
// (`{"traceEvents":[` and the process's name), then a piece per batch of events that a worker
// thread moves out of the threads' buffers, with the start/end ranges and counter samples
// recorded meanwhile (each event written as ",\n{...}", so any run of pieces in order is valid),
// then, once the outputs are written, the end: the names of threads and streams, what was not
// streamed yet, the GPU busy counters and otherData. A piece is written after the file is cut
// back to the pieces before it, so a process killed at any moment leaves whole pieces followed
// by at most one partial one (docs/long-jobs.md says how to read such a file).
// Gzip members one after another are one gzip file (RFC 1952), so the file is complete after each
// write; the next piece goes where the end was, and the end is written again at the next write.
//
// The size cap drops the oldest pieces: the file is rewritten without them when the pieces pass
// the cap (down to three quarters of it, so a rewrite is rare), and at a write as many more as the
// end needs. Lock order: TraceStream::mutex_, then State::mutex, then a thread's lock.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/counters.hpp>
#include <nsightkit/detail/report/output/file.hpp>
#include <nsightkit/detail/report/signals.hpp>
#include <nsightkit/detail/report/trace/from_memory.hpp>
#include <nsightkit/detail/report/trace/writer.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

class TraceStream;
/// The process's stream once one was started (never freed: its worker may run until exit).
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<TraceStream*> trace_stream_ptr{nullptr};

class TraceStream {
 public:
  static TraceStream& get() {
    static TraceStream* const t = new TraceStream{};
    return *t;
  }
  /// The stream when one was ever made, else null.
  static TraceStream* existing() noexcept {
    return trace_stream_ptr.load(std::memory_order_acquire);
  }

  /// Starts streaming the trace to `path` (its final name), or goes on streaming there. False
  /// where the path is not a regular file that can be written, or in a forked child: the trace
  /// is then written from memory at the end, as without a stream.
  bool start(State& s, std::string const& path) {
    std::lock_guard<std::mutex> lock{mutex_};
    if (forked_) return false;
    if (active_ && path == path_) {
      // A new clock or another schema: the file starts again.
      if (origin_ != s.origin.load(std::memory_order_relaxed) || schema_ != schema_of(s))
        restart_locked(s);
      return writable();
    }
    if (active_) close_locked(s);  // another path: the old file is completed first
    PathKind const k = path_kind(path);
    if (k == PathKind::other || k == PathKind::directory) return false;
    active_ = true;
    path_ = path;
    gz_ = wants_gzip(path);
    failed_.clear();
    if (!restart_locked(s)) return false;
    wake_.store(false, std::memory_order_relaxed);
    s.trace_wake.store(&wake_worker, std::memory_order_release);
    if (!worker_.joinable()) {
      stop_ = false;
      worker_ = std::thread{[this, &s] { run(s); }};
    }
    return true;
  }

  /// Whether the trace for `path` (any, when empty) is, in part, in the stream's file. `urgent`:
  /// for a signal's write (lock_ahead()).
  bool holds(std::string const& path = {}, bool urgent = false) {
    auto const lock = lock_ahead(urgent);
    return active_ && (path.empty() || path == path_);
  }

  /// Writes the complete trace: in place (the pieces the cap keeps, then the end), or, after a
  /// write failed, whole through write_output with the pieces read back. `wrote` as
  /// write_output gives it.
  bool write_file(State& s, std::string& wrote, bool urgent = false) {
    auto const lock = lock_ahead(urgent);
    return write_file_locked(s, wrote);
  }

  /// The whole trace as text (Report::trace_json(), the gather of a launcher's ranks).
  std::string text(State& s) {
    std::lock_guard<std::mutex> lock{mutex_};
    return text_locked(s);
  }

  /// Moves every buffered event into a piece of the file now.
  void drain(State& s) {
    std::lock_guard<std::mutex> lock{mutex_};
    drain_locked(s);
  }

  /// Report::enable() without this trace: the file is completed and no longer streamed to.
  void finish(State& s) {
    std::lock_guard<std::mutex> lock{mutex_};
    if (active_) close_locked(s);
  }

  /// Exit: the worker stops; with `complete` the file gets its end when it lacks one.
  void stop(State& s, bool complete) {
    {
      std::lock_guard<std::mutex> lock{wake_mutex_};
      stop_ = true;
    }
    wake_cv_.notify_all();
    if (worker_.joinable() && !forked_) worker_.join();
    std::lock_guard<std::mutex> lock{mutex_};
    s.trace_wake.store(nullptr, std::memory_order_release);
    if (complete && file_.is_open() && !tail_) {  // never opened: nothing was streamed
      std::string wrote;
      if (write_file_locked(s, wrote))
        std::fprintf(stderr, "nsightkit report: wrote %s\n", wrote.c_str());
    }
  }

  /// Report::reset() holds this while it clears, then calls restart_locked().
  std::mutex& mutex() noexcept { return mutex_; }

  /// The file starts again (Report::reset(), a new clock): its header only. Under mutex().
  bool restart_locked(State& s) {
    if (!active_) return false;
    pieces_.clear();
    unwritten_.clear();
    written_ = 0;
    cache_.clear();
    se_names_.clear();
    dropped_ = 0;
    dropped_before_ = std::numeric_limits<std::int64_t>::min();
    TraceParts id;
    trace_identity(id);
    origin_ = s.origin.load(std::memory_order_relaxed);
    schema_ = schema_of(s);
    writer_ = std::make_unique<TraceWriter>(sink_, id.pid, origin_, schema_);
    writer_->begin(id.name, id.distributed);
    writer_->defer_names(true);
    head_text_ = std::move(sink_.buffer());
    sink_.buffer().clear();
    head_.clear();
    if (!encode(head_text_, head_)) return fail("zlib failed");
    end_ = head_.size();
    tail_ = false;
    // The file is made at the first piece or write (a run that streams nothing and enables the
    // report again without this trace leaves none); once made, it starts again here.
    if (file_.is_open() && (!file_.write_at(0, head_) || !file_.truncate(head_.size())))
      return fail("writing its beginning failed");
    last_drain_ = std::chrono::steady_clock::now();
    return true;
  }

  /// Fork: held across it (first in the lock order).
  void fork_lock() noexcept { mutex_.lock(); }
  void fork_unlock() noexcept { mutex_.unlock(); }
  /// A forked child writes its own trace from memory: the parent's file and worker are not its.
  void forget_after_fork(State& s) noexcept {
    forked_ = true;
    active_ = false;
    file_.close();
    s.trace_wake.store(nullptr, std::memory_order_relaxed);
  }

 private:
  TraceStream() noexcept { trace_stream_ptr.store(this, std::memory_order_release); }

  /// Takes mutex_; `urgent` (a signal's write) ahead of the worker. Threads that record faster
  /// than the worker formats make each drain longer than the last; the worker lets an urgent
  /// caller in at its next thread, so a signal's write never waits behind that backlog. Other
  /// callers wait for the drain: were it to stop for them, a program that writes in a loop would
  /// keep the backlog from ever being drained.
  std::unique_lock<std::mutex> lock_ahead(bool urgent) {
    if (!urgent) return std::unique_lock<std::mutex>{mutex_};
    waiting_.fetch_add(1, std::memory_order_acq_rel);
    std::unique_lock<std::mutex> lock{mutex_};
    waiting_.fetch_sub(1, std::memory_order_acq_rel);
    return lock;
  }

  bool write_file_locked(State& s, std::string& wrote) {
    if (write_locked(s, wrote)) return true;
    if (!active_) return false;
    std::string const text = text_locked(s);
    auto produce = [&](TextSink& sink) {
      sink.buffer() += text;
      sink.flush();
    };
    return write_output(path_, "trace", "trace", ".json", produce, wrote);
  }

  std::string text_locked(State& s) {
    std::size_t first = 0;
    std::string end = end_text(s, first);
    std::string out = head_text_;
    if (!read_pieces(first, out)) {
      std::fprintf(stderr,
                   "nsightkit report: the streamed trace '%s' could not be read back: its oldest "
                   "events are missing from this copy\n",
                   path_.c_str());
    }
    out += unwritten_;
    out += end;
    return out;
  }

  struct Piece {
    std::uint64_t offset, bytes, text, events;
    std::int64_t latest;  // latest end time of its events
  };
  /// Escaped names and paths of a thread's nodes, kept between pieces.
  struct Names {
    ThreadData* td;
    std::uint64_t generation;
    std::vector<std::string> names, paths, marks;  // names and paths JSON-escaped
    std::vector<std::string> plain;                // paths as they are (for children's)
  };

  static void wake_worker() noexcept {
    if (TraceStream* t = existing()) {
      t->wake_.store(true, std::memory_order_relaxed);
      t->wake_cv_.notify_one();
    }
  }

  void run(State& s) {
    block_async_signals();
    std::unique_lock<std::mutex> lock{wake_mutex_};
    while (!stop_) {
      wake_cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (stop_) break;
      bool const woken = wake_.exchange(false, std::memory_order_relaxed);
      lock.unlock();
      NSIGHTKIT_DETAIL_TRY {
        if (waiting_.load(std::memory_order_acquire) == 0) {  // a signal's write waits: it drains
          std::lock_guard<std::mutex> g{mutex_};
          std::size_t const pending = buffered(s);
          bool const due = std::chrono::steady_clock::now() - last_drain_ > std::chrono::seconds(1);
          if (pending >= trace_stream_batch || (woken && pending != 0) || (due && pending != 0))
            drain_locked(s, true);
        }
      }
      NSIGHTKIT_DETAIL_CATCH(...) {}  // out of memory: the events stay buffered
      lock.lock();
    }
  }

  static std::size_t buffered(State& s) {
    std::size_t n = 0;
    for (ThreadData* td : all_threads(s)) {
      SpinGuard g{td->lock};
      n += td->trace.size() + td->instants.size() + td->gpu_trace.size();
    }
    {
      std::lock_guard<std::mutex> g{s.se_mutex};
      n += s.se_trace.size();
    }
    std::lock_guard<std::mutex> g{counters.mutex};
    return n + counters.samples.size();
  }

  /// Stops writing (the file keeps what it has, and is read back for the end); false.
  bool fail(char const* what) {
    if (failed_.empty()) {
      failed_ = what;
      std::fprintf(stderr,
                   "nsightkit report: streaming the trace to '%s' stopped (%s: %s); what is "
                   "recorded from now on is kept in memory and written at the end\n",
                   path_.c_str(), what, std::strerror(errno));
    }
    return false;
  }

  bool writable() const noexcept { return active_ && failed_.empty(); }

  /// Makes the file (its header) at the first piece or write.
  bool open_file() {
    if (file_.is_open()) return true;
    if (!file_.open(path_)) return fail("cannot open it");
    if (!file_.write_at(0, head_) || !file_.truncate(head_.size()))
      return fail("writing its beginning failed");
    end_ = head_.size();
    return true;
  }

  bool encode(std::string const& text, std::string& out) const {
    if (!gz_) {
      out += text;
      return true;
    }
    return gzip::member(text, out);
  }

  /// Appends the text of pieces [first, end) to `out`.
  bool read_pieces(std::size_t first, std::string& out) const {
    if (!file_.is_open()) return first == pieces_.size();
    for (std::size_t i = first; i < pieces_.size(); ++i) {
      std::string bytes;
      if (!file_.read_at(pieces_[i].offset, pieces_[i].bytes, bytes)) return false;
      if (!gz_) {
        out += bytes;
      } else if (!gzip::inflate_members(bytes, out)) {
        return false;
      }
    }
    return true;
  }

  /// Moves each thread's buffered events out (under its lock: a swap, and the names of new
  /// nodes), then formats and writes them as one piece. The worker (`yield`) stops at the next
  /// thread when a signal's write waits for mutex_: what it has not taken stays buffered, and that
  /// write takes it.
  void drain_locked(State& s, bool yield = false) {
    if (!writable()) return;
    bool yielded = false;
    std::size_t const cap = cap_of(s);
    std::size_t const limit =
        cap == 0 ? std::size_t{8} << 20
                 : std::min(std::max(cap / 16, std::size_t{64} << 10), std::size_t{8} << 20);
    for (ThreadData* td : all_threads(s)) {
      if (yield && waiting_.load(std::memory_order_acquire) != 0) {
        yielded = true;
        break;
      }
      Names& n = names_for(td);
      ThreadTraceCopy c;
      std::vector<std::pair<std::string, std::uint32_t>> nodes;  // component, parent
      std::vector<std::string> marks;
      {
        SpinGuard g{td->lock};
        if (n.generation != td->generation || n.names.size() > td->nodes.size()) {
          n.names.clear();
          n.paths.clear();
          n.marks.clear();
          n.plain.clear();
          n.generation = td->generation;
        }
        c.tid = td->tid;
        c.events.swap(td->trace);
        c.labels.swap(td->labels);
        c.payloads.swap(td->payloads);
        c.instants.swap(td->instants);
        c.gpu.swap(td->gpu_trace);
        c.gpu_labels = td->gpu_labels;
        c.gpu_kinds = td->gpu_label_kinds;
        c.tracks = td->gpu_tracks;
        for (std::size_t i = n.names.size(); i < td->nodes.size(); ++i)
          nodes.emplace_back(component(td->nodes[i].domain, td->nodes[i].name),
                             td->nodes[i].parent);
        for (std::size_t i = n.marks.size(); i < td->marks.size(); ++i)
          marks.push_back(component(td->marks[i].domain, td->marks[i].name));
      }
      for (auto& [comp, parent] : nodes) {
        std::size_t const i = n.names.size();
        n.plain.push_back(child_path(parent < i ? &n.plain[parent] : nullptr, comp));
        n.names.emplace_back();
        json_string(n.names.back(), comp);
        n.paths.emplace_back();
        json_string(n.paths.back(), n.plain.back());
      }
      n.marks.insert(n.marks.end(), marks.begin(), marks.end());
      if (c.events.empty() && c.instants.empty() && c.gpu.empty()) continue;
      c.names = std::move(n.names);
      c.paths = std::move(n.paths);
      c.mark_names = std::move(n.marks);
      c.prepared = true;
      format_in_batches(c, limit);
      n.names = std::move(c.names);
      n.paths = std::move(c.paths);
      n.marks = std::move(c.mark_names);
    }
    if (!yielded) drain_process_events(s);
    last_drain_ = std::chrono::steady_clock::now();
    emit_piece();
    if (cap != 0 && text_size(0) > cap) drop_oldest(text_size(0) - cap * 3 / 4);
  }

  /// Moves the start/end ranges ended and the counter samples recorded since the last piece into
  /// this one, so neither is held in memory until the end of a long run.
  void drain_process_events(State& s) {
    std::vector<StartEndEvent> se;
    {
      std::lock_guard<std::mutex> g{s.se_mutex};
      se.swap(s.se_trace);
      for (std::size_t i = se_names_.size(); i < s.se_stats.size(); ++i)
        se_names_.push_back(component(s.se_stats[i].domain, s.se_stats[i].name));
    }
    std::vector<CounterSample> samples;
    {
      std::lock_guard<std::mutex> g{counters.mutex};
      samples.swap(counters.samples);
    }
    if (se.empty() && samples.empty()) return;
    writer_->rebind(sink_);
    writer_->start_end(se, se_names_);
    writer_->counter_tracks(samples);
  }

  /// Formats a thread's events in batches (in the order they ended), so that a piece, the unit
  /// the cap drops, holds about `limit` bytes of text.
  void format_in_batches(ThreadTraceCopy& c, std::size_t limit) {
    constexpr std::size_t batch = 4096;
    std::vector<TraceEvent> events = std::move(c.events);
    std::vector<Instant> instants = std::move(c.instants);
    std::vector<GpuSlice> gpu = std::move(c.gpu);
    std::size_t const n = std::max({events.size(), instants.size(), gpu.size()});
    auto slice = [](auto const& all, auto& part, std::size_t from) {
      std::size_t const a = std::min(from, all.size());
      std::size_t const b = std::min(from + batch, all.size());
      part.assign(all.begin() + static_cast<std::ptrdiff_t>(a),
                  all.begin() + static_cast<std::ptrdiff_t>(b));
    };
    for (std::size_t i = 0; i < n; i += batch) {
      slice(events, c.events, i);
      slice(instants, c.instants, i);
      slice(gpu, c.gpu, i);
      writer_->rebind(sink_);
      writer_->thread(c, false);
      if (sink_.buffer().size() >= limit) emit_piece();
    }
  }

  /// Writes what was formatted as the next piece; once writing failed, keeps it in memory for
  /// the end (events already taken from the threads are not lost).
  void emit_piece() {
    std::string& text = sink_.buffer();
    if (text.empty()) return;
    std::uint64_t const events = writer_->written() - written_;
    written_ = writer_->written();
    std::string bytes;
    writer_->forget_flows();
    if (!writable() || !open_file() || !encode(text, bytes)) {
      if (writable()) fail("zlib failed");
    } else if (!file_.truncate(end_) || !file_.write_at(end_, bytes)) {
      fail("writing failed");
    } else {
      pieces_.push_back(Piece{end_, bytes.size(), text.size(), events, writer_->latest()});
      end_ += bytes.size();
      tail_ = false;
      text.clear();
      return;
    }
    unwritten_ += text;
    text.clear();
  }

  Names& names_for(ThreadData* td) {
    for (Names& n : cache_) {
      if (n.td == td) return n;
    }
    cache_.push_back(Names{td, td->generation, {}, {}, {}, {}});
    return cache_.back();
  }

  static std::size_t cap_of(State& s) {
    std::lock_guard<std::mutex> lock{s.mutex};
    return s.options.max_trace_bytes;
  }
  static TraceSchema schema_of(State& s) {
    std::lock_guard<std::mutex> lock{s.mutex};
    return s.options.trace_schema;
  }

  /// Text bytes of the header and of pieces [first, end).
  std::uint64_t text_size(std::size_t first) const {
    std::uint64_t n = head_text_.size();
    for (std::size_t i = first; i < pieces_.size(); ++i) n += pieces_[i].text;
    return n;
  }

  /// Drops the oldest pieces holding at least `bytes` of text: the file is rewritten without them.
  void drop_oldest(std::uint64_t bytes) {
    std::size_t k = 0;
    std::uint64_t gone = 0;
    while (k < pieces_.size() && gone < bytes) gone += pieces_[k++].text;
    if (k != 0) rewrite(k, std::string{});
  }

  /// Rewrites the file as the header, pieces [k, end) and `end` (a tail, or nothing).
  bool rewrite(std::size_t k, std::string const& end) {
    std::string const tmp = path_ + ".nsightkit-tmp." + std::to_string(process_id());
    PlacedFile next;
    if (!next.open(tmp)) return fail("making room under the size cap failed");
    std::string bytes = head_;
    bool ok = true;
    std::vector<Piece> kept;
    std::uint64_t at = head_.size();
    std::uint64_t dropped = 0;
    std::int64_t before = dropped_before_;
    for (std::size_t i = 0; ok && i < pieces_.size(); ++i) {
      if (i < k) {
        dropped += pieces_[i].events;
        before = std::max(before, pieces_[i].latest);
        continue;
      }
      Piece p = pieces_[i];
      ok = file_.read_at(p.offset, p.bytes, bytes);
      p.offset = at;
      at += p.bytes;
      kept.push_back(p);
    }
    bytes += end;
    ok = ok && next.write_at(0, bytes) && std::rename(tmp.c_str(), path_.c_str()) == 0;
    if (!ok) {  // the old file stays, and is read back for the end
      (void)std::remove(tmp.c_str());
      return fail("making room under the size cap failed");
    }
    file_.swap(next);  // the old one closes
    dropped_ += dropped;
    dropped_before_ = before;
    pieces_ = std::move(kept);
    end_ = at;
    tail_ = !end.empty();
    return true;
  }

  /// The trace's end as text, and in `first` the oldest piece the size cap keeps with it.
  std::string end_text(State& s, std::size_t& first) {
    TraceParts p = trace_parts(&s);
    first = 0;
    std::int64_t cutoff = dropped_before_;
    std::uint64_t dropped = dropped_;
    if (p.cap != 0) {
      std::uint64_t const budget = p.cap > trace_reserve ? p.cap - trace_reserve : 0;
      TextSink scratch;
      TraceWriter m = *writer_;
      m.rebind(scratch);
      m.measure();
      m.deferred_names();
      trace_events(m, p);
      auto end_size = [&](std::int64_t cut) {
        std::uint64_t n = 0;
        for (auto const& [key, size] : m.sizes()) n += key > cut ? size : 0;
        return n;
      };
      while (first < pieces_.size() &&
             text_size(first) + unwritten_.size() + end_size(cutoff) > budget) {
        dropped += pieces_[first].events;
        cutoff = std::max(cutoff, pieces_[first].latest);
        ++first;
      }
      std::uint64_t const kept = text_size(first) + unwritten_.size();
      if (kept + end_size(cutoff) > budget) {
        std::uint64_t const room = budget > kept ? budget - kept : 0;
        cutoff = std::max(cutoff, m.cutoff_for(static_cast<std::size_t>(room)));
      }
    }
    TextSink out;
    TraceWriter w = *writer_;
    w.rebind(out);
    w.defer_names(false);
    w.keep_after(cutoff);
    w.deferred_names();
    trace_events(w, p);
    dropped += w.cut();
    trace_end(w, p, dropped, cutoff);
    return std::move(out.buffer());
  }

  bool write_locked(State& s, std::string& wrote) {
    if (!writable() || !open_file()) return false;
    std::size_t first = 0;
    std::string const text = end_text(s, first);
    std::string bytes;
    if (!encode(text, bytes)) return fail("zlib failed");
    if (first != 0) {
      if (!rewrite(first, bytes)) return false;
    } else if (!file_.truncate(end_) || !file_.write_at(end_, bytes)) {
      return fail("writing failed");
    }
    tail_ = true;
    wrote = path_ + " (trace)";
    return true;
  }

  void close_locked(State& s) {
    std::string wrote;
    if (file_.is_open() && !tail_ && write_locked(s, wrote))  // only a file pieces went to
      std::fprintf(stderr, "nsightkit report: wrote %s\n", wrote.c_str());
    file_.close();
    active_ = false;
    s.trace_wake.store(nullptr, std::memory_order_release);
  }

  std::mutex mutex_;             // everything below but the worker's wake-up
  std::atomic<int> waiting_{0};  // urgent callers waiting for mutex_
  PlacedFile file_;              // made at the first piece or write
  bool active_{false};           // streaming to path_
  bool forked_{false};
  bool gz_{false};
  bool tail_{false};  // the file ends with a complete end
  std::string path_, failed_;
  std::unique_ptr<TraceWriter> writer_;
  TextSink sink_;
  std::int64_t origin_{0};
  TraceSchema schema_{TraceSchema::chrome};
  std::string head_text_;
  std::string unwritten_;  // pieces formatted after writing failed, for the end
  std::string head_;       // the header as the file holds it
  std::uint64_t end_{0}, written_{0}, dropped_{0};
  std::int64_t dropped_before_{std::numeric_limits<std::int64_t>::min()};
  std::vector<Piece> pieces_;
  std::vector<Names> cache_;
  std::vector<std::string> se_names_;  // start/end range names by index (State::se_stats)
  std::chrono::steady_clock::time_point last_drain_{};

  std::thread worker_;
  std::mutex wake_mutex_;
  std::condition_variable wake_cv_;
  bool stop_{false};  // under wake_mutex_
  std::atomic<bool> wake_{false};
};

/// The whole trace as text: read back from its file where it is streamed, else from memory.
inline std::string trace_json() {
  State* s = state();
  TraceStream* const stream = TraceStream::existing();
  if (s != nullptr && stream != nullptr && stream->holds()) return stream->text(*s);
  TextSink sink;
  write_trace_from_memory(sink);
  return std::move(sink.buffer());
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
