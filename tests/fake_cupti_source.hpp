// A fake CUPTI for the report's GPU logic on the CPU: launch() is the callback of a launch call on
// the launching thread; kernel()/copy()/memset()/memory() queue the activity CUPTI would record,
// delivered later by arrive() (or at the report's flush), as CUPTI's buffer-completed callback
// would. Made the report's CUPTI source through provide_fake (fake_cupti.hpp's Session does it
// for a Catch2 test; a plain program, such as the HTA check's, does it itself).
#pragma once

#include <nsightkit/report.hpp>

#include <cstdint>
#include <utility>
#include <vector>

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/cupti/attribution.hpp>
#include <nsightkit/detail/report/clock.hpp>

namespace nsightkit_test {

namespace nr = nsightkit::detail::report;

class FakeCupti final : public nr::AttributionSource {
 public:
  [[nodiscard]] char const* name() const noexcept override { return "cupti"; }

  /// The report clock now: synthetic activity placed against real ranges.
  static std::int64_t now() noexcept { return nr::clock_now(nr::process_tsc()); }

  std::uint32_t launch(std::int64_t when) {
    std::uint32_t const id = next_++;
    note_launch(id, when);
    return id;
  }

  nr::GpuActivity& kernel(std::uint32_t corr, std::uint32_t stream, std::int64_t start,
                          std::int64_t end, char const* kname = "kernel_a",
                          std::uint64_t graph_node = 0) {
    nr::GpuActivity& a = queue(nr::GpuActivity::Kind::kernel, corr, stream, start, end);
    a.name = intern_name(kname);
    a.graph_node = graph_node;
    return a;
  }

  nr::GpuActivity& copy(std::uint32_t corr, nr::CopyKind kind, std::uint64_t bytes,
                        std::int64_t start, std::int64_t end, bool pageable,
                        std::uint32_t stream = 9) {
    nr::GpuActivity& a = queue(nr::GpuActivity::Kind::memcpy, corr, stream, start, end);
    a.copy = kind;
    a.pageable = pageable;
    a.bytes = bytes;
    return a;
  }

  nr::GpuActivity& memset(std::uint32_t corr, std::uint64_t bytes, std::int64_t start,
                          std::int64_t end, std::uint32_t stream = 9) {
    nr::GpuActivity& a = queue(nr::GpuActivity::Kind::memset, corr, stream, start, end);
    a.bytes = bytes;
    return a;
  }

  void memory(std::uint32_t corr, bool alloc, std::uint64_t address, std::uint64_t bytes,
              std::int64_t t) {
    nr::GpuActivity& a =
        queue(alloc ? nr::GpuActivity::Kind::alloc : nr::GpuActivity::Kind::free, corr, 0, t, t);
    a.address = address;
    a.bytes = bytes;
  }

  /// The CUPTI stream id (device 0) a stream handle has, for work launched on it by threads
  /// outside any range; a handle not listed is one CUPTI cannot tell.
  bool stream_key(void* stream, std::uint64_t& key) override {
    for (auto const& [handle, id] : streams) {
      if (handle == stream) {
        key = id;
        return true;
      }
    }
    return false;
  }
  std::vector<std::pair<void*, std::uint32_t>> streams;

  /// A host-blocking call `api` that took `ns` on this thread, as CUPTI's exit callback sees it.
  void sync(char const* api, std::int64_t ns) { note_sync(intern_name(api), ns); }

  /// Delivers what was queued.
  void arrive() {
    std::vector<nr::GpuActivity> batch;
    batch.swap(queued_);
    if (!batch.empty()) add_activities(batch.data(), batch.size());
  }

  void activate(bool on) override {
    active = on;
    activations.push_back(on);
  }

  bool active{false};
  std::vector<bool> activations;
  int deliveries{0};

 protected:
  void deliver() override {
    ++deliveries;
    arrive();
  }

 private:
  /// A record CUPTI would deliver later, with what every kind of activity has.
  nr::GpuActivity& queue(nr::GpuActivity::Kind kind, std::uint32_t corr, std::uint32_t stream,
                         std::int64_t start, std::int64_t end) {
    nr::GpuActivity& a = queued_.emplace_back();
    a.kind = kind;
    a.correlation = corr;
    a.stream = stream;
    a.start = start;
    a.end = end;
    return a;
  }

  std::uint32_t next_{1};
  std::vector<nr::GpuActivity> queued_;
};

inline FakeCupti* fake = nullptr;
// Every fake stays alive (and reachable, for LeakSanitizer) until the process ends: threads'
// launch cursors and the report's flush may still point into an earlier one.
inline std::vector<FakeCupti*>& all_fakes = *new std::vector<FakeCupti*>;
inline nr::GpuSource* provide_fake() { return fake; }

}  // namespace nsightkit_test
#endif
