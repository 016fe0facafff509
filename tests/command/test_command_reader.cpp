// The reader of saved reports (tools/nsightkit/report_file.cpp): a summary that summary.hpp wrote
// reads back into the snapshot it came from — written again, byte for byte the same JSON, and the
// same table, HTML page data and per-rank merge input — for a crafted snapshot with every field
// and for the report's own snapshot of a run; gzip files; traces; and every kind of bad file
// refused with one message naming the file and the problem.
#include "crafted.hpp"
#include "report_file.hpp"

#include <nsightkit/detail/mpi/merge.hpp>
#include <nsightkit/detail/mpi/wire.hpp>
#include <nsightkit/detail/report/output/file.hpp>
#include <nsightkit/detail/report/output/html.hpp>
#include <nsightkit/detail/report/output/summary.hpp>
#include <nsightkit/detail/report/output/table.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

namespace rep = nsightkit::detail::report;
namespace mpi = nsightkit::detail::mpi;
using nsightkit_command::InputError;
using nsightkit_command::read_summary;

/// A file in a directory of this process's own (removed at exit).
std::string path_of(std::string const& name) {
  static std::string const dir = [] {
    char tmpl[] = "/tmp/nsk_command_reader_XXXXXX";
    char* d = ::mkdtemp(tmpl);
    REQUIRE(d != nullptr);
    return std::string{d};
  }();
  return dir + "/" + name;
}

std::string write(std::string const& name, std::string const& text) {
  std::string const p = path_of(name);
  std::FILE* f = std::fopen(p.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fwrite(text.data(), 1, text.size(), f) == text.size());
  REQUIRE(std::fclose(f) == 0);
  return p;
}

std::string page_data(nsightkit::ReportSnapshot const& s) {
  rep::TextSink sink;
  rep::html_data(sink, {{&s, rep::html_label(s)}}, rep::HtmlMode::single, rep::html_title(s));
  return sink.buffer();
}

/// What every output of a snapshot needs comes back: JSON, table, page data, merge input.
void check_round_trip(nsightkit::ReportSnapshot const& s, char const* name) {
  std::string const json = rep::summary_json(s);
  nsightkit_command::SavedSummary const r = read_summary(write(name, json));
  CHECK(r.nsightkit_version == nsightkit::version_string);
  CHECK(rep::summary_json(r.snapshot, r.nsightkit_version) == json);
  CHECK(rep::format_table(r.snapshot, true) == rep::format_table(s, true));
  CHECK(page_data(r.snapshot) == page_data(s));
  CHECK(mpi::encode(mpi::rank_report(r.snapshot, 5)) == mpi::encode(mpi::rank_report(s, 5)));
  // The tree and the threads as the snapshot had them; mean times exactly (the JSON rounds them).
  REQUIRE(r.snapshot.paths.size() == s.paths.size());
  for (std::size_t i = 0; i < s.paths.size(); ++i) {
    CHECK(r.snapshot.paths[i].parent == s.paths[i].parent);
    CHECK(r.snapshot.paths[i].cpu.mean_ns == s.paths[i].cpu.mean_ns);
  }
  REQUIRE(r.snapshot.thread_paths.size() == s.thread_paths.size());
  for (std::size_t i = 0; i < s.thread_paths.size(); ++i) {
    CHECK(r.snapshot.thread_paths[i].thread == s.thread_paths[i].thread);
    CHECK(r.snapshot.thread_paths[i].parent == s.thread_paths[i].parent);
  }
}

std::atomic<std::int64_t> fake_now{5'000};
std::int64_t fake_clock() noexcept { return fake_now.load(); }
void tick(std::int64_t ns) { fake_now.fetch_add(ns); }

std::string error_of(std::string const& path) {
  try {
    (void)read_summary(path);
  } catch (InputError const& e) {
    return e.what();
  }
  return "(read without an error)";
}

}  // namespace

TEST_CASE("round trip: a crafted snapshot with every field reads back as it was written") {
  nsightkit::ReportSnapshot const s = nsk_command_test::crafted();
  check_round_trip(s, "crafted.json");
  nsightkit::ReportSnapshot const r =
      read_summary(write("again.json", rep::summary_json(s))).snapshot;
  CHECK(r.rank == 3);
  CHECK(r.forked_from == 4242);
  CHECK(r.gpu.streams.at(0).name == "compute");
  CHECK(r.paths.at(2).work.top_kernels.at(0).name == "void gemm<float, 128>(float const*, float*)");
  CHECK(r.paths.at(2).cpu.mean_ns == 700'000'003.0 / 30.0);
  CHECK_FALSE(r.paths.at(2).cpu.exact);
  CHECK(r.step_series.at(0).start_ns == -5'000);
  CHECK(r.threads.at(1).exited);
}

TEST_CASE("round trip: the report's own snapshot of a run on two threads") {
  nsightkit::Report::disable();
  nsightkit::Report::reset();
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  o.clock = &fake_clock;
  nsightkit::Report::enable(o);
  for (int i = 0; i < 5; ++i) {
    nsightkit::ScopedRange step{"step"};
    tick(10 + i);
    {
      nsightkit::ScopedRange f{"forward {}", i % 2};
      tick(1'003 * (i + 1));
    }
    nsightkit::mark("checkpoint");
  }
  std::thread loader{[] {
    nsightkit::name_current_thread("loader");
    nsightkit::ScopedRange load{"load \"batch\" \xc3\xbc"};
    tick(777);
  }};
  loader.join();
  {
    nsightkit::UniqueRange epoch{"epoch"};
    tick(3);
  }
  nsightkit::ReportSnapshot const s = nsightkit::Report::snapshot();
  nsightkit::Report::disable();
  nsightkit::Report::reset();
  if (nsightkit::enabled) {
    REQUIRE(s.threads.size() == 2);
    REQUIRE(s.find("step/forward 1") != nullptr);
  }
  check_round_trip(s, "live.json");
}

TEST_CASE("gzip: a compressed summary reads as the plain one") {
  std::string const json = rep::summary_json(nsk_command_test::crafted());
  std::string const p = path_of("s.json.gz");
  std::string why;
  std::FILE* f = rep::gzip::open(p, why);
  if (f == nullptr) {
    WARN("gzip cannot be written here: " << why);
    return;
  }
  REQUIRE(std::fwrite(json.data(), 1, json.size(), f) == json.size());
  REQUIRE(std::fclose(f) == 0);
  CHECK(rep::summary_json(read_summary(p).snapshot) == json);
  std::string const whole = nsightkit_command::read_text(p);
  CHECK(whole == json);
  std::FILE* in = std::fopen(p.c_str(), "rb");
  std::string raw(4096, '\0');
  raw.resize(std::fread(&raw[0], 1, raw.size(), in));
  std::fclose(in);
  std::string const cut = write("cut.json.gz", raw.substr(0, raw.size() / 2));
  CHECK_THAT(error_of(cut), Catch::Contains("cut.json.gz: gzip stream cut short or broken"));
}

TEST_CASE("traces: events one per line, the process's facts, bad events named") {
  std::string const trace =
      R"json({"displayTimeUnit":"ns","traceEvents":[
{"ph":"M","name":"process_name","pid":3,"tid":0,"ts":0,"args":{"name":"nsightkit rank 3 (pid 9)"}},
{"ph":"M","name":"process_sort_index","pid":3,"tid":0,"ts":0,"args":{"sort_index":3}},
{"ph":"X","name":"a \"b\"","cat":"nsightkit","pid":3,"tid":11,"ts":12.5,"dur":1.25,"args":{"path":"a"}},
{"ph":"b","name":"epoch","cat":"nsightkit start/end","id":1,"pid":3,"tid":11,"ts":1e-05}
],"otherData":{"producer":"nsightkit 0.9.1","rank":3,"pid":9,"clock":"steady","time_origin_ns":123456789,"events_dropped":4}})json";
  auto const f = nsightkit_command::read_report_file(write("t.json", trace));
  REQUIRE(f.kind == nsightkit_command::FileKind::trace);
  CHECK(f.trace.nsightkit_version == "0.9.1");
  CHECK(f.trace.rank == 3);
  CHECK(f.trace.pid == 9L);
  CHECK(f.trace.clock == "steady");
  CHECK(f.trace.origin_ns == 123456789);
  CHECK(f.trace.events_dropped == 4);
  REQUIRE(f.trace.events.size() == 4);
  CHECK(f.trace.events[0].meta == nsightkit_command::TraceMeta::process_name);
  CHECK(f.trace.events[1].meta == nsightkit_command::TraceMeta::process_sort_index);
  CHECK(
      f.trace.events[2].json ==
      R"({"ph":"X","name":"a \"b\"","cat":"nsightkit","pid":3,"tid":11,"ts":12.5,"dur":1.25,"args":{"path":"a"}})");
  // Merged traces and other producers' are told apart; an event without a time is named.
  std::string merged = trace;
  merged.replace(merged.find("nsightkit 0.9.1"), 15, "nsightkit merge (nsightkit 0.9.1)");
  CHECK(nsightkit_command::read_report_file(write("m.json", merged)).kind ==
        nsightkit_command::FileKind::merged);
  std::string foreign = trace;
  foreign.replace(foreign.find("nsightkit 0.9.1"), 15, "chrome");
  CHECK(nsightkit_command::read_report_file(write("f.json", foreign)).kind ==
        nsightkit_command::FileKind::other);
  std::string bad = trace;
  bad.replace(bad.find("\"ts\":12.5"), 9, "\"ts\":\"soon\"");
  CHECK_THROWS_WITH(nsightkit_command::read_report_file(write("bad.json", bad)),
                    Catch::Contains("bad.json: traceEvents[2] ('a \"b\"') has no numeric 'ts'"));
  CHECK_THAT(error_of(path_of("t.json")), Catch::Contains("a trace (trace=...), not a summary"));
}

TEST_CASE("bad files: one message naming the file and the problem") {
  std::string const good = rep::summary_json(nsk_command_test::crafted());
  auto replaced = [&](std::string const& what, std::string const& with) {
    std::string s = good;
    std::size_t const at = s.find(what);
    REQUIRE(at != std::string::npos);
    return s.replace(at, what.size(), with);
  };
  CHECK_THAT(error_of(path_of("missing.json")),
             Catch::Contains("missing.json: cannot read: No such file or directory"));
  CHECK_THAT(error_of(path_of("")), Catch::Contains(": a directory, not a file"));
  CHECK_THAT(error_of(write("empty.json", " \n")),
             Catch::Contains("empty.json: empty file (did the process die before writing it?)"));
  CHECK_THAT(error_of(write("cut.json", good.substr(0, good.size() / 2))),
             Catch::Contains("cut.json: broken JSON (") &&
                 Catch::Contains("cut short by a process that died while writing it?"));
  CHECK_THAT(error_of(write("text.json", "this is no JSON\n")),
             Catch::Contains("text.json: not JSON (parse error at line 1, column 2"));
  CHECK_THAT(error_of(write("latin1.json", "\xff\xfe garbage")),
             Catch::Contains("latin1.json: not UTF-8 text (byte 0 is no UTF-8)"));
  CHECK_THAT(error_of(write("other.json", R"({"format":"something-else","version":1})")),
             Catch::Contains("other.json: not an nsightkit summary: expected \"format\": "
                             "\"nsightkit-report\""));
  CHECK_THAT(error_of(write("merged.json", R"({"format":"nsightkit-merged-report","version":1})")),
             Catch::Contains("merged.json: a merged report (nsightkit merge)"));
  CHECK_THAT(error_of(write("v2.json", replaced("\"version\":1", "\"version\":2"))),
             Catch::Contains("v2.json: nsightkit-report version 2 is not one this reader "
                             "understands (1)"));
  CHECK_THAT(error_of(write(
                 "nopaths.json",
                 R"({"format":"nsightkit-report","version":1,"rank":null,"pid":1,"run_ns":5})")),
             Catch::Contains("nopaths.json: nsightkit-report without 'paths'"));
  CHECK_THAT(error_of(write("nullpaths.json", replaced("\"paths\":[", "\"paths\":null,\"x\":["))),
             Catch::Contains("nullpaths.json: 'paths' must be a list, not null"));
  CHECK_THAT(error_of(write("rank.json", replaced("\"rank\":3", "\"rank\":-3"))),
             Catch::Contains("rank.json: 'rank' must be a non-negative integer or null, not -3"));
  CHECK_THAT(error_of(write("count.json", replaced("\"count\":10", "\"count\":\"ten\""))),
             Catch::Contains("count.json: paths[0] ('train'): 'count' must be a non-negative "
                             "integer, not \"ten\""));
  CHECK_THAT(error_of(write("depth.json", replaced("\"depth\":1", "\"depth\":4"))),
             Catch::Contains("depth.json: paths[1] ('train/forward') has depth 4 but no parent "
                             "before it (rows must be in tree order)"));
  CHECK_THAT(
      error_of(write("twice.json", replaced("\"name\":\"load", "\"name\":\"train\",\"x\":\"load"))),
      Catch::Contains("twice.json: paths[5]: path 'load"));
  CHECK_THAT(error_of(write("series.json", replaced("[-5000,1,", "[-5000,\"one\","))),
             Catch::Contains("series.json: step_series[0] must be [start_ns, steps, total_ns, "
                             "max_ns] (integers)"));
  CHECK_THAT(error_of(write("busy.json", replaced("\"busy_ns\":600000000,", ""))),
             Catch::Contains("busy.json: paths[1] ('train/forward'): gpu_work has no 'busy_ns'"));
}
