// The NVTX tool library (libnsightkit-nvtx.so, and libnsightkit-nvtx-cupti.so with the CUPTI GPU
// source): the report injected into an unmodified program through NVTX_INJECTION64_PATH, which
// `nsightkit profile` sets. NVTX calls InitializeInjectionNvtx2 once for every module (executable,
// shared library, Python extension) that carries NVTX. A copy of the report compiled into the
// program itself, already running, takes every module (it knows the program's capture windows and
// streams); otherwise the first call starts this library's own report from NSIGHTKIT_REPORT.
//
// Built with NSIGHTKIT_DETAIL_NVTX_TOOL (config.hpp): its symbols live in a namespace of their own
// and never bind to the program's copy.
#include <nsightkit/config.hpp>

#if !defined(NSIGHTKIT_DETAIL_NVTX_TOOL) || !NSIGHTKIT_ENABLED
#error "src/nvtx_tool.cpp is the NVTX tool library: build it with NSIGHTKIT_DETAIL_NVTX_TOOL"
#endif

#include <nsightkit/detail/report/lifecycle.hpp>
#include <nsightkit/detail/report/nvtx_tool.hpp>
#include <nsightkit/report.hpp>

#include <atomic>
#include <cstdio>
#include <string>

namespace {

namespace report = nsightkit::detail::report;

/// Hands one NVTX module to the process's report; 1 when it took it.
int take_module(NvtxGetExportTableFunc_t get) noexcept {
  NSIGHTKIT_DETAIL_TRY {
    report::Claim const c = report::read_claim();
    if (c.found && c.kind == "program") {
      if (c.attach != nullptr) return c.attach(get);
      static std::atomic<bool> said{false};
      if (!said.exchange(true)) {
        std::fprintf(stderr,
                     "nsightkit report: the program runs its own copy of the report, which cannot "
                     "take NVTX modules (an older nsightkit?); ranges outside nsightkit's API are "
                     "not seen\n");
      }
      return 0;
    }
    report::autostart();  // once: NSIGHTKIT_REPORT, as nsightkit profile set it
    report::State* const s = report::state();
    if (s == nullptr || !s->recording.load(std::memory_order_acquire)) return 0;
    return report::nvtx_tool::attach(get);
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
  return 0;
}

}  // namespace

/// NVTX's entry point for a tool loaded through NVTX_INJECTION64_PATH.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  return take_module(get_export_table);
}
