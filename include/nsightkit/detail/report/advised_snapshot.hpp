// Internal: the snapshot that Report::snapshot() returns and every output is written from — the
// threads merged (snapshot.hpp), then the advice evaluated over them (advice.hpp).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/advice.hpp>
#include <nsightkit/detail/report/snapshot.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/report_types.hpp>

#include <mutex>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// merged_snapshot() with the advice its options ask for.
inline ReportSnapshot advised_snapshot() {
  ReportSnapshot snap = merged_snapshot();
  State* s = state();
  if (s == nullptr) return snap;
  ReportOptions o;
  {
    std::lock_guard<std::mutex> lock{s->mutex};
    o = s->options;
  }
  snap.advice = advise(snap, o.advice, o.advice_thresholds, snap.advice_missing);
  return snap;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
