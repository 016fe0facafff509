// nsightkit's process-wide state across shared libraries: the host links nsightkit and a plugin
// directly, and loads a second plugin with dlopen(RTLD_LOCAL); both plugins are built with
// -fvisibility=hidden. A sink registered in the host must see the ranges of both plugins: one
// registry per process.
#include <nsightkit/detail/sinks.hpp>  // not included by range.hpp when disabled
#include <nsightkit/range.hpp>

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <string>
#include <vector>

extern "C" void plugin_emit(int i);  // from the directly linked plugin

namespace {
struct NameSink final : nsightkit::detail::RangeSink {
  std::vector<std::string> names;
  void on_push(nsightkit::detail::RangeBegin const& b) noexcept override {
    names.emplace_back(b.name);
  }
  void on_pop(char const*) noexcept override {}
};
}  // namespace

TEST_CASE("one sink registry per process across linked and RTLD_LOCAL plugins") {
  void* loaded = dlopen(NSK_DLOPEN_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(loaded != nullptr);
  auto* emit_loaded = reinterpret_cast<void (*)(int)>(dlsym(loaded, "plugin_emit"));
  REQUIRE(emit_loaded != nullptr);
  NameSink sink;
  REQUIRE(nsightkit::detail::add_sink(&sink));
  plugin_emit(1);
  emit_loaded(2);
  { nsightkit::ScopedRange r{"host {}", 3}; }
  REQUIRE(nsightkit::detail::remove_sink(&sink));
  if constexpr (nsightkit::enabled) {
    REQUIRE(sink.names == std::vector<std::string>{"plugin 1", "plugin 2", "host 3"});
  } else {
    REQUIRE(sink.names.empty());
  }
}
