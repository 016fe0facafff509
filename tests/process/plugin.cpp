// A shared library that embeds nsightkit, built with -fvisibility=hidden like many real plugins.
// Exposes a sink of its own and an instrumented function, to test that nsightkit's process-wide
// state (the sink registry) is one per process across libraries.
#include <nsightkit/detail/sinks.hpp>  // not included by range.hpp when disabled
#include <nsightkit/range.hpp>

#include <atomic>

#define NSK_PLUGIN_API extern "C" __attribute__((visibility("default")))

namespace {
struct CountingSink final : nsightkit::detail::RangeSink {
  std::atomic<int> pushes{0};
  void on_push(nsightkit::detail::RangeBegin const&) noexcept override { ++pushes; }
  void on_pop(char const*) noexcept override {}
};
CountingSink sink;
}  // namespace

NSK_PLUGIN_API int plugin_enabled() { return nsightkit::enabled ? 1 : 0; }
NSK_PLUGIN_API int plugin_add_sink() { return nsightkit::detail::add_sink(&sink) ? 1 : 0; }
NSK_PLUGIN_API int plugin_remove_sink() { return nsightkit::detail::remove_sink(&sink) ? 1 : 0; }
NSK_PLUGIN_API int plugin_seen() { return sink.pushes.load(); }
NSK_PLUGIN_API void plugin_emit(int i) { nsightkit::ScopedRange r{"plugin {}", i}; }
