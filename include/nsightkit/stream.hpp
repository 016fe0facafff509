/**
 * @file stream.hpp
 * @brief nsightkit::StreamView — a non-owning CUDA stream parameter that 0/nullptr cannot become.
 *
 * @code
 * cudaStream_t copy_stream;
 * cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking);
 * pool.deallocate(p, bytes, nsightkit::StreamView{copy_stream});
 * pool.deallocate(q, bytes, nsightkit::StreamView::per_thread());  // the per-thread default
 * // pool.deallocate(q, bytes, 0);  // does not compile: name the default stream explicitly
 * @endcode
 *
 * Why not take `cudaStream_t` directly: the literal `0` (and `nullptr`, `NULL`) converts to
 * `cudaStream_t` silently, so an argument meaning "no stream", "a size" or "a flag" ends up as the
 * default stream, which synchronizes with everything. A StreamView is only made from a stream
 * handle or by naming one of the default streams.
 *
 * Not instrumentation: works the same under `NSIGHTKIT_DISABLE`. Needs the CUDA runtime headers.
 */
#pragma once

#include <nsightkit/config.hpp>

#if !NSIGHTKIT_HAS_CUDA
#error "nsightkit/stream.hpp needs the CUDA runtime headers (cuda_runtime_api.h)"
#endif

#include <nsightkit/detail/function.hpp>

#include <driver_types.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {
// CUDA defines the special handles as C casts; keep -Wold-style-cast quiet for users who include
// the CUDA headers without -isystem.
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#endif
inline cudaStream_t legacy_stream_handle() noexcept { return cudaStreamLegacy; }
inline cudaStream_t per_thread_stream_handle() noexcept { return cudaStreamPerThread; }
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
}  // namespace detail

/**
 * @brief A non-owning view of a CUDA stream: the stream argument type of nsightkit's APIs.
 *
 * Trivially copyable, the size of a pointer. It never creates, destroys or synchronizes the
 * stream; the stream must outlive every use of the view. Every member is noexcept and makes no
 * CUDA call; a view may be read from any number of threads.
 *
 * Built explicitly from a `cudaStream_t`, or by naming a default stream:
 * StreamView::default_stream() (handle 0: legacy or per-thread, as the translation unit was
 * compiled), StreamView::legacy() (`cudaStreamLegacy`) and StreamView::per_thread()
 * (`cudaStreamPerThread`). Construction from integers and `nullptr` is deleted.
 *
 * @code
 * void upload(float const* host, float* dev, std::size_t n, nsightkit::StreamView stream) {
 *   NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(dev, host, n * sizeof(float), cudaMemcpyHostToDevice,
 *                                        stream.value()));
 * }
 * upload(h, d, n, nsightkit::StreamView{my_stream});
 * @endcode
 */
class StreamView {
 public:
  /// A view of `stream`. A null handle is accepted here (it is the default stream) because a
  /// variable holding one is a deliberate choice; literals are rejected by the deleted overloads.
  /// @param stream the stream handle.
  constexpr explicit StreamView(cudaStream_t stream) noexcept : stream_{stream} {}

  /// Deleted: `StreamView{nullptr}` would silently mean the default stream; use default_stream().
  StreamView(std::nullptr_t) = delete;

  /// Deleted: `StreamView{0}` (or any integer) would silently mean the default stream.
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  StreamView(I) = delete;

  /// The default stream, handle 0: the legacy default stream, or the per-thread default stream
  /// when the code is compiled with `--default-stream per-thread` /
  /// `CUDA_API_PER_THREAD_DEFAULT_STREAM`.
  /// @return a view of handle 0.
  [[nodiscard]] static constexpr StreamView default_stream() noexcept {
    return StreamView{cudaStream_t{}};
  }

  /// The legacy default stream, which synchronizes with all blocking streams.
  /// @return a view of `cudaStreamLegacy`.
  [[nodiscard]] static StreamView legacy() noexcept {
    return StreamView{detail::legacy_stream_handle()};
  }

  /// The calling thread's per-thread default stream.
  /// @return a view of `cudaStreamPerThread` (each thread that uses it gets its own stream).
  [[nodiscard]] static StreamView per_thread() noexcept {
    return StreamView{detail::per_thread_stream_handle()};
  }

  /// The stream handle, for CUDA calls. @return the handle the view was made from.
  [[nodiscard]] constexpr cudaStream_t value() const noexcept { return stream_; }

  /// Whether this is handle 0 (see default_stream()).
  /// @return true for handle 0; false for every other handle, also the special handles of
  ///         legacy() and per_thread().
  [[nodiscard]] constexpr bool is_default() const noexcept { return stream_ == cudaStream_t{}; }

  /// Views compare equal when they name the same handle. (The handle 0 and `cudaStreamLegacy`
  /// compare unequal although they may denote the same stream.)
  /// @param a the first view. @param b the second. @return true when the handles are equal.
  friend constexpr bool operator==(StreamView a, StreamView b) noexcept {
    return a.stream_ == b.stream_;
  }
  /// The negation of operator==. @param a the first view. @param b the second.
  /// @return true when the handles differ.
  friend constexpr bool operator!=(StreamView a, StreamView b) noexcept {
    return a.stream_ != b.stream_;
  }

 private:
  cudaStream_t stream_;
};

static_assert(std::is_trivially_copyable_v<StreamView>, "StreamView is passed by value");
static_assert(!std::is_constructible_v<StreamView, int>, "0 must not become a stream");
static_assert(!std::is_constructible_v<StreamView, std::nullptr_t>,
              "nullptr must not become a stream");
static_assert(!std::is_convertible_v<cudaStream_t, StreamView>, "StreamView is built explicitly");

NSIGHTKIT_DETAIL_END_NAMESPACE

namespace std {
/// Hashes a StreamView by its handle, so views can key unordered containers.
template <>
struct hash<::nsightkit::StreamView> {
  /// The hash of the stream handle. @param s the view. @return `std::hash<cudaStream_t>` of it.
  std::size_t operator()(::nsightkit::StreamView s) const noexcept {
    return std::hash<cudaStream_t>{}(s.value());
  }
};
}  // namespace std
