// NVTX's first use in a process happening on many threads at once (ctest label "tsan": CI runs it
// under ThreadSanitizer). NVTX initialises itself on the first call with plain stores to its
// function pointers; nsightkit must not read those pointers while another thread writes them.
// Built twice: without a tool (NO_RECORDER) and with the Recorder's injection linked in.
#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/testing.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace {
struct FirstUseDomain {
  static constexpr char const* name = "nsightkit.test.first_use";
};
}  // namespace

TEST_CASE("the first NVTX use in the process comes from 8 threads at once") {
  constexpr int threads = 8;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  for (int k = 0; k < threads; ++k) {
    workers.emplace_back([k, &ready, &go] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      // Every public entry point that may be the process's first NVTX call.
      switch (k % 4) {
        case 0: nsightkit::name_current_thread("first-use " + std::to_string(k)); break;
        case 1: {
          nsightkit::ScopedRange r{"first {}", k};
        } break;
        case 2: {
          nsightkit::ScopedRangeIn<FirstUseDomain> r{"named domain"};
        } break;
        default: {
          nsightkit::ModuleScope m{"module"};
        } break;
      }
      for (int i = 0; i < 100; ++i) {
        nsightkit::ScopedRange r{"again {}", i};
        nsightkit::mark("m");
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go.store(true);
  for (auto& w : workers) w.join();

  // The answer every thread got is the one the process settles on.
  bool const tool = nsightkit::testing::Recorder::installed();
#if NSIGHTKIT_ENABLED
  REQUIRE(nsightkit::detail::nvtx_tool_listening<nsightkit::GlobalDomain>() == tool);
  REQUIRE(nsightkit::detail::nvtx_tool_listening<FirstUseDomain>() == tool);
#else
  (void)tool;
#endif
}
