// Shared helpers for nsightkit's tests.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/testing.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace nsk_test {

/// Range events of the recorder as lines, restricted to one thread.
inline std::vector<std::string> lines_here(nsightkit::testing::Recorder const& rec) {
  return rec.lines(std::this_thread::get_id());
}

/// What a test expects nsightkit to have emitted: exactly `expected` when instrumentation is
/// enabled, nothing at all under NSIGHTKIT_DISABLE. This is how the whole suite also runs in a
/// disabled build and proves that build silent.
inline std::vector<std::string> expect(std::vector<std::string> expected) {
  if constexpr (nsightkit::enabled) {
    return expected;
  } else {
    return {};
  }
}

}  // namespace nsk_test
