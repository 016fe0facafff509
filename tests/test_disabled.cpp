// Compiled with NSIGHTKIT_DISABLE (the Recorder itself is linked in enabled form): every API
// still compiles, guard types are empty, macro arguments are not evaluated, nothing is emitted.
#include "support.hpp"

#include <nsightkit/nsightkit.hpp>

#include <nvtx3/nvToolsExt.h>

#include <string>
#include <type_traits>

#if !defined(NSIGHTKIT_DISABLE)
#error "this test must be compiled with NSIGHTKIT_DISABLE"
#endif

using nsightkit::testing::Recorder;

struct Dom {
  static constexpr char const* name{"dom"};
};

static_assert(!nsightkit::enabled);
static_assert(std::is_empty_v<nsightkit::ScopedRange>);
static_assert(std::is_empty_v<nsightkit::ScopedRangeIn<Dom>>);
static_assert(std::is_empty_v<nsightkit::UniqueRange>);
static_assert(std::is_trivially_destructible_v<nsightkit::ScopedRange>);
static_assert(!std::is_copy_constructible_v<nsightkit::ScopedRange>);
static_assert(std::is_move_constructible_v<nsightkit::UniqueRange>);

namespace {
int evaluated = 0;
[[maybe_unused]] int side_effect() {
  ++evaluated;
  return 1;
}
void func_with_range() { NSIGHTKIT_FUNC_RANGE(); }
}  // namespace

TEST_CASE("disabled: nothing reaches NVTX, while a raw call in the same binary does") {
  Recorder rec;
  {
    nsightkit::ScopedRange a{"static"};
    nsightkit::ScopedRange b{"fmt {}", 1};
    nsightkit::ScopedRange c{std::string{"dyn"}};
    nsightkit::ScopedRangeIn<Dom> d{
        {nsightkit::Color::rgb(1, 2, 3), nsightkit::Payload{1}}, "x{}", 2};
    nsightkit::UniqueRange u{"u"};
    u.end();
    nsightkit::mark("m");
    nsightkit::mark("m {}", 1);
    nsightkit::name_current_thread("t");
    NSIGHTKIT_RANGE("macro {}", 3);
    func_with_range();
  }
  CHECK(rec.events().empty());
  nvtxMarkA("control");  // proves the Recorder works in this binary
  CHECK(rec.lines() == std::vector<std::string>{"mark <global> control"});
}

TEST_CASE("disabled: macro arguments are not evaluated") {
  evaluated = 0;
  NSIGHTKIT_RANGE("value {}", side_effect());
  NSIGHTKIT_RANGE_IN(Dom, "value {} {}", side_effect(), side_effect());
  CHECK(evaluated == 0);
}
