#include <nsightkit/config.hpp>

#include <catch2/catch.hpp>

#include <string>

TEST_CASE("version macros and string agree") {
  STATIC_REQUIRE(NSIGHTKIT_VERSION == NSIGHTKIT_VERSION_MAJOR * 10000 +
                                          NSIGHTKIT_VERSION_MINOR * 100 + NSIGHTKIT_VERSION_PATCH);
  std::string const expected = std::to_string(NSIGHTKIT_VERSION_MAJOR) + "." +
                               std::to_string(NSIGHTKIT_VERSION_MINOR) + "." +
                               std::to_string(NSIGHTKIT_VERSION_PATCH);
  REQUIRE(std::string{nsightkit::version_string} == expected);
}

TEST_CASE("enabled reflects NSIGHTKIT_DISABLE") {
#if defined(NSIGHTKIT_DISABLE)
  STATIC_REQUIRE_FALSE(nsightkit::enabled);
  STATIC_REQUIRE(NSIGHTKIT_ENABLED == 0);
#else
  STATIC_REQUIRE(nsightkit::enabled);
  STATIC_REQUIRE(NSIGHTKIT_ENABLED == 1);
#endif
}

TEST_CASE("has_cuda matches the detected runtime headers") {
#if defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
  STATIC_REQUIRE(nsightkit::has_cuda);
#else
  STATIC_REQUIRE_FALSE(nsightkit::has_cuda);
#endif
#endif
}
