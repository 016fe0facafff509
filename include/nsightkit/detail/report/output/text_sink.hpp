// Internal: TextSink, what every report output writes its text into — streamed to a file in
// pieces, so a large report never has to fit in one string, or kept whole in memory.
#pragma once

#include <nsightkit/config.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <string>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Text on its way out: streamed to a FILE in 1 MiB pieces, or kept whole in memory (no file).
class TextSink {
 public:
  explicit TextSink(std::FILE* file = nullptr) noexcept : file_{file} {}
  std::string& buffer() noexcept { return buf_; }
  /// Writes the buffer out once it holds 1 MiB (a no-op in memory).
  void maybe_flush() {
    if (file_ != nullptr && buf_.size() >= (std::size_t{1} << 20)) flush();
  }
  void flush() {
    if (file_ == nullptr || buf_.empty()) return;
    if (ok_ && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
      ok_ = false;
      errno_ = errno;
    }
    buf_.clear();
  }
  /// False once a write failed; error() is its errno.
  [[nodiscard]] bool ok() const noexcept { return ok_; }
  [[nodiscard]] int error() const noexcept { return errno_; }

 private:
  std::FILE* file_;
  std::string buf_;
  bool ok_{true};
  int errno_{0};
};

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
