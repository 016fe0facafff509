// The Recorder itself: it must see raw NVTX C calls exactly, per thread, with attributes.
#include "support.hpp"

#include <nvtx3/nvToolsExt.h>

#include <stdexcept>
#include <thread>

using nsightkit::testing::EventKind;
using nsightkit::testing::Recorder;
using Lines = std::vector<std::string>;

TEST_CASE("the recorder is installed by recorder_main.cpp") { REQUIRE(Recorder::installed()); }

TEST_CASE("raw NVTX C calls are recorded in order") {
  Recorder rec;
  nvtxRangePushA("raw");
  nvtxMarkA("tick");
  nvtxRangePushW(L"wide");
  nvtxRangePop();
  nvtxRangePop();
  REQUIRE(rec.lines() == Lines{"push <global> raw", "mark <global> tick", "push <global> wide",
                               "pop <global>", "pop <global>"});
  REQUIRE(rec.open_ranges() == 0);
}

TEST_CASE("attributes of raw calls are recorded") {
  Recorder rec;
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 0xFF00FF00u;
  a.category = 9;
  a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
  a.payload.iValue = -3;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "attr";
  nvtxDomainHandle_t d = nvtxDomainCreateA("rawdomain");
  nvtxDomainRangePushEx(d, &a);
  nvtxDomainRangePop(d);
  auto const ev = rec.range_events();
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].describe() == "push rawdomain attr");
  CHECK(ev[0].color == 0xFF00FF00u);
  CHECK(ev[0].category == 9u);
  CHECK(ev[0].payload.kind == nsightkit::testing::RecordedPayload::Kind::int64);
  CHECK(ev[0].payload.i == -3);
  CHECK(rec.count(EventKind::domain_create) == 1);
}

TEST_CASE("start/end ranges across threads keep their id") {
  Recorder rec;
  nvtxRangeId_t id = nvtxRangeStartA("cross");
  std::thread t{[id] { nvtxRangeEnd(id); }};
  t.join();
  auto const ev = rec.range_events();
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].kind == EventKind::start);
  CHECK(ev[1].kind == EventKind::end);
  CHECK(ev[0].range_id == ev[1].range_id);
  CHECK(ev[0].range_id != 0u);
  CHECK(ev[0].thread != ev[1].thread);
  CHECK(rec.open_ranges() == 0);
}

TEST_CASE("unbalanced pushes are counted as open") {
  Recorder rec;
  nvtxRangePushA("left open");
  CHECK(rec.open_ranges() == 1);
  nvtxRangePop();
  CHECK(rec.open_ranges() == 0);
}

TEST_CASE("per-thread views keep each thread's order") {
  Recorder rec;
  std::thread a{[] {
    nvtxRangePushA("a1");
    nvtxRangePop();
  }};
  std::thread::id const ida = a.get_id();
  a.join();
  nvtxMarkA("main");
  CHECK(rec.lines(ida) == Lines{"push <global> a1", "pop <global>"});
  CHECK(rec.lines(std::this_thread::get_id()) == Lines{"mark <global> main"});
  auto const all = rec.events();
  for (std::size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1].sequence < all[i].sequence);
}

TEST_CASE("only one Recorder at a time, and clear forgets") {
  Recorder rec;
  REQUIRE_THROWS_AS(Recorder{}, std::logic_error);
  nvtxMarkA("x");
  CHECK(rec.lines().size() == 1);
  rec.clear();
  CHECK(rec.lines().empty());
}

TEST_CASE("nothing is recorded while no Recorder exists") {
  nvtxMarkA("before");
  Recorder rec;
  CHECK(rec.lines().empty());
}

TEST_CASE("registered strings resolve to their text") {
  Recorder rec;
  nvtxDomainHandle_t d = nvtxDomainCreateA("regdomain");
  nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "registered text");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = s;
  nvtxDomainMarkEx(d, &a);
  auto const ev = rec.range_events();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].registered);
  CHECK(ev[0].describe() == "mark regdomain registered text");
}
