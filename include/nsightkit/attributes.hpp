/**
 * @file attributes.hpp
 * @brief Event attributes (color, category, payload) and domain tags for nsightkit ranges.
 *
 * These are plain values: they exist and compile the same under `NSIGHTKIT_DISABLE`, where
 * nothing reads them. Every member is constexpr and noexcept; like any value, an object may be
 * read from several threads at once.
 *
 * @code
 * struct MyLib { static constexpr char const* name{"mylib"}; };  // a domain tag
 * nsightkit::ScopedRangeIn<MyLib> r{{nsightkit::Color::rgb(0, 128, 255),
 *                                    nsightkit::Category{1, "io"},
 *                                    nsightkit::Payload{bytes}},
 *                                   "read {}", path};
 * @endcode
 */
#pragma once

#include <nsightkit/config.hpp>

#include <cstdint>
#include <type_traits>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/**
 * @brief Domain tag of nsightkit's own ranges, named "nsightkit".
 *
 * A domain tag is any type with `static constexpr char const* name`. Domains group ranges in the
 * tools; `nsys --nvtx-domain-include` and ncu's `domain@range` filters select them by name.
 */
struct DefaultDomain {
  /// Name of the domain as the tools show it.
  static constexpr char const* name{"nsightkit"};
};

/**
 * @brief Tag for NVTX's unnamed global domain (the one raw `nvtxRangePushA` uses).
 *
 * Use it to mix with code that calls the NVTX C API directly. ncu matches it without a
 * `domain@` prefix.
 */
struct GlobalDomain {
  /// Empty: the global domain has no name.
  static constexpr char const* name{""};
};

/**
 * @brief An ARGB color for a range or mark.
 *
 * @code
 * constexpr auto red = nsightkit::Color::rgb(255, 0, 0);
 * constexpr nsightkit::Color blue{0xFF0000FFu};  // 0xAARRGGBB
 * @endcode
 */
class Color {
 public:
  /// A color from its packed value.
  /// @param argb alpha, red, green and blue as 0xAARRGGBB.
  constexpr explicit Color(std::uint32_t argb) noexcept : argb_{argb} {}

  /// An opaque color (alpha 255) from red, green and blue components.
  /// @param r red. @param g green. @param b blue.
  /// @return the color 0xFFRRGGBB.
  static constexpr Color rgb(std::uint8_t r, std::uint8_t g, std::uint8_t b) noexcept {
    return Color{0xFF000000u | (std::uint32_t{r} << 16u) | (std::uint32_t{g} << 8u) |
                 std::uint32_t{b}};
  }

  /// A color from alpha, red, green and blue components.
  /// @param a alpha (0: transparent). @param r red. @param g green. @param b blue.
  /// @return the color 0xAARRGGBB.
  static constexpr Color argb(std::uint8_t a, std::uint8_t r, std::uint8_t g,
                              std::uint8_t b) noexcept {
    return Color{(std::uint32_t{a} << 24u) | (std::uint32_t{r} << 16u) | (std::uint32_t{g} << 8u) |
                 std::uint32_t{b}};
  }

  /// The packed value. @return the color as 0xAARRGGBB.
  [[nodiscard]] constexpr std::uint32_t value() const noexcept { return argb_; }

  /// Colors compare by value. @param a the first color. @param b the second.
  /// @return true when the values are equal.
  friend constexpr bool operator==(Color a, Color b) noexcept { return a.argb_ == b.argb_; }
  /// Colors compare by value. @param a the first color. @param b the second.
  /// @return true when the values differ.
  friend constexpr bool operator!=(Color a, Color b) noexcept { return a.argb_ != b.argb_; }

 private:
  std::uint32_t argb_;
};

/**
 * @brief A category: a number that groups events, optionally with a name.
 *
 * The name is given to the tools once per domain and id, the first time a range of that
 * category is emitted while a tool listens. The name must outlive the program's last use of the
 * category (a string literal is the usual choice).
 */
class Category {
 public:
  /// A category by number only.
  /// @param id the category number (0 means no category to the tools).
  constexpr explicit Category(std::uint32_t id) noexcept : id_{id} {}
  /// A named category.
  /// @param id the category number.
  /// @param name its name; must outlive every use of the category (a string literal).
  constexpr Category(std::uint32_t id, char const* name) noexcept : id_{id}, name_{name} {}

  /// The category number. @return the id given at construction.
  [[nodiscard]] constexpr std::uint32_t id() const noexcept { return id_; }
  /// The category name. @return the name given at construction, or nullptr when unnamed.
  [[nodiscard]] constexpr char const* name() const noexcept { return name_; }

 private:
  std::uint32_t id_;
  char const* name_{nullptr};
};

/// Which member of a Payload holds its value.
enum class PayloadKind : std::uint8_t {
  none,      ///< no payload
  int64,     ///< signed integer
  uint64,    ///< unsigned integer
  floating,  ///< double
};

/**
 * @brief A numeric value attached to an event (bytes copied, batch size, loss…).
 *
 * Any integer type is accepted without ambiguity (signed integers become int64, unsigned
 * integers uint64); floating-point values become double. `bool` is rejected.
 */
class Payload {
 public:
  /// No payload (kind() is PayloadKind::none).
  constexpr Payload() noexcept = default;

  /// An integer or floating-point payload.
  /// @tparam T any arithmetic type but `bool`.
  /// @param value stored as int64 (signed), uint64 (unsigned) or double (floating point).
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, int> = 0>
  constexpr explicit Payload(T value) noexcept {
    if constexpr (std::is_floating_point_v<T>) {
      kind_ = PayloadKind::floating;
      d_ = static_cast<double>(value);
    } else if constexpr (std::is_signed_v<T>) {
      kind_ = PayloadKind::int64;
      i_ = static_cast<std::int64_t>(value);
    } else {
      kind_ = PayloadKind::uint64;
      u_ = static_cast<std::uint64_t>(value);
    }
  }

  /// Which value this payload holds. @return the kind; PayloadKind::none when empty.
  [[nodiscard]] constexpr PayloadKind kind() const noexcept { return kind_; }
  /// The signed value. @return the value when kind() is int64, else 0.
  [[nodiscard]] constexpr std::int64_t as_int64() const noexcept { return i_; }
  /// The unsigned value. @return the value when kind() is uint64, else 0.
  [[nodiscard]] constexpr std::uint64_t as_uint64() const noexcept { return u_; }
  /// The floating-point value. @return the value when kind() is floating, else 0.0.
  [[nodiscard]] constexpr double as_double() const noexcept { return d_; }

 private:
  PayloadKind kind_{PayloadKind::none};
  std::int64_t i_{0};
  std::uint64_t u_{0};
  double d_{0.0};
};

/**
 * @brief The optional attributes of one event: at most one color, category and payload.
 *
 * Built implicitly from a single attribute or from several in any order:
 * `Attributes{Color::rgb(1, 2, 3), Payload{42}}`. Giving the same kind twice is a compile error.
 */
class Attributes {
  template <class T>
  static constexpr bool is_attribute() noexcept {
    return std::is_same_v<T, Color> || std::is_same_v<T, Category> || std::is_same_v<T, Payload>;
  }

 public:
  /// No attributes.
  constexpr Attributes() noexcept = default;
  /// Only a color. @param c the color.
  constexpr Attributes(Color c) noexcept : has_color_{true}, color_{c} {}  // NOLINT(implicit)
  /// Only a category. @param c the category.
  constexpr Attributes(Category c) noexcept : has_category_{true}, category_{c} {}  // NOLINT
  /// Only a payload. @param p the payload.
  constexpr Attributes(Payload p) noexcept : payload_{p} {}  // NOLINT(implicit)

  /// Several attributes in any order, each kind at most once (a kind given twice does not
  /// compile).
  /// @param a the first attribute (a Color, Category or Payload).
  /// @param b the second attribute.
  /// @param rest further attributes.
  template <
      class A, class B, class... Rest,
      std::enable_if_t<
          is_attribute<A>() && is_attribute<B>() && (true && ... && is_attribute<Rest>()), int> = 0>
  constexpr Attributes(A a, B b, Rest... rest) noexcept {
    static_assert(count<Color, A, B, Rest...>() <= 1, "nsightkit::Attributes: color given twice");
    static_assert(count<Category, A, B, Rest...>() <= 1,
                  "nsightkit::Attributes: category given twice");
    static_assert(count<Payload, A, B, Rest...>() <= 1,
                  "nsightkit::Attributes: payload given twice");
    set(a);
    set(b);
    (set(rest), ...);
  }

  /// Whether a color is set. @return true when a color was given.
  [[nodiscard]] constexpr bool has_color() const noexcept { return has_color_; }
  /// The color. @return the color given (meaningful when has_color()).
  [[nodiscard]] constexpr Color color() const noexcept { return color_; }
  /// Whether a category is set. @return true when a category was given.
  [[nodiscard]] constexpr bool has_category() const noexcept { return has_category_; }
  /// The category. @return the category given (meaningful when has_category()).
  [[nodiscard]] constexpr Category category() const noexcept { return category_; }
  /// The payload. @return the payload given; its kind() is PayloadKind::none when unset.
  [[nodiscard]] constexpr Payload payload() const noexcept { return payload_; }

 private:
  template <class T, class... Ts>
  static constexpr int count() noexcept {
    return (0 + ... + (std::is_same_v<T, Ts> ? 1 : 0));
  }
  constexpr void set(Color c) noexcept {
    has_color_ = true;
    color_ = c;
  }
  constexpr void set(Category c) noexcept {
    has_category_ = true;
    category_ = c;
  }
  constexpr void set(Payload p) noexcept { payload_ = p; }

  bool has_color_{false};
  bool has_category_{false};
  Color color_{0u};
  Category category_{0u};
  Payload payload_{};
};

NSIGHTKIT_DETAIL_END_NAMESPACE
