#include "odr_shared.hpp"
#include "support.hpp"

using nsightkit::testing::EventKind;
using nsightkit::testing::Recorder;

void call_from_a() {
  odr_shared_function();
  odr_shared_static();
}

TEST_CASE("two translation units share per-site and per-domain registrations") {
  Recorder rec;
  call_from_a();
  call_from_b();
  call_from_a();
  REQUIRE(rec.lines() ==
          nsk_test::expect(
              {"push nsightkit odr_shared_function", "pop nsightkit", "push nsightkit odr-static",
               "pop nsightkit", "push nsightkit odr_shared_function", "pop nsightkit",
               "push nsightkit odr-static", "pop nsightkit", "push nsightkit odr_shared_function",
               "pop nsightkit", "push nsightkit odr-static", "pop nsightkit"}));
  std::size_t regs = 0;
  for (auto const& e : rec.events()) regs += e.kind == EventKind::register_string ? 1 : 0;
  CHECK(regs == (nsightkit::enabled ? 2u : 0u));
}
