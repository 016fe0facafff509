// The HTML page, the trace's size cap and gzip output, the step series and the grammar's new
// items (docs/report-html.md). End-to-end checks in a browser are in check_html.py.
// report.hpp includes the engine only when instrumentation is enabled; these tests also check
// its pieces (zlib's layout, the step series, counters) in a disabled build.
#include <nsightkit/detail/report/counters.hpp>
#include <nsightkit/detail/report/engine.hpp>  // the engine's pieces, in either mode
#include <nsightkit/detail/report/output/file.hpp>
#include <nsightkit/detail/report/step_series.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#if __has_include(<zlib.h>)
#include <zlib.h>

#include <cstddef>
// The report declares zlib's z_stream itself (zlib.h would reach every program): same layout.
using NskStream = nsightkit::detail::report::gzip::Stream;
static_assert(sizeof(NskStream) == sizeof(z_stream), "z_stream's size");
static_assert(offsetof(NskStream, avail_in) == offsetof(z_stream, avail_in), "avail_in");
static_assert(offsetof(NskStream, next_out) == offsetof(z_stream, next_out), "next_out");
static_assert(offsetof(NskStream, avail_out) == offsetof(z_stream, avail_out), "avail_out");
static_assert(offsetof(NskStream, msg) == offsetof(z_stream, msg), "msg");
static_assert(offsetof(NskStream, zalloc) == offsetof(z_stream, zalloc), "zalloc");
static_assert(offsetof(NskStream, opaque) == offsetof(z_stream, opaque), "opaque");
static_assert(offsetof(NskStream, reserved) == offsetof(z_stream, reserved), "reserved");
#endif

namespace {

namespace rep = nsightkit::detail::report;

std::string parse_error(char const* spec) {
  std::string why;
  auto o = nsightkit::ReportOptions::try_parse(spec, &why);
  return o ? std::string{"(parsed)"} : why;
}

std::size_t count(std::string const& s, std::string const& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

/// A snapshot with known rows, the way Report::snapshot() orders them (tree order).
nsightkit::ReportSnapshot crafted() {
  nsightkit::ReportSnapshot s;
  s.pid = 4242;
  s.run_ns = 1'000'000;
  nsightkit::PathStats a;
  a.path = a.name = "model";
  a.cpu.count = 3;
  a.cpu.total_ns = 900'000;
  a.self_ns = 100'000;
  s.paths.push_back(a);
  nsightkit::PathStats b;
  b.name = "</script><b>x</b>";
  b.path = "model/" + b.name;
  b.depth = 1;
  b.parent = 0;
  b.cpu.count = 3;
  b.cpu.total_ns = 800'000;
  b.work.kernels = 6;
  b.work.busy_ns = 500'000;
  b.work.top_kernels.push_back(nsightkit::KernelStats{"gemm<float>", 6, 450'000});
  s.paths.push_back(b);
  s.steps.count = 2;
  s.step_series.push_back(nsightkit::StepPoint{10, 1, 400'000, 400'000});
  s.step_series.push_back(nsightkit::StepPoint{500'000, 1, 450'000, 450'000});
  return s;
}

}  // namespace

TEST_CASE("grammar: html=PATH, trace-size=BYTES and their errors") {
  auto o = nsightkit::ReportOptions::parse("html=out/r.html");
  CHECK(o.html == "out/r.html");
  CHECK(o.table.empty());  // an output alone: no table
  CHECK(o.max_trace_bytes == std::size_t{256} << 20);
  CHECK(nsightkit::ReportOptions::parse("trace=t.json.gz,trace-size=64M").max_trace_bytes ==
        std::size_t{64} << 20);
  CHECK(nsightkit::ReportOptions::parse("trace=t.json,trace-size=512k").max_trace_bytes == 524288);
  CHECK(nsightkit::ReportOptions::parse("trace=t.json,trace-size=0").max_trace_bytes == 0);
  CHECK(nsightkit::ReportOptions::parse("trace=t.json,trace-size=100000").max_trace_bytes ==
        100000);
  CHECK_THAT(parse_error("trace-size=100"), Catch::Contains("bad size in 'trace-size=100'"));
  CHECK_THAT(parse_error("trace-size=lots"), Catch::Contains("bad size"));
  CHECK_THAT(parse_error("trace-size=9999999G"), Catch::Contains("bad size"));
  CHECK_THAT(parse_error("html"), Catch::Contains("'html' needs a file path (html=PATH)"));
  CHECK_THAT(parse_error("html=a.html,html=b.html"), Catch::Contains("'html' given twice"));
  CHECK_THAT(parse_error("json=x.html,html=x.html"),
             Catch::Contains("json and html both write 'x.html'"));
  CHECK_THAT(parse_error("tabel"), Catch::Contains("html=PATH"));  // the grammar names them
}

TEST_CASE("step series: every step while it fits, then bounded with the whole run covered") {
  rep::StepSeries s;
  for (int i = 0; i < 2048; ++i) s.add(i * 10, i);
  REQUIRE(s.points().size() == 2048);
  CHECK(s.points()[7].steps == 1);
  CHECK(s.points()[7].total_ns == 7);
  std::int64_t total = 0;
  for (int i = 0; i < 100000; ++i) s.add(20480 + i * 10, 5);
  std::uint64_t steps = 0;
  std::int64_t sum = 0, longest = 0;
  for (auto const& p : s.points()) {
    steps += p.steps;
    sum += p.total_ns;
    longest = std::max(longest, p.max_ns);
  }
  for (int i = 0; i < 2048; ++i) total += i;
  CHECK(s.points().size() <= rep::step_series_capacity);
  CHECK(steps == 2048 + 100000);
  CHECK(sum == total + 5 * 100000);
  CHECK(longest == 2047);
  CHECK(s.points().front().start_ns == 0);  // the run's start is still covered
  for (std::size_t i = 1; i < s.points().size(); ++i)
    CHECK(s.points()[i - 1].start_ns < s.points()[i].start_ns);
}

TEST_CASE("the page: template filled, text escaped, data inlined, no library") {
  auto const s = crafted();
  rep::TextSink sink;
  rep::write_html(sink, s);
  std::string const page = sink.buffer();
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("@@NSK_") == std::string::npos);
  CHECK(count(page, "<title>nsightkit report (pid 4242)</title>") == 1);
  // A name cannot end the data's script element.
  CHECK(page.find("</script><b>") == std::string::npos);
  CHECK(page.find("\\u003c/script>\\u003cb>x\\u003c/b>") != std::string::npos);
  // The page's own script draws every chart: it reads no library and says nothing of one.
  CHECK(page.find("d3.") == std::string::npos);
  CHECK(page.find("<script src") == std::string::npos);
  CHECK(page.find("\"gemm\\u003cfloat>\"") != std::string::npos);
  CHECK(page.find("\"series\":[[10,1,400000,400000],[500000,1,450000,450000]]") !=
        std::string::npos);
  CHECK(page.find("\"parent\":[-1,0]") != std::string::npos);
  CHECK(page.find("\"top\":[{\"1\":[[0,6,450000]]}]") != std::string::npos);
  CHECK(page.find("\n[3,900000,100000,") != std::string::npos);
  CHECK(count(page, "</script>") == 2);  // data, page script
}

TEST_CASE("the page carries the advice and what was not evaluated, escaped") {
  auto s = crafted();
  nsightkit::Advice a;
  a.rule = "pageable-copies";
  a.severity = "high";
  a.paths = {"model", "model/</script>"};
  a.evidence = "3 copies from pageable memory, 1.2 ms";
  a.cost_ns = 1'200'000;
  a.suggestion = "use pinned memory";
  s.advice.push_back(a);
  s.advice_missing.push_back("copy-overlap: no CUPTI records");
  rep::TextSink sink;
  rep::write_html(sink, s);
  std::string const page = sink.buffer();
  CHECK(page.find("\"advice\":[[\"pageable-copies\",\"high\",1200000,"
                  "\"3 copies from pageable memory, 1.2 ms\",\"use pinned memory\","
                  "[\"model\",\"model/\\u003c/script>\"]]]") != std::string::npos);
  CHECK(page.find("\"advice_missing\":[\"copy-overlap: no CUPTI records\"]") != std::string::npos);
  CHECK(page.find("id=\"nsk-advice-sec\"") != std::string::npos);
  // Without advice the lists are empty and the page's script keeps the section hidden.
  rep::TextSink plain;
  rep::write_html(plain, crafted());
  CHECK(plain.buffer().find("\"advice\":[],\"advice_missing\":[]") != std::string::npos);
}

TEST_CASE("a page of several runs: the union of their paths, each run's numbers or null") {
  auto const before = crafted();
  auto after = crafted();
  after.rank = 1;
  after.paths.pop_back();  // "model/</script>..." only in the first run
  nsightkit::PathStats c;
  c.path = "model/new";
  c.name = "new";
  c.depth = 1;
  c.parent = 0;
  c.cpu.count = 1;
  c.cpu.total_ns = 70;
  after.paths.push_back(c);
  nsightkit::PathStats d;  // a domain's range of the same name is another path
  d.path = "model/cuda@new";
  d.name = "cuda@new";
  d.domain = "cuda";
  d.depth = 1;
  d.parent = 0;
  d.cpu.count = 2;
  d.cpu.total_ns = 90;
  after.paths.push_back(d);
  rep::TextSink sink;
  rep::write_html(sink, {{&before, "before"}, {&after, "after"}}, rep::HtmlMode::compare,
                  "nsightkit: before vs after");
  std::string const& page = sink.buffer();
  CHECK(page.find("\"mode\":\"compare\"") != std::string::npos);
  CHECK(page.find("\"label\":\"before\",\"rank\":null,\"pid\":4242") != std::string::npos);
  CHECK(page.find("\"label\":\"after\",\"rank\":1,\"pid\":4242") != std::string::npos);
  // model, the first run's child, then the second run's two: parents by index.
  CHECK(page.find("\"paths\":{\"name\":[\"model\",\"\\u003c/script>\\u003cb>x\\u003c/b>\","
                  "\"new\",\"cuda@new\"],\"parent\":[-1,0,0,0]}") != std::string::npos);
  // Per run a row per path of the union; null where the run lacks it.
  CHECK(page.find(
            "\"values\":[[\n[3,900000,100000,0.0,0,0,0,1,0,0,0,0,0,0,0,0],\n[3,800000,0,0.0,"
            "0,0,0,1,500000,0,0,6,0,0,0,0],\nnull,\nnull],[\n[3,900000,100000,0.0,0,0,0,1,0,0,"
            "0,0,0,0,0,0],\nnull,\n[1,70,0,0.0,0,0,0,1,0,0,0,0,0,0,0,0],\n[2,90,0,0.0,0,0,0,1,0,"
            "0,0,0,0,0,0,0]]]") != std::string::npos);
  CHECK(page.find("\"top\":[{\"1\":[[0,6,450000]]},{}]") != std::string::npos);
  CHECK(page.find("<title>nsightkit: before vs after</title>") != std::string::npos);
}

#if NSIGHTKIT_ENABLED
TEST_CASE("trace size cap: the newest events stay, the oldest go, and the trace says so") {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  o.record_trace = true;
  o.max_trace_bytes = 64 * 1024;
  REQUIRE(nsightkit::Report::enable(o));
  nsightkit::Report::reset();
  for (int i = 0; i < 5000; ++i) {
    nsightkit::ScopedRange r{"r" + std::to_string(i)};
  }
  std::string const t = nsightkit::Report::trace_json();
  CHECK(t.size() <= o.max_trace_bytes);
  CHECK(t.find("\"name\":\"r4999\"") != std::string::npos);  // newest kept
  CHECK(t.find("\"name\":\"r0\"") == std::string::npos);     // oldest left out
  CHECK(t.find("older events left out (trace-size cap of 65536 bytes)") != std::string::npos);
  CHECK(t.find("\"size_cap\":{\"max_bytes\":65536,\"events_dropped\":") != std::string::npos);
  CHECK(t.find("\"events_dropped\":0,\"kept_after_us\":null") == std::string::npos);

  // No cap: everything.
  o.max_trace_bytes = 0;
  REQUIRE(nsightkit::Report::enable(o));
  std::string const all = nsightkit::Report::trace_json();
  CHECK(all.find("\"name\":\"r0\"") != std::string::npos);
  CHECK(all.find("\"size_cap\":{\"max_bytes\":0,\"events_dropped\":0,\"kept_after_us\":null}") !=
        std::string::npos);
  CHECK(all.size() > 64 * 1024);
  nsightkit::Report::disable();
  nsightkit::Report::reset();
}

TEST_CASE("counter tracks: samples while a trace is recorded, none otherwise") {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  REQUIRE(nsightkit::Report::enable(o));
  nsightkit::Report::reset();
  rep::counter_sample("pool bytes", 1.0);  // no trace recorded: not kept
  o.record_trace = true;
  REQUIRE(nsightkit::Report::enable(o));
  rep::counter_sample("pool bytes", 4096.0);
  rep::counter_sample("pool bytes", 0.5);
  // Other features' counters arrive through the sink the report installed when enabled.
  nsightkit::detail::counter("prefetch batches waiting", 3.0);
  std::string const t = nsightkit::Report::trace_json();
  CHECK(count(t, "\"ph\":\"C\",\"name\":\"pool bytes\"") == 2);
  CHECK(count(t, "\"ph\":\"C\",\"name\":\"prefetch batches waiting\"") == 1);
  CHECK(t.find("\"args\":{\"value\":4096}") != std::string::npos);
  CHECK(t.find("\"args\":{\"value\":0.5}") != std::string::npos);
  nsightkit::Report::reset();  // forgets them
  CHECK(nsightkit::Report::trace_json().find("pool bytes") == std::string::npos);
  nsightkit::Report::disable();
}

TEST_CASE("gzip: a .gz trace is compressed, else written plain without .gz and said once") {
  char const* dir = std::getenv("NSK_TEST_DIR");
  std::string const base = dir != nullptr ? std::string{dir} + "/" : std::string{};
  std::string const path = base + "unit_trace.json.gz";
  std::remove(path.c_str());
  std::string wrote;
  std::string const text = "{\"traceEvents\":[]}\n";
  auto produce = [&](rep::TextSink& sink) { sink.buffer() += text; };
  bool const ok = rep::write_output(path, "trace", "trace", ".json", produce, wrote);
  REQUIRE(ok);
  if (rep::gzip::api().unavailable == nullptr) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    REQUIRE(f != nullptr);
    unsigned char magic[2] = {0, 0};
    CHECK(std::fread(magic, 1, 2, f) == 2);
    std::fclose(f);
    CHECK(magic[0] == 0x1f);
    CHECK(magic[1] == 0x8b);
    CHECK(wrote == path + " (trace)");
  } else {
    CHECK(wrote == base + "unit_trace.json (trace)");
  }
  std::remove(path.c_str());
}
#endif
