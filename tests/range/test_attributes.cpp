#include "support.hpp"

#include <nsightkit/attributes.hpp>
#include <nsightkit/range.hpp>

#include <cstdint>
#include <type_traits>

using namespace nsightkit;
using nsightkit::testing::Recorder;
using K = nsightkit::testing::RecordedPayload::Kind;

TEST_CASE("Color is a constexpr ARGB value") {
  constexpr Color c = Color::rgb(0x12, 0x34, 0x56);
  STATIC_REQUIRE(c.value() == 0xFF123456u);
  STATIC_REQUIRE(Color::argb(0x80, 1, 2, 3).value() == 0x80010203u);
  STATIC_REQUIRE(Color{0x11223344u}.value() == 0x11223344u);
  STATIC_REQUIRE(Color::rgb(1, 2, 3) == Color{0xFF010203u});
  STATIC_REQUIRE(Color::rgb(1, 2, 3) != Color::rgb(1, 2, 4));
  STATIC_REQUIRE_FALSE(std::is_default_constructible_v<Color>);
}

TEST_CASE("Payload picks its kind from the argument type without ambiguity") {
  STATIC_REQUIRE(Payload{42}.kind() == PayloadKind::int64);
  STATIC_REQUIRE(Payload{-7LL}.as_int64() == -7);
  STATIC_REQUIRE(Payload{42ULL}.kind() == PayloadKind::uint64);
  STATIC_REQUIRE(Payload{std::size_t{9}}.as_uint64() == 9u);
  STATIC_REQUIRE(Payload{std::uint8_t{200}}.as_uint64() == 200u);
  STATIC_REQUIRE(Payload{2.5}.kind() == PayloadKind::floating);
  STATIC_REQUIRE(Payload{1.5f}.as_double() == 1.5);
  STATIC_REQUIRE(Payload{}.kind() == PayloadKind::none);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<Payload, bool>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<Payload, char const*>);
}

TEST_CASE("Attributes hold at most one of each kind, in any order") {
  constexpr Attributes none{};
  STATIC_REQUIRE_FALSE(none.has_color());
  STATIC_REQUIRE_FALSE(none.has_category());
  STATIC_REQUIRE(none.payload().kind() == PayloadKind::none);

  constexpr Attributes all{Payload{3u}, Category{7, "io"}, Color::rgb(9, 9, 9)};
  STATIC_REQUIRE(all.has_color());
  STATIC_REQUIRE(all.color() == Color::rgb(9, 9, 9));
  STATIC_REQUIRE(all.has_category());
  STATIC_REQUIRE(all.category().id() == 7u);
  STATIC_REQUIRE(all.payload().as_uint64() == 3u);

  constexpr Attributes one = Color::rgb(1, 1, 1);  // implicit from a single attribute
  STATIC_REQUIRE(one.has_color());
  STATIC_REQUIRE_FALSE(std::is_constructible_v<Attributes, Color, int>);
}

struct Io {
  static constexpr char const* name{"io"};
};

TEST_CASE("attributes reach NVTX with the range") {
  Recorder rec;
  {
    ScopedRangeIn<Io> r{{Color::rgb(0, 128, 255), Category{3, "disk"}, Payload{-12}}, "read {}", 4};
  }
  auto const events = rec.range_events();
  if constexpr (!enabled) {
    REQUIRE(events.empty());
    return;
  }
  REQUIRE(events.size() == 2);
  auto const& push = events[0];
  CHECK(push.describe() == "push io read 4");
  REQUIRE(push.color.has_value());
  CHECK(*push.color == 0xFF0080FFu);
  CHECK(push.category == 3u);
  CHECK(push.payload.kind == K::int64);
  CHECK(push.payload.i == -12);
  CHECK(rec.count(nsightkit::testing::EventKind::name_category) == 1);
}

TEST_CASE("each payload kind is delivered exactly") {
  Recorder rec;
  { ScopedRange r{Payload{std::uint64_t{1} << 40}, "u"}; }
  { ScopedRange r{Payload{0.25}, "d"}; }
  { ScopedRange r{"no payload"}; }
  auto const ev = rec.range_events();
  if constexpr (!enabled) {
    REQUIRE(ev.empty());
    return;
  }
  REQUIRE(ev.size() == 6);
  CHECK(ev[0].payload.kind == K::uint64);
  CHECK(ev[0].payload.u == (std::uint64_t{1} << 40));
  CHECK(ev[2].payload.kind == K::floating);
  CHECK(ev[2].payload.d == 0.25);
  CHECK(ev[4].payload.kind == K::none);
  CHECK_FALSE(ev[4].color.has_value());
  CHECK(ev[4].category == 0u);
}

TEST_CASE("a category is named once per domain and id, and the first name wins") {
  Recorder rec;
  for (int i = 0; i < 3; ++i) {
    ScopedRangeIn<Io> r{Category{300, "big-id"}, "a"};
    ScopedRangeIn<Io> s{Category{5, "small-id"}, "b"};
    ScopedRangeIn<Io> t{Category{5, "renamed"}, "c"};
  }
  std::vector<std::string> named;
  for (auto const& e : rec.events()) {
    if (e.kind == nsightkit::testing::EventKind::name_category) {
      named.push_back(std::to_string(e.object) + "=" + e.message);
    }
  }
  // Categories named before this test case (none in this file use these ids) would be absent.
  REQUIRE(named == nsk_test::expect({"300=big-id", "5=small-id"}));
}
