/**
 * @file graph_types.hpp
 * @brief The plain types of CUDA-graph recording (graph.hpp): modes, checks, violations, errors.
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

/// How a recording treats unsafe calls made by other threads (CUDA's cudaStreamCaptureMode).
enum class GraphRecordMode : std::uint8_t {
  global,  ///< unsafe calls from any thread fail the recording (CUDA's default, the strictest)
  thread,  ///< only the recording thread's unsafe calls fail it
  relaxed  ///< nothing is refused by CUDA; only nsightkit's check reports unsafe calls
};

/// What a GraphRecorder does about unsafe calls.
enum class GraphCheck : std::uint8_t {
  /// A recording that fails throws GraphRecordError naming every unsafe call seen.
  strict,
  /// The recording runs in relaxed mode so CUDA refuses nothing; every unsafe call is listed
  /// (violations()); end() throws nothing. A recording with violations yields no graph.
  check,
  /// No diagnostics beyond CUDA's own error (end() still throws on failure).
  off
};

/// Options of a GraphRecorder.
struct GraphOptions {
  GraphRecordMode mode{GraphRecordMode::global};  ///< ignored in GraphCheck::check (relaxed)
  GraphCheck check{GraphCheck::strict};           ///< see GraphCheck
};

/// One unsafe call during a recording.
struct GraphViolation {
  std::string api;          ///< the CUDA call ("cudaMalloc", "cudaStreamSynchronize", ...)
  std::string module_path;  ///< the module path active at the call ("" outside modules)
  std::string reason;       ///< why it breaks the recording
  std::string error;        ///< what CUDA returned ("cudaErrorStreamCaptureUnsupported"), or ""
  std::uint32_t thread{0};  ///< the calling OS thread
};

/// A recording that failed, with everything known about why. Immutable once thrown.
class GraphRecordError : public std::runtime_error {
 public:
  /// The error with its message and the violations it lists.
  /// @param what the message what() returns.
  /// @param violations the unsafe calls seen during the recording.
  /// @throws std::bad_alloc when the message cannot be copied.
  GraphRecordError(std::string const& what, std::vector<GraphViolation> violations)
      : std::runtime_error{what}, violations_{std::move(violations)} {}
  /// The unsafe calls seen during the recording.
  /// @return the violations in the order seen, at most 1000 (may be empty without the CUPTI
  ///         component).
  [[nodiscard]] std::vector<GraphViolation> const& violations() const noexcept {
    return violations_;
  }

 private:
  std::vector<GraphViolation> violations_;
};

NSIGHTKIT_DETAIL_END_NAMESPACE
