/**
 * @file cuda_check.hpp
 * @brief nsightkit::CudaError and the NSIGHTKIT_CUDA_CHECK macros.
 *
 * @code
 * NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream));
 * // on failure throws nsightkit::CudaError:
 * // "CUDA error: cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream) returned
 * //  cudaErrorInvalidValue (1): invalid argument at train.cpp:42"
 * @endcode
 *
 * In destructors and other places that must not throw, use NSIGHTKIT_CUDA_CHECK_NOTHROW: it
 * reports the error on stderr and tolerates `cudaErrorCudartUnloading` (the runtime shutting
 * down before static destructors run).
 *
 * Not instrumentation: works the same under `NSIGHTKIT_DISABLE`. Needs the CUDA runtime headers
 * (NSIGHTKIT_HAS_CUDA) and, where used, linking against cudart.
 */
#pragma once

#include <nsightkit/config.hpp>

#if !NSIGHTKIT_HAS_CUDA
#error "nsightkit/cuda_check.hpp needs the CUDA runtime headers (cuda_runtime_api.h)"
#endif

#include <cuda_runtime_api.h>

#include <cstdio>
#include <stdexcept>
#include <string>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/**
 * @brief A failed CUDA runtime call: the error code, the call's text and where it was made.
 *
 * what() reads "CUDA error: <call> returned <name> (<code>): <description> at <file>:<line>".
 * An immutable value once built: its members may be read from any thread.
 */
class CudaError : public std::runtime_error {
 public:
  /// An error for `code` returned by `call` at `file`:`line`.
  /// @param code the error the call returned.
  /// @param call the call's text (null: "").
  /// @param file the source file of the call (null: "").
  /// @param line the source line of the call.
  /// @throws std::bad_alloc when the message cannot be built.
  CudaError(cudaError_t code, char const* call, char const* file, int line)
      : std::runtime_error{make_message(code, call, file, line)},
        code_{code},
        call_{call == nullptr ? "" : call},
        file_{file == nullptr ? "" : file},
        line_{line} {}

  /// The CUDA error code. @return the code the call returned.
  [[nodiscard]] cudaError_t code() const noexcept { return code_; }
  /// The text of the failed call. @return the call as written ("" when none was given).
  [[nodiscard]] std::string const& call() const noexcept { return call_; }
  /// The source file of the call. @return the file name ("" when none was given).
  [[nodiscard]] std::string const& file() const noexcept { return file_; }
  /// The source line of the call. @return the line number.
  [[nodiscard]] int line() const noexcept { return line_; }

  /**
   * @brief The message what() returns, for callers that build their own reports: the one place
   *        where the text of a failed CUDA runtime call is built (NSIGHTKIT_CUDA_CHECK_NOTHROW
   *        prints the same text).
   * @param code the error the call returned.
   * @param call the call's text (null: "<call>").
   * @param file the source file of the call (null: "<file>").
   * @param line the source line of the call.
   * @return "CUDA error: <call> returned <name> (<code>): <description> at <file>:<line>".
   * @throws std::bad_alloc when the text cannot be allocated.
   */
  static std::string make_message(cudaError_t code, char const* call, char const* file, int line) {
    char const* name = cudaGetErrorName(code);
    char const* text = cudaGetErrorString(code);
    std::string m = "CUDA error: ";
    m += call == nullptr ? "<call>" : call;
    m += " returned ";
    m += name == nullptr ? "unknown error" : name;
    m += " (" + std::to_string(static_cast<int>(code)) + "): ";
    m += text == nullptr ? "" : text;
    m += " at ";
    m += file == nullptr ? "<file>" : file;
    m += ":" + std::to_string(line);
    return m;
  }

 private:
  cudaError_t code_;
  std::string call_;
  std::string file_;
  int line_;
};

namespace detail {

/// Throws CudaError for a failed call; clears the runtime's last (non-sticky) error first.
inline void cuda_check(cudaError_t code, char const* call, char const* file, int line) {
  if (code == cudaSuccess) return;
  (void)cudaGetLastError();
  NSIGHTKIT_DETAIL_THROW(CudaError{code, call, file, line});
}

/// Reports a failed call on stderr instead of throwing; returns the code.
inline cudaError_t cuda_check_nothrow(cudaError_t code, char const* call, char const* file,
                                      int line) noexcept {
  if (code == cudaSuccess || code == cudaErrorCudartUnloading) return code;
  (void)cudaGetLastError();
  NSIGHTKIT_DETAIL_TRY {
    std::fprintf(stderr, "nsightkit: %s\n",
                 CudaError::make_message(code, call, file, line).c_str());
  }
  NSIGHTKIT_DETAIL_CATCH(...) {  // no memory for the text: the code alone
    std::fprintf(stderr, "nsightkit: CUDA error %d at %s:%d\n", static_cast<int>(code),
                 file == nullptr ? "<file>" : file, line);
  }
  return code;
}

}  // namespace detail

NSIGHTKIT_DETAIL_END_NAMESPACE

/// Evaluates a CUDA runtime call and throws nsightkit::CudaError unless it returned cudaSuccess
/// (clearing the runtime's last error first, so a later cudaGetLastError() does not report it
/// again).
#define NSIGHTKIT_CUDA_CHECK(call)                                                                 \
  ::nsightkit::detail::cuda_check((call), #call, __FILE__, __LINE__)

/// Evaluates a CUDA runtime call; on failure prints the error to stderr (never throws) and yields
/// the error code. cudaErrorCudartUnloading (the runtime shutting down) is accepted silently.
#define NSIGHTKIT_CUDA_CHECK_NOTHROW(call)                                                         \
  ::nsightkit::detail::cuda_check_nothrow((call), #call, __FILE__, __LINE__)
