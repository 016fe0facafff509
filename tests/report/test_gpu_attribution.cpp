// GPU work attributed to the ranges that launched it, as pure code: a fake source plays CUPTI's
// part (a launch callback on the launching thread, activity records delivered later from another
// thread) and the report's own ranges do the rest. Checks the interval union on overlapping
// streams, busy/span/idle, inclusive and self sums, launches from several threads, records that
// arrive while their range is still open or long after it ended, unknown correlation ids,
// dropped records, device memory per path, and that nothing is recorded in a disabled build.
#include <nsightkit/capture.hpp>
#include <nsightkit/detail/report/trace/stream.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "fake_cupti.hpp"

using nsightkit::Report;
using nsightkit::ReportOptions;
using nsightkit::ScopedRange;

#if NSIGHTKIT_ENABLED
namespace nr = nsightkit::detail::report;

using nsightkit_test::fake;
using nsightkit_test::FakeCupti;
using nsightkit_test::Session;

TEST_CASE("kernels on two streams: busy is their union, kernel time their sum, idle the gaps") {
  Session session;
  std::uint32_t a = 0, b = 0, c = 0;
  {
    ScopedRange layer{"layer"};
    a = fake->launch(100);
    b = fake->launch(110);
    c = fake->launch(120);
  }
  // a on stream 1 [1000, 1400), b on stream 2 [1200, 1600) (overlaps a), c on 1 [2000, 2100).
  fake->kernel(a, 1, 1000, 1400);
  fake->kernel(b, 2, 1200, 1600);
  fake->kernel(c, 1, 2000, 2100, "kernel_b");
  auto const snap = Report::snapshot();  // flush: the records arrive, the work settles
  auto const* row = snap.find("layer");
  REQUIRE(row != nullptr);
  nsightkit::GpuWorkStats const& w = row->work;
  REQUIRE(w.kernels == 3);
  REQUIRE(w.self_kernels == 3);
  REQUIRE(w.kernel_ns == 400 + 400 + 100);
  REQUIRE(w.busy_ns == 600 + 100);  // [1000,1600) and [2000,2100)
  REQUIRE(w.span_ns == 1100);       // 1000 -> 2100
  REQUIRE(w.idle_ns == 400);
  REQUIRE(w.calls_with_work == 1);
  REQUIRE(w.streams == 2);
  REQUIRE(w.delegated_kernels == 0);
  REQUIRE(w.launch_latency.count == 3);
  REQUIRE(w.launch_latency.min_ns == 900);   // a: 1000 - 100
  REQUIRE(w.launch_latency.max_ns == 1880);  // c: 2000 - 120
  REQUIRE(w.top_kernels.size() == 2);
  REQUIRE(w.top_kernels[0].name == "kernel_a");
  REQUIRE(w.top_kernels[0].count == 2);
  REQUIRE(w.top_kernels[0].total_ns == 800);
  REQUIRE(snap.gpu.source == "cupti");
  REQUIRE(snap.gpu.records == 3);
  REQUIRE(snap.gpu.devices.size() == 1);
  REQUIRE(snap.gpu.devices[0].busy_ns == 700);
  REQUIRE(snap.gpu.streams.size() == 2);
}

TEST_CASE("inclusive for parents, self for the range that launched, per call") {
  Session session;
  std::vector<std::uint32_t> ids;
  for (int step = 0; step < 2; ++step) {
    ScopedRange fwd{"forward"};
    ids.push_back(fake->launch(0));  // forward's own kernel
    {
      ScopedRange blk{"block"};
      ids.push_back(fake->launch(0));
      ids.push_back(fake->launch(0));
    }
  }
  std::int64_t t = 10'000;
  for (std::uint32_t id : ids) {
    fake->kernel(id, 1, t, t + 100);
    t += 1000;  // serial kernels 100 ns long, 900 ns apart
  }
  auto const snap = Report::snapshot();
  auto const& fwd = snap.find("forward")->work;
  auto const& blk = snap.find("forward/block")->work;
  REQUIRE(fwd.kernels == 6);
  REQUIRE(fwd.self_kernels == 2);
  REQUIRE(fwd.busy_ns == 600);
  REQUIRE(fwd.self_busy_ns == 200);
  REQUIRE(fwd.calls_with_work == 2);
  REQUIRE(fwd.span_ns == 2 * 2100);  // per call: 3 kernels, first start to last end
  REQUIRE(fwd.idle_ns == 2 * 1800);
  REQUIRE(blk.kernels == 4);
  REQUIRE(blk.self_kernels == 4);
  REQUIRE(blk.busy_ns == 400);
  REQUIRE(blk.span_ns == 2 * 1100);
}

TEST_CASE("launches of several threads go to each thread's own ranges") {
  Session session;
  std::uint32_t main_id = 0, other_id = 0;
  std::thread worker{[&] {
    ScopedRange r{"loader"};
    other_id = fake->launch(0);
  }};
  worker.join();
  {
    ScopedRange r{"compute"};
    main_id = fake->launch(0);
  }
  fake->copy(other_id, nr::CopyKind::h2d, 4096, 100, 300, true);
  fake->kernel(main_id, 1, 200, 500);
  auto const snap = Report::snapshot();
  auto const& loader = snap.find("loader")->work;
  REQUIRE(loader.kernels == 0);
  REQUIRE(loader.h2d.count == 1);
  REQUIRE(loader.h2d.bytes == 4096);
  REQUIRE(loader.h2d.pageable == 1);
  REQUIRE(loader.busy_ns == 200);
  REQUIRE(snap.find("compute")->work.kernels == 1);
  REQUIRE(snap.find("compute")->work.busy_ns == 300);
}

TEST_CASE("records that arrive while the range is open, or after it ended, count the same") {
  Session session;
  std::uint32_t first = 0, second = 0;
  {
    ScopedRange r{"long"};
    first = fake->launch(0);
    fake->kernel(first, 1, 100, 200);
    fake->arrive();                        // delivered before the range ends
    auto const mid = Report::snapshot();   // settles the open range's part so far
    REQUIRE(mid.find("long") == nullptr);  // open ranges are not rows yet (no CPU time)
    second = fake->launch(0);
  }
  fake->kernel(second, 1, 300, 500);  // delivered after the range ended
  auto const snap = Report::snapshot();
  auto const& w = snap.find("long")->work;
  REQUIRE(w.kernels == 2);
  REQUIRE(w.busy_ns == 300);
  REQUIRE(w.span_ns == 400);  // one call: 100 -> 500, across the settle in the middle
  REQUIRE(w.calls_with_work == 1);
  REQUIRE(snap.gpu.records_late == 0);
}

TEST_CASE("unknown correlation ids and work outside any range are counted, never misattributed") {
  Session session;
  std::uint32_t const outside = fake->launch(0);  // no range open on this thread
  {
    ScopedRange r{"inside"};
    std::uint32_t const in = fake->launch(0);
    fake->kernel(in, 1, 10, 20);
  }
  fake->kernel(outside, 1, 30, 40);
  fake->kernel(987654, 1, 50, 60);  // a correlation id no launch callback saw
  fake->kernel(0, 1, 70, 80);       // none at all
  fake->add_dropped(5);
  auto const snap = Report::snapshot();
  REQUIRE(snap.find("inside")->work.kernels == 1);
  REQUIRE(snap.gpu.records == 4);
  REQUIRE(snap.gpu.records_unattributed == 3);
  REQUIRE(snap.gpu.records_dropped == 5);
  REQUIRE(snap.gpu.devices[0].kernels == 4);  // the device totals see everything
  std::string const table = nsightkit::format_table(snap);
  REQUIRE(table.find("5 records dropped by CUPTI") != std::string::npos);
}

TEST_CASE(
    "the trace shows each kernel on its stream's track, an arrow from its launch, and busy %") {
  Session session;
  ReportOptions o = Report::options();
  o.record_trace = true;
  REQUIRE(Report::enable(o));
  std::uint32_t id = 0;
  {
    ScopedRange r{"layer"};
    id = fake->launch(1'000'000);
  }
  fake->kernel(id, 3, 1'500'000, 2'000'000);
  std::string const trace = Report::trace_json();
  INFO(trace);
  REQUIRE(trace.find("\"args\":{\"name\":\"GPU stream 3 (device 0)\"}") != std::string::npos);
  REQUIRE(trace.find("\"cat\":\"nsightkit gpu\"") != std::string::npos);
  REQUIRE(trace.find("\"ph\":\"s\",\"name\":\"launch\"") != std::string::npos);
  REQUIRE(trace.find("\"ph\":\"f\",\"bp\":\"e\"") != std::string::npos);
  REQUIRE(trace.find("\"name\":\"GPU busy % (device 0)\"") != std::string::npos);
  REQUIRE(trace.find("\"args\":{\"busy\":50.0}") != std::string::npos);  // 0.5 ms of a 1 ms bin
}

TEST_CASE("the trace names each GPU slice after what ran, with the launching range's path") {
  Session session;
  ReportOptions o = Report::options();
  o.record_trace = true;
  REQUIRE(Report::enable(o));
  std::uint32_t k1 = 0, k2 = 0, k3 = 0, c1 = 0, c2 = 0;
  {
    ScopedRange outer{"model"};
    ScopedRange r{"layer"};
    k1 = fake->launch(1'000'000);
    k2 = fake->launch(1'000'100);
    k3 = fake->launch(1'000'200);
    c1 = fake->launch(1'000'300);
    c2 = fake->launch(1'000'400);
  }
  fake->kernel(k1, 3, 1'500'000, 1'600'000, "_Z4gemmPfi");  // mangled: shown demangled
  fake->kernel(k2, 3, 1'600'000, 1'700'000, "relu<\"quoted\">");
  fake->kernel(k3, 3, 1'700'000, 1'800'000, "_Z4gemmPfi");
  fake->copy(c1, nr::CopyKind::h2d, 4096, 1'800'000, 1'850'000, false, 3);
  fake->copy(c2, nr::CopyKind::d2h, 4096, 1'850'000, 1'900'000, false, 3);
  std::string const trace = Report::trace_json();
  INFO(trace);
  auto slices = [&](std::string const& name) {
    std::string const head = "{\"ph\":\"X\",\"name\":" + name + ",\"cat\":\"nsightkit gpu\"";
    std::size_t n = 0;
    for (std::size_t at = trace.find(head); at != std::string::npos;
         at = trace.find(head, at + 1)) {
      std::size_t const end = trace.find('}', at);
      // every one keeps the range's path in its args
      CHECK(trace.substr(at, end - at).find("\"args\":{\"path\":\"model/layer\"") !=
            std::string::npos);
      ++n;
    }
    return n;
  };
  CHECK(slices("\"gemm(float*, int)\"") == 2);
  CHECK(slices("\"relu<\\\"quoted\\\">\"") == 1);  // escaped once, as JSON
  // Copies as Nsight Systems and Kineto spell them.
  CHECK(slices("\"Memcpy HtoD\"") == 1);
  CHECK(slices("\"Memcpy DtoH\"") == 1);
  CHECK(slices("\"layer\"") == 0);  // no GPU slice is named after the range any more
}

TEST_CASE("a trace streamed to its file names GPU slices after what ran too") {
  Session session;
  std::string const path = "test_gpu_attribution_streamed.json";
  std::remove(path.c_str());
  ReportOptions o = Report::options();
  o.record_trace = true;
  o.trace = path;  // a regular file: streamed by the report's worker, completed by write()
  REQUIRE(Report::enable(o));
  std::uint32_t id = 0;
  {
    ScopedRange r{"layer"};
    id = fake->launch(1'000'000);
  }
  fake->kernel(id, 3, 1'500'000, 1'600'000, "_Z4gemmPfi");
  (void)Report::snapshot();  // settles the kernel: a slice waiting in the thread's buffer
  nr::State* s = nr::state();
  REQUIRE(s != nullptr);
  REQUIRE(nr::TraceStream::existing() != nullptr);
  nr::TraceStream::existing()->drain(*s);  // the worker's piece, written now
  Report::write();
  std::ifstream in{path};
  std::string const trace{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  INFO(trace);
  CHECK(trace.find("{\"ph\":\"X\",\"name\":\"gemm(float*, int)\",\"cat\":\"nsightkit gpu\"") !=
        std::string::npos);
  // Enabled again without the trace: the streamed file is completed here, not by the next test.
  o.record_trace = false;
  o.trace.clear();
  REQUIRE(Report::enable(o));
  std::remove(path.c_str());
}

TEST_CASE("trace-schema=kineto: Kineto's categories, launches and step names, the rest the same") {
  CHECK(ReportOptions::parse("trace=t.json,trace-schema=kineto").trace_schema ==
        nsightkit::TraceSchema::kineto);
  CHECK(ReportOptions::parse("trace=t.json,trace-schema=Chrome").trace_schema ==
        nsightkit::TraceSchema::chrome);
  CHECK(ReportOptions::parse("trace=t.json").trace_schema == nsightkit::TraceSchema::chrome);
  std::string why;
  CHECK_FALSE(ReportOptions::try_parse("trace=t.json,trace-schema=perfetto", &why));
  CHECK_THAT(why, Catch::Contains("bad value in 'trace-schema=perfetto' (use chrome or kineto)"));
  CHECK_THAT(why, Catch::Contains("trace-schema=chrome|kineto"));  // the grammar lists it
  CHECK_FALSE(ReportOptions::try_parse("trace=t.json,trace-schema", &why));
  CHECK_THAT(why, Catch::Contains("no value in 'trace-schema'"));
  CHECK_FALSE(
      ReportOptions::try_parse("trace=t.json,trace-schema=kineto,trace-schema=chrome", &why));
  CHECK_THAT(why, Catch::Contains("'trace-schema' given twice"));

  for (auto const schema : {nsightkit::TraceSchema::chrome, nsightkit::TraceSchema::kineto}) {
    bool const kineto = schema == nsightkit::TraceSchema::kineto;
    INFO((kineto ? "kineto" : "chrome"));
    Session session;
    ReportOptions o = Report::options();
    o.record_trace = true;
    o.trace_schema = schema;
    REQUIRE(Report::enable(o));
    nsightkit::CaptureOptions co;
    co.backends = nsightkit::CaptureBackend::nvtx_range;
    nsightkit::CaptureWindow window{nsightkit::CaptureSchedule{0, 0, 2}, co};
    std::uint32_t k = 0, c = 0, m = 0;
    for (int i = 0; i < 2; ++i) {
      auto step = window.step();
      ScopedRange r{"layer"};
      k = fake->launch(1'000'000);
      c = fake->launch(1'000'100);
      m = fake->launch(1'000'200);
    }
    fake->kernel(k, 3, 1'500'000, 1'600'000, "_Z4gemmPfi");
    fake->copy(c, nr::CopyKind::h2d, 4096, 1'600'000, 1'650'000, false, 3);
    fake->memset(m, 4096, 1'650'000, 1'660'000, 3);
    std::string const trace = Report::trace_json();
    INFO(trace);
    auto has = [&](std::string const& text) { return trace.find(text) != std::string::npos; };
    // In both: what ran, on which device and stream, launched by which call (Kineto's args).
    CHECK(has(R"("args":{"path":"layer","cpu_thread":)"));
    CHECK(has(R"(,"device":0,"stream":3,"correlation":)" + std::to_string(k) + "}"));
    CHECK(has(R"({"ph":"X","name":"Memset","cat":")"));
    CHECK(kineto == has(R"j({"ph":"X","name":"gemm(float*, int)","cat":"kernel")j"));
    CHECK(kineto == has(R"({"ph":"X","name":"Memcpy HtoD","cat":"gpu_memcpy")"));
    CHECK(kineto == has(R"({"ph":"X","name":"Memset","cat":"gpu_memset")"));
    CHECK(kineto != has(R"("cat":"nsightkit gpu")"));
    // The launch call, where HTA finds a kernel's: Kineto's schema only.
    CHECK(kineto == has(R"({"ph":"X","name":"launch","cat":"cuda_runtime",)"));
    CHECK(kineto == has(R"("dur":0,"args":{"correlation":)" + std::to_string(k) + "}}"));
    // Steps: "ProfilerStep#N" in Kineto's schema, their NVTX names in nsightkit's.
    CHECK(kineto == has(R"({"ph":"X","name":"ProfilerStep#1","cat":"nsightkit step")"));
    CHECK(kineto != has(R"({"ph":"X","name":"step 1","cat":"nsightkit step")"));
    CHECK(has(R"({"ph":"X","name":"layer","cat":"nsightkit")"));  // ranges as they are
    CHECK_FALSE(has("distributedInfo"));                          // no rank here
  }
}

TEST_CASE("a step's name in Kineto's schema ends with the number its name ends with") {
  CHECK(nr::profiler_step_name("step 12") == "ProfilerStep#12");
  CHECK(nr::profiler_step_name("step1") == "ProfilerStep#1");
  CHECK(nr::profiler_step_name("warm-up") == "warm-up");  // no number: no iteration for HTA
  CHECK(nr::profiler_step_name("") == "");
}

TEST_CASE(
    "window-only mode: GPU activity is collected only in captured steps, settled at the end") {
  Session session{true};
  REQUIRE_FALSE(fake->active);  // no window active yet
  nsightkit::CaptureOptions co;
  co.backends = nsightkit::CaptureBackend::nvtx_range;
  nsightkit::CaptureWindow window{nsightkit::CaptureSchedule{1, 0, 2}, co};
  for (int i = 0; i < 4; ++i) {
    auto step = window.step();
    ScopedRange r{"forward"};
    std::uint32_t const id = fake->launch(0);
    fake->kernel(id, 1, 1000 * i, 1000 * i + 10);  // what CUPTI delivers when asked to flush
    if (i == 1) REQUIRE(fake->active);             // inside the window
  }
  REQUIRE_FALSE(fake->active);
  REQUIRE(fake->activations == std::vector<bool>{false, true, false});  // off until a window
  // The window's end settled its steps' work: no snapshot was needed to deliver it.
  REQUIRE(fake->deliveries == 1);
  auto const snap = Report::snapshot();
  REQUIRE(snap.find("forward")->cpu.count == 2);  // captured steps 1 and 2 only
  REQUIRE(snap.find("forward")->work.kernels == 2);
}

TEST_CASE("window-only mode: collection starts at the warm-up steps, whose work is not counted") {
  Session session{true};
  nsightkit::CaptureOptions co;
  co.backends = nsightkit::CaptureBackend::nvtx_range;
  // Steps: 0 wait, 1-2 warm-up, 3-4 active, 5 done.
  nsightkit::CaptureWindow window{nsightkit::CaptureSchedule{1, 2, 2}, co};
  std::vector<bool> active;
  for (int i = 0; i < 6; ++i) {
    auto step = window.step();
    active.push_back(fake->active);
    ScopedRange r{"forward"};
    std::uint32_t const id = fake->launch(0);
    fake->kernel(id, 1, 1000 * i, 1000 * i + 10);
    fake->memory(fake->launch(0), true, 0x1000u + static_cast<unsigned>(i), 64, 1000 * i);
    fake->arrive();  // warm-up work arrives while collection runs, before the window
  }
  // Collecting from the first warm-up step to the window's end, so CUPTI's start-up (enabling
  // collection costs the next launches of every kernel) falls on steps that are not measured.
  CHECK(active == std::vector<bool>{false, true, true, true, true, false});
  REQUIRE_FALSE(fake->active);
  auto const snap = Report::snapshot();
  REQUIRE(snap.find("forward")->cpu.count == 2);
  CHECK(snap.find("forward")->work.kernels == 2);
  CHECK(snap.find("forward")->work.allocations == 2);
  // The warm-up steps' kernels and allocations (and the other steps', which CUPTI would not
  // have recorded) count nowhere: not in the device totals, not as unattributed.
  CHECK(snap.gpu.records == 4);
  CHECK(snap.gpu.records_unattributed == 0);
  REQUIRE(snap.gpu.devices.size() == 1);
  CHECK(snap.gpu.devices[0].kernels == 2);
}

TEST_CASE("a graph replayed outside any range: its kernels still count for the captured paths") {
  Session session;
  {
    ScopedRange setup{"setup"};  // the thread has ranges, but none is open at the replays
    fake->note_capture(true);
    {
      ScopedRange model{"model"};
      ScopedRange enc{"encoder"};
      fake->note_graph_node(21);
    }
    fake->note_capture(false);
  }
  fake->note_graph_node(98);  // built by hand: no captured path, no range at its launch
  fake->note_graph_clone(121, 21);
  std::int64_t t = 0;
  for (int replay = 0; replay < 3; ++replay) {
    std::uint32_t const launch = fake->launch(t);
    fake->kernel(launch, 1, t + 100, t + 300, "enc_a", 121);
    fake->kernel(launch, 1, t + 300, t + 350, "manual", 198);
    t += 10'000;
  }
  auto const snap = Report::snapshot();
  auto const* enc = snap.find("model/encoder");
  REQUIRE(enc != nullptr);  // the eager path itself: nothing was open around the launches
  REQUIRE(enc->work.kernels == 3);
  REQUIRE(enc->work.busy_ns == 3 * 200);
  REQUIRE(snap.find("model")->work.kernels == 3);
  REQUIRE(snap.gpu.records_unattributed == 3);  // the hand-built node's kernels: no range to charge
}

TEST_CASE("a replayed graph's kernels count for the modules that captured them, per replay") {
  Session session;
  // Capture (as CUDA would report it): inside the capture, module ranges open and each kernel
  // launch creates a graph node; instantiation clones every node.
  {
    ScopedRange warmup{"warmup"};  // where the capture happens does not matter
    fake->note_capture(true);
    {
      ScopedRange model{"model"};
      {
        ScopedRange enc{"encoder"};
        fake->note_graph_node(11);
        fake->note_graph_node(12);
      }
      {
        ScopedRange head{"head"};
        fake->note_graph_node(13);
      }
    }
    fake->note_capture(false);
  }
  fake->note_graph_node(99);  // not captured (built by hand): no captured path
  for (std::uint64_t n : {std::uint64_t{11}, std::uint64_t{12}, std::uint64_t{13}}) {
    fake->note_graph_clone(100 + n, n);
  }
  // Replays: each launch's kernels carry the clones' ids and the launch's correlation id.
  std::int64_t t = 0;
  for (int step = 0; step < 2; ++step) {
    ScopedRange s{"step"};
    std::uint32_t const launch = fake->launch(t);
    fake->kernel(launch, 1, t + 100, t + 300, "enc_a", 111);
    fake->kernel(launch, 1, t + 300, t + 400, "enc_b", 112);
    fake->kernel(launch, 1, t + 500, t + 600, "head_k", 113);
    fake->kernel(launch, 1, t + 600, t + 650, "manual", 199);  // unknown node: the launch's range
    t += 10'000;
  }
  auto const snap = Report::snapshot();
  auto const* enc = snap.find("step/model/encoder");
  REQUIRE(enc != nullptr);       // the eager paths, under the replay's range
  REQUIRE(enc->cpu.count == 0);  // GPU work only: the modules did not run on the CPU here
  REQUIRE(enc->work.kernels == 4);
  REQUIRE(enc->work.calls_with_work == 2);
  REQUIRE(enc->work.busy_ns == 2 * 300);
  REQUIRE(snap.find("step/model/head")->work.kernels == 2);
  auto const& model = snap.find("step/model")->work;
  REQUIRE(model.kernels == 6);
  REQUIRE(model.self_kernels == 0);
  REQUIRE(model.span_ns == 2 * 500);  // 100 -> 600 per replay
  REQUIRE(model.busy_ns == 2 * 400);
  auto const& step = snap.find("step")->work;
  REQUIRE(step.kernels == 8);  // 6 replayed + 2 of the hand-built node, per the launch's range
  // The capture pass ran on the CPU only: its rows hold CPU time and no GPU work.
  REQUIRE(snap.find("warmup/model/encoder")->cpu.count == 1);
  REQUIRE(snap.find("warmup/model/encoder")->work.kernels == 0);
}

TEST_CASE("a correlation slot reused before its record arrives is not misattributed") {
  nr::CorrelationTable table{4};  // 16 slots
  nr::Launch l;
  l.thread = 1;
  l.node = 7;
  table.put(3, l);
  REQUIRE(table.get(3).node == 7);
  table.put(3 + 16, l);  // same slot, a later launch
  REQUIRE_FALSE(table.get(3).known());
  REQUIRE(table.get(19).known());
}

TEST_CASE("device memory per path: bytes allocated, freed, and the peak live") {
  Session session;
  std::uint32_t a1 = 0, a2 = 0, f1 = 0, a3 = 0;
  {
    ScopedRange r{"weights"};
    a1 = fake->launch(0);
    a2 = fake->launch(0);
  }
  {
    ScopedRange r{"cleanup"};
    f1 = fake->launch(0);
  }
  {
    ScopedRange r{"weights"};
    a3 = fake->launch(0);
  }
  fake->memory(a1, true, 0x1000, 100, 1);
  fake->memory(a2, true, 0x2000, 50, 2);
  fake->memory(f1, false, 0x1000, 0, 3);  // frees the first allocation of "weights"
  fake->memory(a3, true, 0x3000, 30, 4);
  auto const snap = Report::snapshot();
  auto const& w = snap.find("weights")->work;
  REQUIRE(w.allocations == 3);
  REQUIRE(w.allocated_bytes == 180);
  REQUIRE(w.freed_bytes == 100);
  REQUIRE(w.peak_bytes == 150);
  REQUIRE(snap.find("cleanup")->work.allocations == 0);
}

TEST_CASE("too much parked work settles the old part early and stays bounded") {
  Session session;
  fake->set_max_parked(64);
  std::vector<std::uint32_t> ids;
  for (int i = 0; i < 1000; ++i) {
    ScopedRange r{"op"};
    ids.push_back(fake->launch(0));
  }
  std::int64_t t = 0;
  for (std::uint32_t id : ids) {
    fake->kernel(id, 1, t, t + 10);
    t += 20;
    fake->arrive();
  }
  auto const snap = Report::snapshot();
  REQUIRE(snap.find("op")->work.kernels == 1000);
  REQUIRE(snap.find("op")->work.busy_ns == 10000);
  REQUIRE(snap.find("op")->work.calls_with_work == 1000);
}

namespace {
/// A stream handle for the CPU tests (never dereferenced) that the fake names `id`.
void* fake_stream(std::uintptr_t handle, std::uint32_t id) {
  auto* s = reinterpret_cast<void*>(handle);
  fake->streams.emplace_back(s, id);
  return s;
}

/// Makes `stream` the thread's current stream for the report: CurrentStream, which needs the
/// CUDA headers; without them (a CPU-only build) the report's thread-local that it sets.
class OnStream {
 public:
#if NSIGHTKIT_HAS_CUDA
  explicit OnStream(void* stream)
      : current_{nsightkit::StreamView{static_cast<cudaStream_t>(stream)}} {}

 private:
  nsightkit::CurrentStream current_;
#else
  explicit OnStream(void* stream) : previous_{nr::current_gpu} {
    nr::current_gpu = nr::GpuContext{stream, nullptr};
  }
  ~OnStream() { nr::current_gpu = previous_; }
  OnStream(OnStream const&) = delete;
  OnStream& operator=(OnStream const&) = delete;

 private:
  nr::GpuContext previous_;
#endif
};

/// A launch made by a thread of its own that opens no range (NCCL's launch thread, say).
std::uint32_t launch_from_other_thread() {
  std::uint32_t id = 0;
  std::thread t{[&] { id = fake->launch(FakeCupti::now()); }};
  t.join();
  return id;
}
}  // namespace

TEST_CASE(
    "work another thread launches outside any range counts for the range that made its "
    "stream current, inside its parents' busy union") {
  Session session;
  void* const nccl = fake_stream(0x1000, 13);
  std::uint32_t own = 0, delegated = 0;
  {
    ScopedRange bwd{"backward"};
    own = fake->launch(FakeCupti::now());
    OnStream const on{nccl};
    ScopedRange ar{"allreduce"};
    delegated = launch_from_other_thread();
  }
  fake->kernel(own, 1, 1000, 1400);  // backward's own kernel, overlapped by the all-reduce
  fake->kernel(delegated, 13, 1200, 2000, "nccl_allreduce");
  auto const snap = Report::snapshot();
  auto const& ar = snap.find("backward/allreduce")->work;
  REQUIRE(ar.kernels == 1);
  REQUIRE(ar.self_kernels == 1);
  REQUIRE(ar.busy_ns == 800);
  REQUIRE(ar.calls_with_work == 1);
  REQUIRE(ar.streams == 1);
  REQUIRE(ar.top_kernels.at(0).name == "nccl_allreduce");
  REQUIRE(ar.delegated_kernels == 1);
  REQUIRE(ar.delegated_kernel_ns == 800);
  auto const& bwd = snap.find("backward")->work;
  REQUIRE(bwd.kernels == 2);
  REQUIRE(bwd.self_kernels == 1);
  REQUIRE(bwd.busy_ns == 1000);  // [1000, 2000): the union, not 400 + 800
  REQUIRE(bwd.calls_with_work == 1);
  REQUIRE(bwd.delegated_kernels == 1);  // inclusive, as kernels
  REQUIRE(snap.gpu.records_delegated == 1);
  REQUIRE(snap.gpu.records_unattributed == 0);
  std::string const json = nsightkit::summary_json(snap);
  REQUIRE(json.find("\"delegated_kernels\":1,\"delegated_kernel_ns\":800}") != std::string::npos);
  REQUIRE(json.find("\"records_delegated\":1,") != std::string::npos);
  std::string const table = nsightkit::format_table(snap);
  REQUIRE(table.find("1 launched by a thread without ranges on a stream a range had made "
                     "current") != std::string::npos);
  REQUIRE(table.find("launched outside any range") == std::string::npos);
}

TEST_CASE(
    "work launched after the owning range ended goes to the last range that made the "
    "stream current; work on a stream no range made current, or launched before any "
    "did, stays unattributed") {
  Session session;
  void* const comm = fake_stream(0x2000, 21);
  fake_stream(0x3000, 22);  // known to CUPTI, never made current
  std::uint32_t const early = launch_from_other_thread();
  for (int bucket = 0; bucket < 2; ++bucket) {
    OnStream const on{comm};
    ScopedRange r{bucket == 0 ? "bucket 0" : "bucket 1"};
  }
  // A non-blocking communicator launches once the call that queued the work has returned.
  std::uint32_t const late = launch_from_other_thread();
  std::uint32_t const elsewhere = launch_from_other_thread();
  fake->kernel(early, 21, 100, 200);
  fake->kernel(late, 21, 300, 450);
  fake->kernel(elsewhere, 22, 500, 600);
  auto const snap = Report::snapshot();
  REQUIRE(snap.find("bucket 0")->work.kernels == 0);
  REQUIRE(snap.find("bucket 1")->work.kernels == 1);
  REQUIRE(snap.find("bucket 1")->work.busy_ns == 150);
  REQUIRE(snap.gpu.records_delegated == 1);
  REQUIRE(snap.gpu.records_unattributed == 2);
}

TEST_CASE(
    "a range inside the one that made a stream current does not own it; one that makes "
    "another stream current does") {
  Session session;
  void* const a = fake_stream(0x4000, 31);
  void* const b = fake_stream(0x5000, 32);
  std::uint32_t on_a = 0, on_b = 0;
  {
    OnStream const cur{a};
    ScopedRange outer{"outer"};
    ScopedRange inner{"inner"};
    on_a = launch_from_other_thread();
    OnStream const other{b};
    ScopedRange comm{"comm"};
    on_b = launch_from_other_thread();
  }
  fake->kernel(on_a, 31, 0, 100);
  fake->kernel(on_b, 32, 200, 260);
  auto const snap = Report::snapshot();
  REQUIRE(snap.find("outer")->work.kernels == 2);
  REQUIRE(snap.find("outer")->work.self_kernels == 1);
  REQUIRE(snap.find("outer/inner")->work.kernels == 1);  // comm's, nested in it
  REQUIRE(snap.find("outer/inner")->work.self_kernels == 0);
  REQUIRE(snap.find("outer/inner/comm")->work.kernels == 1);
  REQUIRE(snap.find("outer/inner/comm")->work.self_kernels == 1);
  REQUIRE(snap.gpu.records_delegated == 2);
}

TEST_CASE("a thread with ranges of its own, launching outside them, is not delegated") {
  Session session;
  void* const s = fake_stream(0x8000, 61);
  {
    OnStream const on{s};
    ScopedRange r{"owner"};
  }
  std::uint32_t id = 0;
  std::thread t{[&] {
    { ScopedRange r{"loader"}; }
    id = fake->launch(FakeCupti::now());  // outside its own (ended) range
  }};
  t.join();
  fake->kernel(id, 61, 0, 10);
  auto const snap = Report::snapshot();
  REQUIRE(snap.find("owner")->work.kernels == 0);
  REQUIRE(snap.gpu.records_delegated == 0);
  REQUIRE(snap.gpu.records_unattributed == 1);
}

TEST_CASE("a stream made current by a range still open at the snapshot: its work so far counts") {
  Session session;
  void* const s = fake_stream(0x6000, 41);
  std::uint32_t first = 0, second = 0;
  {
    OnStream const on{s};
    ScopedRange r{"serving"};
    first = launch_from_other_thread();
    fake->kernel(first, 41, 0, 500);
    REQUIRE(Report::snapshot().gpu.records_delegated == 1);  // settled while "serving" is open
    second = launch_from_other_thread();
  }
  fake->kernel(second, 41, 1000, 1200);
  auto const snap = Report::snapshot();
  REQUIRE(snap.gpu.records_delegated == 2);
  auto const& w = snap.find("serving")->work;
  REQUIRE(w.kernels == 2);
  REQUIRE(w.busy_ns == 700);
  REQUIRE(w.span_ns == 1200);
  REQUIRE(w.calls_with_work == 1);
}

TEST_CASE("reset() forgets GPU work, and work launched before it is dropped when it arrives") {
  Session session;
  std::uint32_t before = 0;
  {
    ScopedRange r{"old"};
    before = fake->launch(0);
  }
  Report::reset();
  std::uint32_t after = 0;
  {
    ScopedRange r{"new"};
    after = fake->launch(0);
  }
  fake->kernel(before, 1, 0, 10);
  fake->kernel(after, 1, 20, 30);
  auto const snap = Report::snapshot();
  REQUIRE(snap.find("old") == nullptr);
  REQUIRE(snap.find("new")->work.kernels == 1);
}

TEST_CASE("reset() forgets which ranges made streams current") {
  Session session;
  void* const s = fake_stream(0x7000, 51);
  {
    OnStream const on{s};
    ScopedRange r{"before reset"};
  }
  Report::reset();
  std::uint32_t const id = launch_from_other_thread();
  fake->kernel(id, 51, 0, 10);
  auto const snap = Report::snapshot();
  REQUIRE(snap.find("before reset") == nullptr);
  REQUIRE(snap.gpu.records_delegated == 0);
  REQUIRE(snap.gpu.records_unattributed == 1);
}
#endif

TEST_CASE("gpu=cupti without the component falls back to events and says why") {
  std::string why;
  auto o = ReportOptions::try_parse("gpu=cupti", &why);
  REQUIRE(o);
  REQUIRE(o->gpu_source == nsightkit::GpuSourceKind::cupti);
  REQUIRE(ReportOptions::try_parse("gpu=events")->gpu_source == nsightkit::GpuSourceKind::events);
  REQUIRE(ReportOptions::try_parse("gpu=Auto")->gpu_source == nsightkit::GpuSourceKind::automatic);
  REQUIRE_FALSE(ReportOptions::try_parse("gpu=nvml", &why));
  REQUIRE(why.find("use on, off, auto, events or cupti") != std::string::npos);
  o->table.clear();
  o->at_exit = false;
  REQUIRE(Report::enable(*o) == nsightkit::enabled);
  auto const snap = Report::snapshot();
  Report::disable();
  Report::reset();
  if (!nsightkit::enabled) return;
  REQUIRE(snap.gpu.source == "events");
  REQUIRE(snap.gpu.note.find("gpu=cupti needs the nsightkit::cupti component") == 0);
}
