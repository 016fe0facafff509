/**
 * @file cupti.hpp
 * @brief The report's CUPTI GPU source: every kernel, copy and memset, on every stream,
 *        attributed to the range that launched it.
 *
 * Part of the optional component `nsightkit::cupti` (CMake: `find_package(nsightkit COMPONENTS
 * cupti)`, then link `nsightkit::cupti`; it links CUPTI and defines `NSIGHTKIT_CUPTI`, which makes
 * <nsightkit/report.hpp> include this header). Including it in one translation unit of a program
 * is enough: the report then measures GPU work with CUPTI (`NSIGHTKIT_REPORT=...,gpu=auto`, the
 * default, or `gpu=cupti`), and falls back to CUDA events with one message where CUPTI cannot be
 * used (another profiler attached, no driver). Programs that do not link the component pay
 * nothing and need no CUPTI library. See docs/gpu-attribution.md. Without `NSIGHTKIT_CUPTI`,
 * include this header yourself in one translation unit that links CUPTI.
 *
 * @code
 * // CMakeLists.txt: target_link_libraries(train PRIVATE nsightkit::cupti)
 * // NSIGHTKIT_REPORT=table ./train   -> per path: kernels, GPU busy, self, idle, launch latency
 * if (!nsightkit::cupti_available()) std::puts(nsightkit::cupti_unavailable_reason().c_str());
 * @endcode
 */
#pragma once

#include <nsightkit/config.hpp>

#include <string>

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/cupti/source.hpp>
#include <nsightkit/detail/report/lifecycle.hpp>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/**
 * @brief Why the CUPTI source cannot collect in this process, or "" when it can.
 *
 * The first call subscribes to CUPTI (the report does the same when it is enabled with
 * `gpu=auto` or `gpu=cupti`). Typical reasons: another profiler holds CUPTI, no CUDA driver.
 * Safe from any thread (the subscription is made once, under a lock).
 * @return "" when CUPTI collects, else one sentence saying why not; always non-empty under
 *         `NSIGHTKIT_DISABLE`.
 * @throws std::bad_alloc when the text cannot be copied.
 */
inline std::string cupti_unavailable_reason() {
#if NSIGHTKIT_ENABLED
  return detail::report::CuptiSource::instance().unavailable();
#else
  return "nsightkit is disabled (NSIGHTKIT_DISABLE)";
#endif
}

/// Whether the CUPTI source can collect in this process (see cupti_unavailable_reason()).
/// @return true when cupti_unavailable_reason() is "".
/// @throws std::bad_alloc as cupti_unavailable_reason().
inline bool cupti_available() { return cupti_unavailable_reason().empty(); }

#if NSIGHTKIT_ENABLED
namespace detail::report {
// Offers the CUPTI source to the report during static initialisation (see cupti_provider).
/// Lets graph recording diagnostics have every API call during a recording (graph_state.hpp).
inline void cupti_watch_apis(bool on) noexcept {
  NSIGHTKIT_DETAIL_TRY { CuptiSource::instance().watch_apis(on); }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

NSIGHTKIT_DETAIL_VISIBLE inline bool const cupti_offered = [] {
  graph_watch.start.store(&cupti_watch_apis, std::memory_order_release);
  if (cupti_provider.exchange(&cupti_source, std::memory_order_acq_rel) == nullptr) {
    provider_arrived();  // the report may have started before this initialiser ran
  }
  return true;
}();
}  // namespace detail::report
#endif

NSIGHTKIT_DETAIL_END_NAMESPACE
