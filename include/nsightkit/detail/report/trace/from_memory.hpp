// Internal: what a trace is made of besides its streamed pieces — the process's identity, every
// thread's buffered events, start/end ranges and counter samples, copied out of the report — and
// the whole trace written from memory (no stream), with its size cap.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/counters.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/report/trace/writer.hpp>

#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// What a trace holds besides its streamed pieces, copied out of the report: each thread's events
/// not streamed yet, start/end ranges, counter samples, and the facts for otherData.
struct TraceParts {
  long os_pid{0};
  long pid{0};  // the trace's pid: the rank under a launcher, else the OS pid
  std::string rank{"null"};
  long parent{0};
  std::string name;         // the process track's name
  std::string distributed;  // the header's distributedInfo member, or empty without a rank
  TraceSchema schema{TraceSchema::chrome};
  std::int64_t origin{0};
  bool steady{true};
  char const* source{"steady_clock"};
  std::size_t cap{0};
  std::uint64_t dropped{0};
  std::uint64_t counters_dropped{0};
  std::vector<ThreadTraceCopy> copies;
  std::vector<CounterSample> counters;
  std::vector<StartEndEvent> se;
  std::vector<std::string> se_names;
};

/// The process's identity in a trace (pid, rank, name), without copying any event.
inline void trace_identity(TraceParts& p) {
  p.os_pid = process_id();
  auto const rank = launcher_rank();
  p.pid = rank ? static_cast<long>(rank->rank) : p.os_pid;
  if (rank) p.rank = std::to_string(rank->rank);
  p.parent = forked_from.load(std::memory_order_relaxed);
  p.name = rank ? fmt::format("nsightkit rank {} (pid {})", rank->rank, p.os_pid)
                : fmt::format("nsightkit pid {}", p.os_pid);
  if (p.parent != 0) p.name += fmt::format(", forked from pid {}", p.parent);
  // Kineto's member, which HTA takes a file's rank from: with a pattern that wants a space after
  // the colon ("rank": 3), so written so.
  if (rank) {
    p.distributed =
        fmt::format("\"distributedInfo\":{{\"rank\": {}{}}},", rank->rank,
                    rank->size > 0 ? fmt::format(",\"world_size\":{}", rank->size) : std::string{});
  }
}

/// Copies what the trace needs out of the report (after the GPU source completed its work).
inline TraceParts trace_parts(State* s) {
  TraceParts p;
  trace_identity(p);
  std::vector<ThreadData*> threads;
  if (s != nullptr) {
    if (GpuSource* src = s->source.load(std::memory_order_acquire)) src->flush(*s);
    std::lock_guard<std::mutex> lock{s->mutex};
    p.origin = s->origin.load(std::memory_order_relaxed);
    p.steady = s->clock.load(std::memory_order_relaxed) == nullptr;
    if (p.steady && s->tsc.usable) p.source = "tsc calibrated to steady_clock";
    if (!p.steady) p.source = "ReportOptions::clock";
    p.cap = s->options.max_trace_bytes;
    p.schema = s->options.trace_schema;
    for (auto const& t : s->threads) threads.push_back(t.get());
  }
  p.copies.reserve(threads.size());
  for (ThreadData* td : threads) p.copies.push_back(copy_for_trace(*td, p.dropped));
  p.counters = copy_counters(p.counters_dropped);
  if (s != nullptr) {
    std::lock_guard<std::mutex> lock{s->se_mutex};
    p.se = s->se_trace;
    p.dropped += s->se_dropped;
    for (auto const& st : s->se_stats) p.se_names.push_back(component(st.domain, st.name));
  }
  return p;
}

/// The events of `p`, after the header (and after any streamed pieces).
inline void trace_events(TraceWriter& w, TraceParts& p) {
  for (ThreadTraceCopy& t : p.copies) w.thread(t);
  w.start_end(p.se, p.se_names);
  w.busy_counters();
  w.counter_tracks(p.counters);
}

/// Bytes kept for the header, otherData and the note at a cut when a cap is applied.
inline constexpr std::size_t trace_reserve = 2048;

/// The trace's end: the note at a cut (`cut` events left out, older than `cutoff`), the closing
/// bracket and otherData.
inline void trace_end(TraceWriter& w, TraceParts const& p, std::uint64_t cut, std::int64_t cutoff) {
  if (cut != 0) {
    if (cutoff == std::numeric_limits<std::int64_t>::min()) cutoff = p.origin;
    w.cut_note(cutoff, p.cap, cut);
  }
  w.end(fmt::format(
      "{{\"producer\":\"nsightkit {}\",\"rank\":{},\"pid\":{},\"forked_from\":{},"
      "\"events_dropped\":{},\"clock\":\"{}\",\"clock_source\":\"{}\",\"time_origin_ns\":{},"
      "\"counter_samples_dropped\":{},"
      "\"size_cap\":{{\"max_bytes\":{},\"events_dropped\":{},\"kept_after_us\":{}}}}}",
      version_string, p.rank, p.os_pid, p.parent != 0 ? std::to_string(p.parent) : "null",
      p.dropped, p.steady ? "steady" : "custom", p.source, p.origin, p.counters_dropped, p.cap, cut,
      cut != 0 ? fmt::format("{:.3f}", static_cast<double>(cutoff - p.origin) / 1e3)
               : std::string{"null"}));
}

/// The whole trace from memory (no streamed pieces): under a cap it is formatted twice, first
/// measuring, then leaving out the oldest events.
inline void write_trace_from_memory(TextSink& sink) {
  TraceParts p = trace_parts(state());
  std::int64_t cutoff = std::numeric_limits<std::int64_t>::min();
  if (p.cap != 0) {
    TextSink scratch;
    TraceWriter m{scratch, p.pid, p.origin, p.schema};
    m.measure();
    m.begin(p.name, p.distributed);
    trace_events(m, p);
    cutoff = m.cutoff_for(p.cap > trace_reserve ? p.cap - trace_reserve : 0);
  }
  TraceWriter w{sink, p.pid, p.origin, p.schema};
  w.keep_after(cutoff);
  w.begin(p.name, p.distributed);
  trace_events(w, p);
  trace_end(w, p, w.cut(), cutoff);
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
