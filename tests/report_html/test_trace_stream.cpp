// The trace streamed to its file while the run goes on (docs/report-html.md, "Traces that stay
// small"): pieces reach the file before any write, the recording limit no longer loses events, a
// write completes the file and the next piece replaces its end, the size cap drops the oldest
// pieces, reset() starts the file again, trace_json() reads the pieces back, a plain path works,
// a forked child leaves the parent's file alone, a failing write loses nothing, and enabling the
// report without the trace completes the file (or makes none when nothing was streamed). The worker's
// own timing is not relied on: the tests drain explicitly (check_html.py's `stream` runs it with
// the worker alone).
#include <nsightkit/detail/report/output/file.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/report/trace/stream.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

namespace {

namespace rep = nsightkit::detail::report;

std::string dir() {
  char const* d = std::getenv("NSK_TEST_DIR");
  return d != nullptr ? std::string{d} + "/" : std::string{};
}

std::string bytes_of(std::string const& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

/// The file's text (gzip members inflated) and how many members it has.
std::string text_of(std::string const& path, std::size_t* members = nullptr) {
  std::string const raw = bytes_of(path);
  if (path.size() < 3 || path.compare(path.size() - 3, 3, ".gz") != 0) return raw;
  std::string out;
  REQUIRE(rep::gzip::inflate_members(raw, out, members));
  return out;
}

int count(std::string const& s, std::string const& what) {
  int n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

void drain() {
  rep::State* s = rep::state();
  REQUIRE(s != nullptr);
  REQUIRE(rep::TraceStream::existing() != nullptr);
  rep::TraceStream::existing()->drain(*s);
}

void record(int from, int to) {
  for (int i = from; i < to; ++i) {
    nsightkit::ScopedRange r{nsightkit::Attributes{nsightkit::Payload{std::int64_t{i}}}, "layer"};
  }
}

std::string payload(int i) { return "\"payload\":" + std::to_string(i) + "}"; }

/// A test's trace file: absent before the test; after it, the report is off and reset and the
/// file is gone.
struct TestFile {
  std::string path;
  explicit TestFile(std::string p) : path{std::move(p)} { std::remove(path.c_str()); }
  TestFile(TestFile const&) = delete;
  TestFile& operator=(TestFile const&) = delete;
  ~TestFile() {
    nsightkit::Report::disable();
    nsightkit::Report::reset();
    std::remove(path.c_str());
  }
};

nsightkit::ReportOptions streamed(std::string const& path) {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  o.trace = path;
  return o;
}

/// A .gz name where zlib can be loaded, else the plain name the report would use instead.
std::string gz(std::string const& stem) {
  return dir() + stem + (rep::gzip::api().unavailable == nullptr ? ".json.gz" : ".json");
}

}  // namespace

TEST_CASE("a streamed trace reaches its file during the run and keeps every event") {
  TestFile const file{gz("stream_all")};
  std::string const& path = file.path;
  nsightkit::ReportOptions o = streamed(path);
  o.max_trace_events = 1000;  // the recording limit: far fewer than the run records
  REQUIRE(nsightkit::Report::enable(o));
  nsightkit::Report::reset();
  for (int b = 0; b < 10; ++b) {
    record(b * 800, (b + 1) * 800);
    drain();
  }
  // Before any write: the events are in the file, which is valid gzip, and has no end yet.
  std::size_t members = 0;
  std::string const during = text_of(path, &members);
  if (path.back() == 'z') CHECK(members >= 11);  // the header and a piece per drain
  CHECK(during.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", 0) == 0);
  CHECK(count(during, "\"name\":\"layer\"") == 8000);
  CHECK(during.find("otherData") == std::string::npos);

  REQUIRE(nsightkit::Report::write());
  std::string const t = text_of(path);
  CHECK(count(t, "\"name\":\"layer\"") == 8000);
  CHECK(t.find(payload(0)) != std::string::npos);
  CHECK(t.find(payload(7999)) != std::string::npos);
  CHECK(t.find("\"events_dropped\":0,") != std::string::npos);  // the recording limit lost none
  CHECK(count(t, "\"otherData\"") == 1);
  CHECK(t.find("\"thread_name\"") != std::string::npos);
  CHECK(t.substr(t.size() - 3) == "}}\n");
  // trace_json() reads the pieces back: the same text.
  CHECK(nsightkit::Report::trace_json() == t);

  // More events after a write: the next piece replaces the end, the next write adds it again.
  record(8000, 8100);
  drain();
  std::string const mid = text_of(path);
  CHECK(mid.find("otherData") == std::string::npos);
  CHECK(count(mid, "\"name\":\"layer\"") == 8100);
  REQUIRE(nsightkit::Report::write());
  std::string const t2 = text_of(path);
  CHECK(count(t2, "\"name\":\"layer\"") == 8100);
  CHECK(count(t2, "\"otherData\"") == 1);

  // Events not drained yet are in the end, and a write without new pieces rewrites only it.
  record(8100, 8150);
  REQUIRE(nsightkit::Report::write());
  REQUIRE(nsightkit::Report::write());
  std::string const t3 = text_of(path);
  CHECK(count(t3, "\"name\":\"layer\"") == 8150);
  CHECK(count(t3, "\"otherData\"") == 1);

  // reset(): the file starts again.
  nsightkit::Report::reset();
  record(0, 3);
  drain();
  REQUIRE(nsightkit::Report::write());
  CHECK(count(text_of(path), "\"name\":\"layer\"") == 3);
}

TEST_CASE("the size cap drops the oldest streamed pieces, and the trace says so") {
  TestFile const file{gz("stream_cap")};
  std::string const& path = file.path;
  nsightkit::ReportOptions o = streamed(path);
  o.max_trace_bytes = 256 * 1024;
  REQUIRE(nsightkit::Report::enable(o));
  nsightkit::Report::reset();
  for (int b = 0; b < 40; ++b) {
    record(b * 500, (b + 1) * 500);
    drain();
  }
  REQUIRE(nsightkit::Report::write());
  std::string const t = text_of(path);
  CHECK(t.size() <= o.max_trace_bytes);
  CHECK(t.size() > o.max_trace_bytes / 2);  // pieces of about a sixteenth: little room wasted
  CHECK(t.find(payload(19999)) != std::string::npos);  // newest kept
  CHECK(t.find(payload(0)) == std::string::npos);      // oldest left out
  CHECK(count(t, "older events left out (trace-size cap of 262144 bytes)") == 1);
  int const kept = count(t, "\"name\":\"layer\"");
  std::size_t const at = t.find("\"size_cap\":{\"max_bytes\":262144,\"events_dropped\":");
  REQUIRE(at != std::string::npos);
  long const dropped = std::atol(t.c_str() + t.find("\"events_dropped\":", at + 20) + 17);
  CHECK(kept + dropped == 20000);  // every event is kept or counted as left out
  CHECK(nsightkit::Report::trace_json() == t);
}

TEST_CASE("a plain path streams too, and a forked child leaves the parent's file alone") {
  TestFile const file{dir() + "stream_plain.json"};
  std::string const& path = file.path;
  REQUIRE(nsightkit::Report::enable(streamed(path)));
  nsightkit::Report::reset();
  record(0, 100);
  drain();
  CHECK(count(bytes_of(path), "\"name\":\"layer\"") == 100);

  pid_t const child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    record(0, 7);  // the child's own report: a trace of its own (".pidN"), from memory
    bool const ok = nsightkit::Report::write();
    std::_Exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::string const child_path = dir() + "stream_plain.pid" + std::to_string(child) + ".json";
  std::string const c = bytes_of(child_path);
  CHECK(count(c, "\"name\":\"layer\"") == 7);
  CHECK(c.find("forked from pid") != std::string::npos);

  record(100, 150);
  REQUIRE(nsightkit::Report::write());
  std::string const t = bytes_of(path);
  CHECK(count(t, "\"name\":\"layer\"") == 150);
  CHECK(count(t, "\"otherData\"") == 1);
  std::remove(child_path.c_str());
}

TEST_CASE("a write to the streamed file that fails loses no event: the end holds them all") {
  // A file-size limit of 64 KiB makes streaming fail midway (EFBIG). With the limit lifted, the
  // write reads back the pieces, adds the events formatted after the failure, and writes it all.
  TestFile const file{dir() + "stream_efbig.json"};
  std::string const& path = file.path;
  REQUIRE(nsightkit::Report::enable(streamed(path)));
  nsightkit::Report::reset();
  auto const old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit lim{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &lim) == 0);
  rlimit small = lim;
  small.rlim_cur = 64 * 1024;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  for (int b = 0; b < 20; ++b) {
    record(b * 500, (b + 1) * 500);
    drain();
  }
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &lim) == 0);
  std::signal(SIGXFSZ, old_handler);
  CHECK(bytes_of(path).size() <= 64 * 1024);  // the stream stopped at the limit
  CHECK(nsightkit::Report::write());          // the whole trace, pieces read back
  std::string const t = bytes_of(path);
  CHECK(t.size() > 64 * 1024);
  CHECK(count(t, "\"name\":\"layer\"") == 10000);
  CHECK(t.find(payload(0)) != std::string::npos);
  CHECK(t.find(payload(9999)) != std::string::npos);
  CHECK(count(t, "\"otherData\"") == 1);
}

TEST_CASE("enabled again without the trace: a file with pieces is completed, else none is made") {
  TestFile const file{dir() + "stream_switch.json"};
  std::string const& path = file.path;
  nsightkit::ReportOptions no_trace = streamed("");
  // Nothing streamed yet (and no write): no file.
  REQUIRE(nsightkit::Report::enable(streamed(path)));
  nsightkit::Report::reset();
  record(0, 10);
  REQUIRE(nsightkit::Report::enable(no_trace));
  CHECK_FALSE(rep::path_kind(path) == rep::PathKind::regular);
  // Pieces streamed: the file gets its end and holds them.
  REQUIRE(nsightkit::Report::enable(streamed(path)));
  nsightkit::Report::reset();
  record(0, 25);
  drain();
  REQUIRE(nsightkit::Report::enable(no_trace));
  std::string const t = bytes_of(path);
  CHECK(count(t, "\"name\":\"layer\"") == 25);
  CHECK(count(t, "\"otherData\"") == 1);
}

TEST_CASE("trace: kernels overlapping on one stream go to a lane beside it, nested ranges do not") {
  // On an H100, cuDNN's kernels start before the one they follow ends (programmatic dependent
  // launch): one track per stream would hold slices that overlap without nesting.
  rep::ThreadTraceCopy c;
  c.tid = 42;
  c.names = {"\"conv1\"", "\"conv2\"", "\"block\""};
  c.paths = {"\"m/conv1\"", "\"m/conv2\"", "\"m\""};
  c.prepared = true;
  c.tracks = {rep::GpuTrack{nullptr, 0, 7}, rep::GpuTrack{reinterpret_cast<void*>(0x10), 0, -1}};
  c.gpu = {rep::GpuSlice{1000, 500, 0, 0, -1, 0},   // stream 7: 1000-1500
           rep::GpuSlice{1400, 500, 1, 0, -1, 0},   // 1400-1900 overlaps it: a lane
           rep::GpuSlice{1950, 100, 0, 0, -1, 0},   // after both: back on the stream's track
           rep::GpuSlice{1000, 1000, 2, 1, -1, 0},  // events track: a range's span...
           rep::GpuSlice{1200, 300, 0, 1, -1, 0}};  // ...and a nested one: same track
  rep::TextSink sink;
  rep::TraceWriter w{sink, 1, 0};
  w.begin("p");
  w.thread(c);
  std::string const& t = sink.buffer();
  std::string const stream = "\"tid\":" + std::to_string(rep::gpu_track_base);
  std::string const events = "\"tid\":" + std::to_string(rep::gpu_track_base + 1);
  std::string const lane = "\"tid\":" + std::to_string(rep::gpu_lane_base);
  CHECK(count(t, "\"cat\":\"nsightkit gpu\",\"pid\":1," + stream) == 2);
  CHECK(count(t, "\"cat\":\"nsightkit gpu\",\"pid\":1," + lane) == 1);
  CHECK(count(t, "\"cat\":\"nsightkit gpu\",\"pid\":1," + events) == 2);
  CHECK(t.find("GPU stream 7 (device 0), overlapping work 1") != std::string::npos);
  CHECK(t.find("\"name\":\"thread_name\",\"pid\":1," + lane) != std::string::npos);
}

TEST_CASE("a trace path that cannot be streamed to is written from memory at the end") {
  // A directory where the file should be: nothing is streamed, the trace goes to the fallback.
  TestFile const file{dir() + "stream_is_a_dir.json"};
  std::string const& path = file.path;
  REQUIRE(rep::make_directories(path).empty());
  REQUIRE(nsightkit::Report::enable(streamed(path)));
  nsightkit::Report::reset();
  rep::TraceStream* const stream = rep::TraceStream::existing();
  CHECK_FALSE((stream != nullptr && stream->holds(path)));
  record(0, 10);
  CHECK_FALSE(nsightkit::Report::write());  // not where asked: the fallback has it
  std::string const fallback = rep::fallback_path("trace", ".json");
  CHECK(count(bytes_of(fallback), "\"name\":\"layer\"") == 10);
  std::remove(fallback.c_str());
  ::rmdir(path.c_str());
}

#else

TEST_CASE("disabled build: no trace is streamed or written") {
  std::string const path = "stream_disabled.json.gz";
  std::remove(path.c_str());
  nsightkit::ReportOptions o;
  o.trace = path;
  o.at_exit = false;
  nsightkit::Report::enable(o);
  { nsightkit::ScopedRange r{"layer"}; }
  nsightkit::Report::write();
  std::FILE* f = std::fopen(path.c_str(), "rb");
  CHECK(f == nullptr);
  if (f != nullptr) std::fclose(f);
}

#endif
