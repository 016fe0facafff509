/**
 * @file graph_types.hpp
 * @brief The plain types of CUDA-graph capture (graph.hpp): modes, checks, violations, errors.
 *        Needs no CUDA header.
 */
#pragma once

#include <nsightkit/config.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/// How capture treats unsafe calls made by other threads (cudaStreamCaptureMode).
enum class GraphCaptureMode : std::uint8_t {
  global,  ///< unsafe calls from any thread fail the capture (CUDA's default, the strictest)
  thread,  ///< only the capturing thread's unsafe calls fail it
  relaxed  ///< nothing is refused by CUDA; only nsightkit's check reports unsafe calls
};

/// What a GraphCapture does about unsafe calls.
enum class GraphCheck : std::uint8_t {
  /// A capture that fails throws GraphCaptureError naming every unsafe call seen.
  strict,
  /// The capture runs in relaxed mode so CUDA refuses nothing; every unsafe call is listed
  /// (violations()); end() throws nothing. A capture with violations yields no graph.
  check,
  /// No diagnostics beyond CUDA's own error (end() still throws on failure).
  off
};

/// Options of a GraphCapture.
struct GraphOptions {
  GraphCaptureMode mode{GraphCaptureMode::global};  ///< ignored in GraphCheck::check (relaxed)
  GraphCheck check{GraphCheck::strict};             ///< see GraphCheck
};

/// One unsafe call during a capture.
struct GraphViolation {
  std::string api;          ///< the CUDA call ("cudaMalloc", "cudaStreamSynchronize", ...)
  std::string module_path;  ///< the module path active at the call ("" outside modules)
  std::string reason;       ///< why it breaks the capture
  std::string error;        ///< what CUDA returned ("cudaErrorStreamCaptureUnsupported"), or ""
  std::uint32_t thread{0};  ///< the calling OS thread
};

/// A capture that failed, with everything known about why. Immutable once thrown.
class GraphCaptureError : public std::runtime_error {
 public:
  /// The error with its message and the violations it lists.
  /// @param what the message what() returns.
  /// @param violations the unsafe calls seen during the capture.
  /// @throws std::bad_alloc when the message cannot be copied.
  GraphCaptureError(std::string const& what, std::vector<GraphViolation> violations)
      : std::runtime_error{what}, violations_{std::move(violations)} {}
  /// The unsafe calls seen during the capture.
  /// @return the violations in the order seen, at most 1000 (may be empty without the CUPTI
  ///         component).
  [[nodiscard]] std::vector<GraphViolation> const& violations() const noexcept {
    return violations_;
  }

 private:
  std::vector<GraphViolation> violations_;
};

NSIGHTKIT_DETAIL_END_NAMESPACE
