// Internal: the size classes of the pinned-memory pool, and byte counts formatted for range names.
//
// Size classes. A request is rounded up to a block size so that freed blocks can serve later
// requests of similar size. Powers of two alone waste up to half of every block (PyTorch's host
// allocator, pytorch#106606); here every power-of-two interval (2^k, 2^(k+1)] is cut into four
// equal steps, so a block is at most 25% larger than the request:
//   4 KiB, 5 KiB, 6 KiB, 7 KiB, 8 KiB, 10 KiB, 12 KiB, 14 KiB, 16 KiB, 20 KiB, ...,
//   1 MiB, 1.25 MiB, ...
// The smallest block is one 4 KiB page: page-locked memory is locked in pages anyway.
// Exact powers of two (1 MiB, 64 MiB) are their own class.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::pinned {

/// The smallest block the pool hands out (one page).
inline constexpr std::size_t min_block = std::size_t{4096};

/// Requests above this are refused with std::bad_alloc before any rounding could overflow.
inline constexpr std::size_t max_request = std::numeric_limits<std::size_t>::max() / 4;

/// The largest power of two that is <= x (x > 0).
constexpr std::size_t floor_pow2(std::size_t x) noexcept {
  std::size_t p = 1;
  while (p <= x / 2) p *= 2;
  return p;
}

/// The block size a request of `bytes` is served with (0 for 0; `bytes` <= max_request).
constexpr std::size_t size_class(std::size_t bytes) noexcept {
  if (bytes == 0) return 0;
  if (bytes <= min_block) return min_block;
  std::size_t const step = floor_pow2(bytes - 1) / 4;  // a quarter of the interval's lower bound
  return (bytes + step - 1) / step * step;
}

static_assert(size_class(1) == 4096);
static_assert(size_class(4096) == 4096);
static_assert(size_class(4097) == 5120);
static_assert(size_class(8192) == 8192);
static_assert(size_class(8193) == 10240);
static_assert(size_class(std::size_t{1} << 20) == std::size_t{1} << 20);
static_assert(size_class((std::size_t{1} << 20) + 1) == (std::size_t{5} << 18));

}  // namespace detail::pinned

namespace detail {

/// A byte count for messages and range names: "64 MiB", "1.5 MiB", "100 B" (the pinned pool's
/// and the prefetcher's ranges).
struct ByteSize {
  std::size_t bytes;  ///< the count
};

/// `b` as text: the largest binary unit not larger than it, whole numbers exactly ("64 MiB"),
/// others with one decimal ("1.5 MiB").
struct ByteSizeText {
  explicit ByteSizeText(ByteSize b) noexcept {
    static constexpr char const* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    std::size_t unit = 0;
    std::size_t scale = 1;
    while (unit + 1 < sizeof units / sizeof units[0] && b.bytes / scale >= 1024) {
      scale *= 1024;
      ++unit;
    }
    int const n =
        b.bytes % scale == 0
            ? std::snprintf(text, sizeof text, "%zu %s", b.bytes / scale, units[unit])
            : std::snprintf(text, sizeof text, "%.1f %s",
                            static_cast<double>(b.bytes) / static_cast<double>(scale), units[unit]);
    size = n < 0 ? 0 : static_cast<std::size_t>(n);
  }
  char text[32]{};      ///< NUL-terminated
  std::size_t size{0};  ///< characters before the NUL
};

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE

namespace fmt {
/// Formats a byte count as ByteSizeText does. Written without {fmt}'s formatting engine, so that a
/// range named with a ByteSize instantiates none of it where it is written.
template <>
struct formatter<::nsightkit::detail::ByteSize> {
  /// No format specifiers are accepted.
  constexpr auto parse(fmt::format_parse_context& ctx) -> decltype(ctx.begin()) {
    return ctx.begin();
  }

  /// Writes the count's text.
  template <class FormatContext>
  auto format(::nsightkit::detail::ByteSize b, FormatContext& ctx) const -> decltype(ctx.out()) {
    ::nsightkit::detail::ByteSizeText const t{b};
    auto out = ctx.out();
    for (std::size_t i = 0; i < t.size; ++i) *out++ = t.text[i];
    return out;
  }
};
}  // namespace fmt
