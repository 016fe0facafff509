// Writes a trace in Kineto's schema (trace-schema=kineto) for tests/report/run_hta.py, which loads
// it with Holistic Trace Analysis. No GPU: a fake CUPTI (tests/fake_cupti_source.hpp) reports the
// kernels, copies and memsets that each step's "forward" range launched, and a clock of the
// program's own places ranges, launches and GPU work at exact microseconds, so that HTA's
// breakdowns have exact expected values (run_hta.py spells out the timeline).
//
//   report_kineto_demo stream PATH   the trace streamed to PATH by the report (trace=PATH)
//   report_kineto_demo memory PATH   the trace from memory (Report::trace_json()) written to PATH
#include <nsightkit/capture.hpp>
#include <nsightkit/report.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "fake_cupti_source.hpp"

#if NSIGHTKIT_ENABLED
namespace {

namespace nr = nsightkit::detail::report;
using nsightkit_test::fake;

constexpr std::int64_t t0_ns = 1'000'000'000;
std::atomic<std::int64_t> now_ns{t0_ns};
std::int64_t program_clock() noexcept { return now_ns.load(std::memory_order_relaxed); }
/// The clock at `us` microseconds after the report started, and that time in ns.
std::int64_t at(std::int64_t us) {
  now_ns.store(t0_ns + us * 1000, std::memory_order_relaxed);
  return t0_ns + us * 1000;
}

constexpr std::uint32_t stream = 7;
constexpr int steps = 4;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "stream") != 0 && std::strcmp(argv[1], "memory") != 0)) {
    std::fprintf(stderr, "usage: report_kineto_demo stream|memory PATH\n");
    return 2;
  }
  bool const streamed = std::strcmp(argv[1], "stream") == 0;
  std::string const path = argv[2];
  fake = new nsightkit_test::FakeCupti{};
  nr::cupti_provider.store(&nsightkit_test::provide_fake);
  // The grammar a user writes, then what only code can set: the clock, no table, no exit handler.
  std::string const spec = streamed ? "trace=" + path + ",trace-schema=kineto,gpu=cupti"
                                    : std::string{"trace-schema=kineto,gpu=cupti"};
  std::string why;
  std::optional<nsightkit::ReportOptions> parsed = nsightkit::ReportOptions::try_parse(spec, &why);
  if (!parsed) {
    std::fprintf(stderr, "report_kineto_demo: %s\n", why.c_str());
    return 1;
  }
  nsightkit::ReportOptions o = *parsed;
  o.table.clear();
  o.at_exit = false;
  o.record_trace = true;
  o.clock = &program_clock;
  if (!nsightkit::Report::enable(o)) return 1;

  nsightkit::CaptureOptions co;
  co.backends = nsightkit::CaptureBackend::nvtx_range;
  nsightkit::CaptureWindow window{nsightkit::CaptureSchedule{0, 0, steps}, co};
  for (int i = 0; i < steps; ++i) {
    std::int64_t const s = 1000 * i;  // step i: [s, s + 900) us
    at(s);
    auto step = window.step();
    at(s + 10);
    {
      nsightkit::ScopedRange forward{"forward"};
      std::uint32_t const gemm = fake->launch(at(s + 20));
      std::uint32_t const h2d = fake->launch(at(s + 30));
      std::uint32_t const relu = fake->launch(at(s + 40));
      std::uint32_t const fill = fake->launch(at(s + 50));
      at(s + 60);
      auto us = [&](std::int64_t t) { return t0_ns + (s + t) * 1000; };
      // 200, 40, 50 and 10 us of work, with gaps of 0, 10 and 50 us between them.
      fake->kernel(gemm, stream, us(100), us(300), "_Z4gemmPKfPf");
      fake->copy(h2d, nr::CopyKind::h2d, 1 << 20, us(300), us(340), false, stream);
      fake->kernel(relu, stream, us(350), us(400), "relu");
      fake->memset(fill, 1 << 16, us(450), us(460), stream);
    }
    at(s + 900);
  }
  at(1000 * steps);
  if (streamed) {
    nsightkit::Report::write();  // settles the GPU work and completes the streamed file
    return 0;
  }
  std::string const trace = nsightkit::Report::trace_json();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 1;
  bool const ok = std::fwrite(trace.data(), 1, trace.size(), f) == trace.size();
  return std::fclose(f) == 0 && ok ? 0 : 1;
}
#else
int main() {
  std::fprintf(stderr, "report_kineto_demo: a disabled build records nothing\n");
  return 77;
}
#endif
