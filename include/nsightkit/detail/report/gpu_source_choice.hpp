// Internal: which GPU source the options get — CUPTI where asked (or gpu=auto) and usable, else
// CUDA events, with a note saying why when it is not the one asked for.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/cuda_driver.hpp>
#include <nsightkit/detail/report/events_source.hpp>
#include <nsightkit/detail/report/gpu_source.hpp>
#include <nsightkit/report_types.hpp>

#include <atomic>
#include <string>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// The GPU source `o` asks for (null: none); `note` says why it is not the one asked for.
inline GpuSource* source_for(ReportOptions const& o, std::string& note) {
  note.clear();
  if (!o.gpu) return nullptr;
  if (o.gpu_source != GpuSourceKind::events) {
    SourceProvider const provider = cupti_provider.load(std::memory_order_acquire);
    if (provider != nullptr) {
      GpuSource* c = provider();
      std::string const why = c != nullptr ? c->unavailable() : std::string{"out of memory"};
      if (why.empty()) return c;
      // gpu=auto on a machine without a GPU: nothing to measure, nothing to say.
      bool const no_gpu = cuda_driver::api().unavailable != nullptr;
      if (o.gpu_source == GpuSourceKind::cupti || !no_gpu)
        note = "CUPTI cannot be used here (" + why + "); GPU times come from CUDA events";
    } else if (o.gpu_source == GpuSourceKind::cupti) {
      note =
          "gpu=cupti needs the nsightkit::cupti component (link it, see docs/gpu-attribution.md); "
          "GPU times come from CUDA events";
    }
  }
  return &events_source();
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
