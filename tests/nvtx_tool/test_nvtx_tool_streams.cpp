// Streams named through NVTX (nvtxNameCudaStreamA) carry their names in the report's per-stream
// GPU totals, the table and the trace's stream tracks; a fake CUPTI source stands in for the GPU. The
// report is this executable's NVTX tool (no Recorder).
#include <nsightkit/report.hpp>

#include <nvtx3/nvToolsExtCudaRt.h>

#include <catch2/catch.hpp>

#include "fake_cupti.hpp"

#include <string>

namespace nsk = nsightkit;

#if NSIGHTKIT_ENABLED
namespace {

using nsightkit_test::fake;

// The report is on, with the fake as its CUPTI source, before the first NVTX call.
bool const started = [] {
  fake = new nsightkit_test::FakeCupti{};
  nsightkit_test::all_fakes.push_back(fake);
  nsightkit_test::nr::cupti_provider.store(&nsightkit_test::provide_fake);
  nsk::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  o.record_trace = true;
  o.gpu_source = nsk::GpuSourceKind::cupti;
  return nsk::Report::enable(o);
}();

cudaStream_t stream_handle(std::uintptr_t v) { return reinterpret_cast<cudaStream_t>(v); }

void kernel_on(std::uint32_t stream) {
  nsk::ScopedRange r{"work"};
  std::int64_t const t = nsightkit_test::FakeCupti::now();
  fake->kernel(fake->launch(t), stream, t + 1000, t + 5000);
}

}  // namespace

TEST_CASE("streams named through NVTX carry their names in the GPU totals and the trace") {
  REQUIRE(started);
  fake->streams = {{stream_handle(0x1000), 7}};
  nvtxNameCudaStreamA(stream_handle(0x1000), "copies");
  nvtxNameCudaStreamA(stream_handle(0x2000), "compute");  // CUPTI's id is not known yet
  kernel_on(7);
  kernel_on(9);
  fake->streams.emplace_back(stream_handle(0x2000), 9);  // known by the snapshot
  nvtxNameCudaStreamA(stream_handle(0x3000), "never used");
  auto const s = nsk::Report::snapshot();
  std::string seven, nine;
  for (auto const& st : s.gpu.streams) {
    if (st.stream == 7) seven = st.name;
    if (st.stream == 9) nine = st.name;
  }
  CHECK(seven == "copies");
  CHECK(nine == "compute");
  std::string const trace = nsk::Report::trace_json();
  CHECK(trace.find(R"(GPU stream 7 \"copies\" (device 0))") != std::string::npos);
  CHECK(trace.find(R"(GPU stream 9 \"compute\" (device 0))") != std::string::npos);
  CHECK(trace.find("never used") == std::string::npos);
  std::string const table = nsk::format_table(s);
  CHECK(table.find("GPU stream 7 \"copies\" (device 0): busy ") != std::string::npos);
  CHECK(table.find("GPU stream 9 \"compute\" (device 0): busy ") != std::string::npos);
}
#else
TEST_CASE("a disabled build names no stream") {
  nvtxNameCudaStreamA(reinterpret_cast<cudaStream_t>(0x1000), "copies");
  CHECK(nsk::Report::snapshot().gpu.streams.empty());
}
#endif
