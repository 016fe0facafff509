/**
 * @file testing.hpp
 * @brief nsightkit::testing::Recorder — an in-process NVTX tool that records every event.
 *
 * The Recorder attaches to NVTX through its static injection entry point
 * (`InitializeInjectionNvtx2_fnptr`), so it needs no GPU, no driver and no profiler. It records,
 * per thread and in order, every push/pop, start/end, mark, domain creation, registered string,
 * category and thread/stream name, with message, color, category and payload.
 *
 * **Enabling it in a test binary.** In exactly one translation unit of the executable (or shared
 * library) whose NVTX calls you want to see, and before any other include:
 * @code
 * // recorder_main.cpp: nothing else in this file
 * #define NSIGHTKIT_TESTING_INSTALL_RECORDER
 * #include <nsightkit/testing.hpp>
 * @endcode
 * Then in any test:
 * @code
 * nsightkit::testing::Recorder rec;            // starts recording (one at a time)
 * { nsightkit::ScopedRange r{"forward"}; }
 * REQUIRE(rec.lines() == std::vector<std::string>{"push nsightkit forward", "pop nsightkit"});
 * @endcode
 *
 * Limits (NVTX's own rules): NVTX keeps one instance per linkage unit, so the Recorder sees the
 * calls of the executable or shared library it is linked into. An injection named by
 * `NVTX_INJECTION64_PATH` (set by nsys and ncu) takes precedence; the Recorder's constructor then
 * throws std::logic_error saying so. The recorder translation unit must not include NVTX
 * extension headers (payload, counters, memory).
 *
 * The Recorder is a test tool: it works the same whether or not the code under test defines
 * `NSIGHTKIT_DISABLE`, which is what lets a test prove that a disabled build emits nothing.
 */
#pragma once

#if defined(NSIGHTKIT_TESTING_INSTALL_RECORDER) && !defined(NSIGHTKIT_DETAIL_RECORDER_INSTALLED)
#define NSIGHTKIT_DETAIL_RECORDER_INSTALLED
#if defined(NVTX_VERSION)
#error                                                                                             \
    "NSIGHTKIT_TESTING_INSTALL_RECORDER: include <nsightkit/testing.hpp> before any NVTX or nsightkit header in this translation unit"
#endif
// This translation unit supplies the strong definition of NVTX's static injection pointer.
#define NVTX_STATIC_INJECTION_IMPL
#include <cstdint>
extern "C" int nsightkit_testing_recorder_initialize(
    void const* (*get_export_table)(std::uint32_t));
extern "C" int (*InitializeInjectionNvtx2_fnptr)(void const* (*)(std::uint32_t));
#endif

#include <nsightkit/config.hpp>
#include <nsightkit/detail/recorder.hpp>
#include <nsightkit/testing_types.hpp>

#include <nvtx3/nvToolsExt.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nsightkit {
namespace testing {

/**
 * @brief Records the NVTX calls of this linkage unit while it is alive.
 *
 * At most one Recorder exists at a time. Events recorded before construction are not kept.
 * Thread-safe: events may arrive from any thread while the test reads them; every reader copies
 * the events under the Recorder's lock.
 */
class Recorder {
 public:
  /// Starts recording, with no events.
  /// @throws std::logic_error when the injection is not installed in this binary (see the file
  ///         comment), when another NVTX tool owns this process, or when another Recorder is
  ///         alive.
  Recorder() {
    nvtxInitialize(nullptr);  // attach the injection now, if it is there
    auto& s = detail::RecorderState::get();
    std::lock_guard<std::mutex> lock{s.mutex};
    if (!s.installed) {
      char const* env = std::getenv("NVTX_INJECTION64_PATH");
      if (env != nullptr && *env != '\0') {
        NSIGHTKIT_DETAIL_THROW(std::logic_error(
            std::string{"nsightkit::testing::Recorder: another NVTX tool owns this process "
                        "(NVTX_INJECTION64_PATH="} +
            env + "); unset it to record in-process"));
      }
      NSIGHTKIT_DETAIL_THROW(std::logic_error(
          "nsightkit::testing::Recorder: the recorder is not installed in this binary; define "
          "NSIGHTKIT_TESTING_INSTALL_RECORDER before including <nsightkit/testing.hpp> in exactly "
          "one translation unit of it"));
    }
    if (s.owned) {
      NSIGHTKIT_DETAIL_THROW(
          std::logic_error("nsightkit::testing::Recorder: another Recorder is already recording"));
    }
    s.owned = true;
    s.events.clear();
    s.recording.store(true, std::memory_order_release);
  }

  /// Stops recording and drops the events, so that another Recorder may start.
  ~Recorder() {
    auto& s = detail::RecorderState::get();
    std::lock_guard<std::mutex> lock{s.mutex};
    s.recording.store(false, std::memory_order_release);
    s.events.clear();
    s.owned = false;
  }

  Recorder(Recorder const&) = delete;
  Recorder& operator=(Recorder const&) = delete;

  /// Whether the Recorder can record in this binary (initialises NVTX first).
  /// @return true when this binary's NVTX attached the Recorder's injection.
  [[nodiscard]] static bool installed() {
    nvtxInitialize(nullptr);
    auto& s = detail::RecorderState::get();
    std::lock_guard<std::mutex> lock{s.mutex};
    return s.installed;
  }

  /// Every event recorded so far. @return a copy, in process-wide order.
  /// @throws std::bad_alloc (as every reader below) when the copy cannot be made.
  [[nodiscard]] std::vector<Event> events() const {
    auto& s = detail::RecorderState::get();
    std::lock_guard<std::mutex> lock{s.mutex};
    return s.events;
  }

  /// The events of one thread. @param thread the thread. @return its events, in order.
  [[nodiscard]] std::vector<Event> events(std::thread::id thread) const {
    std::vector<Event> out;
    for (auto& e : events()) {
      if (e.thread == thread) out.push_back(std::move(e));
    }
    return out;
  }

  /// Range events only. @return the push, pop, start, end and mark events of all threads, in
  /// order.
  [[nodiscard]] std::vector<Event> range_events() const {
    std::vector<Event> out;
    for (auto& e : events()) {
      if (is_range_event(e.kind)) out.push_back(std::move(e));
    }
    return out;
  }

  /// Range events as text. @return Event::describe() of every range event (push, pop, start,
  /// end, mark), in order.
  [[nodiscard]] std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (auto const& e : range_events()) out.push_back(e.describe());
    return out;
  }

  /// One thread's range events as text. @param thread the thread.
  /// @return Event::describe() of its range events, in order.
  [[nodiscard]] std::vector<std::string> lines(std::thread::id thread) const {
    std::vector<std::string> out;
    for (auto const& e : events(thread)) {
      if (is_range_event(e.kind)) out.push_back(e.describe());
    }
    return out;
  }

  /// Counts events of one kind. @param k the kind.
  /// @return the number of recorded events of kind `k` (all threads).
  [[nodiscard]] std::size_t count(EventKind k) const {
    std::size_t n = 0;
    for (auto const& e : events()) n += e.kind == k ? 1 : 0;
    return n;
  }

  /// Ranges left open. @return pushes without a matching pop, plus starts without a matching
  /// end, among the recorded events.
  [[nodiscard]] std::size_t open_ranges() const {
    std::size_t pushes = 0;
    std::size_t pops = 0;
    std::unordered_map<std::uint64_t, int> starts;
    for (auto const& e : events()) {
      if (e.kind == EventKind::push) ++pushes;
      if (e.kind == EventKind::pop) ++pops;
      if (e.kind == EventKind::start) ++starts[e.range_id];
      if (e.kind == EventKind::end) --starts[e.range_id];
    }
    std::size_t open = pushes > pops ? pushes - pops : 0;
    for (auto const& kv : starts) open += kv.second > 0 ? static_cast<std::size_t>(kv.second) : 0;
    return open;
  }

  /// Forgets everything recorded so far.
  void clear() {
    auto& s = detail::RecorderState::get();
    std::lock_guard<std::mutex> lock{s.mutex};
    s.events.clear();
  }

 private:
  static bool is_range_event(EventKind k) noexcept {
    return k == EventKind::push || k == EventKind::pop || k == EventKind::start ||
           k == EventKind::end || k == EventKind::mark;
  }
};

}  // namespace testing
}  // namespace nsightkit

#if defined(NSIGHTKIT_TESTING_INSTALL_RECORDER) && !defined(NSIGHTKIT_DETAIL_RECORDER_DEFINED)
#define NSIGHTKIT_DETAIL_RECORDER_DEFINED
extern "C" int nsightkit_testing_recorder_initialize(
    void const* (*get_export_table)(std::uint32_t)) {
  return ::nsightkit::testing::detail::initialize(get_export_table);
}
extern "C" {
// The strong definition NVTX's loader finds last in its search (after NVTX_INJECTION64_PATH).
int (*InitializeInjectionNvtx2_fnptr)(void const* (*)(std::uint32_t)) =
    &nsightkit_testing_recorder_initialize;
}
#endif
