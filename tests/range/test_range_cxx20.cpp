// Ranges and marks compiled as C++20, where {fmt} checks format strings in a consteval
// constructor: NSIGHTKIT_RANGE("x {}", i) must compile (a format string passed on through a
// function parameter is not a constant expression there) and every formatted form must name its
// range as in C++17. The CMake file builds this file with CXX_STANDARD 20.
#include "support.hpp"

#include <nsightkit/range.hpp>

#include <string>
#include <vector>

#if __cplusplus < 202002L
#error "test_range_cxx20.cpp must be compiled as C++20 (see tests/range/range.cmake)"
#endif

namespace nsk = nsightkit;
using nsightkit::testing::EventKind;
using nsightkit::testing::Recorder;
using nsk_test::expect;

namespace {
struct Io {
  static constexpr char const* name{"io"};
};

void named_after_me() { NSIGHTKIT_FUNC_RANGE(); }
}  // namespace

TEST_CASE("C++20: NSIGHTKIT_RANGE with format arguments, without, and in a domain") {
  Recorder rec;
  int evaluated = 0;
  for (int i = 0; i < 2; ++i) {
    NSIGHTKIT_RANGE("step {}", i);
    NSIGHTKIT_RANGE("plain");
    NSIGHTKIT_RANGE_IN(Io, "read {} of {}", ++evaluated, "file");
  }
  CHECK(evaluated == (nsk::enabled ? 2 : 0));
  CHECK(rec.lines() ==
        expect({"push nsightkit step 0", "push nsightkit plain", "push io read 1 of file", "pop io",
                "pop nsightkit", "pop nsightkit", "push nsightkit step 1", "push nsightkit plain",
                "push io read 2 of file", "pop io", "pop nsightkit", "pop nsightkit"}));
  // Without arguments the literal is a registered string; a formatted name is a plain message.
  for (auto const& e : rec.range_events()) {
    if (e.kind == EventKind::push) CHECK(e.registered == (e.message == "plain"));
  }
  CHECK(rec.open_ranges() == 0);
}

TEST_CASE("C++20: formatted constructors, marks and NSIGHTKIT_FUNC_RANGE") {
  Recorder rec;
  {
    nsk::ScopedRange layer{"layer{}/conv{}", 3, 1};
    nsk::ScopedRangeIn<Io> io{nsk::Attributes{nsk::Payload{std::uint64_t{64}}}, "{} bytes", 64};
    nsk::UniqueRange copy{"copy {}", std::string{"h2d"}};
    nsk::mark("mark {}", 7);
    nsk::mark_in<Io>(nsk::Attributes{}, "seek {}", 9);
    named_after_me();
  }
  CHECK(rec.lines() ==
        expect({"push nsightkit layer3/conv1", "push io 64 bytes", "start nsightkit copy h2d",
                "mark nsightkit mark 7", "mark io seek 9", "push nsightkit named_after_me",
                "pop nsightkit", "end nsightkit", "pop io", "pop nsightkit"}));
  CHECK(rec.open_ranges() == 0);
}
