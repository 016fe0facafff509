// A binary with no NVTX tool attached (no Recorder linked): names must not be formatted unless an
// nsightkit consumer (sink) listens.
#include <nsightkit/range.hpp>
#include <nsightkit/testing.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

namespace {
int formatted = 0;
struct Counted {
  int v;
};
}  // namespace

template <>
struct fmt::formatter<Counted> {
  constexpr auto parse(format_parse_context& ctx) { return ctx.begin(); }
  template <class Ctx>
  auto format(Counted const& c, Ctx& ctx) const -> decltype(ctx.out()) {
    ++formatted;
    return fmt::format_to(ctx.out(), "{}", c.v);
  }
};

TEST_CASE("without a tool, formatted names are never formatted") {
  formatted = 0;
  for (int i = 0; i < 100; ++i) {
    nsightkit::ScopedRange r{"step {}", Counted{i}};
    nsightkit::UniqueRange u{"u {}", Counted{i}};
    nsightkit::mark("m {}", Counted{i});
    NSIGHTKIT_RANGE("macro {}", Counted{i});
  }
  REQUIRE(formatted == 0);
}

#if NSIGHTKIT_ENABLED
TEST_CASE("no tool handles pushes in this binary") {
  REQUIRE_FALSE(nsightkit::detail::nvtx_tool_listening<nsightkit::DefaultDomain>());
  REQUIRE_FALSE(nsightkit::detail::nvtx_tool_listening<nsightkit::GlobalDomain>());
}

namespace {
struct NameSink final : nsightkit::detail::RangeSink {
  std::string last;
  void on_push(nsightkit::detail::RangeBegin const& b) noexcept override {
    last = std::string{b.name};
  }
  void on_pop(char const*) noexcept override {}
};
}  // namespace

TEST_CASE("an nsightkit consumer makes names formatted even without a tool") {
  NameSink sink;
  REQUIRE(nsightkit::detail::add_sink(&sink));
  formatted = 0;
  { nsightkit::ScopedRange r{"step {}", Counted{7}}; }
  REQUIRE(nsightkit::detail::remove_sink(&sink));
  CHECK(formatted == 1);
  CHECK(sink.last == "step 7");
  formatted = 0;
  { nsightkit::ScopedRange r{"step {}", Counted{8}}; }
  CHECK(formatted == 0);  // consumer gone: back to free
}
#endif

TEST_CASE("a Recorder in a binary without the injection says how to install it") {
  REQUIRE_FALSE(nsightkit::testing::Recorder::installed());
  try {
    nsightkit::testing::Recorder rec;
    FAIL("Recorder constructed without its injection");
  } catch (std::logic_error const& e) {
    CHECK_THAT(e.what(), Catch::Contains("NSIGHTKIT_TESTING_INSTALL_RECORDER"));
  }
}
