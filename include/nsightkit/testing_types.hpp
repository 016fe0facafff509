/**
 * @file testing_types.hpp
 * @brief What nsightkit::testing::Recorder records (see testing.hpp): EventKind, Event and
 *        RecordedPayload.
 *
 * Plain types without NVTX, so code that inspects recorded events needs no NVTX header. Like the
 * Recorder, they do not depend on `NSIGHTKIT_DISABLE`.
 *
 * @code
 * for (nsightkit::testing::Event const& e : rec.events()) {
 *   if (e.kind == nsightkit::testing::EventKind::push) std::puts(e.describe().c_str());
 * }
 * @endcode
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <thread>

namespace nsightkit {
/// Tools for testing instrumentation. Not part of the instrumentation itself.
namespace testing {

/// The kind of a recorded NVTX call.
enum class EventKind {
  push,              ///< nvtx(Domain)RangePush*
  pop,               ///< nvtx(Domain)RangePop
  start,             ///< nvtx(Domain)RangeStart*
  end,               ///< nvtx(Domain)RangeEnd
  mark,              ///< nvtx(Domain)Mark*
  domain_create,     ///< nvtxDomainCreate*
  domain_destroy,    ///< nvtxDomainDestroy
  register_string,   ///< nvtxDomainRegisterString*
  name_category,     ///< nvtx(Domain)NameCategory*
  name_os_thread,    ///< nvtxNameOsThread*
  name_cuda_device,  ///< nvtxNameCudaDevice*
  name_cuda_stream,  ///< nvtxNameCudaStream*
  name_cuda_event,   ///< nvtxNameCudaEvent*
};

/// The lowercase name of an event kind, as used by Event::describe().
/// @param k the kind. @return its name, e.g. "push" or "register_string" ("?" out of range).
inline char const* to_string(EventKind k) noexcept {
  switch (k) {
    case EventKind::push: return "push";
    case EventKind::pop: return "pop";
    case EventKind::start: return "start";
    case EventKind::end: return "end";
    case EventKind::mark: return "mark";
    case EventKind::domain_create: return "domain_create";
    case EventKind::domain_destroy: return "domain_destroy";
    case EventKind::register_string: return "register_string";
    case EventKind::name_category: return "name_category";
    case EventKind::name_os_thread: return "name_os_thread";
    case EventKind::name_cuda_device: return "name_cuda_device";
    case EventKind::name_cuda_stream: return "name_cuda_stream";
    case EventKind::name_cuda_event: return "name_cuda_event";
  }
  return "?";
}

/// A recorded payload. (Not nsightkit::Payload: the Recorder is independent of NSIGHTKIT_DISABLE,
/// whose ABI namespace would otherwise differ between the recorder and the code under test.)
struct RecordedPayload {
  /// Which member holds the value.
  enum class Kind { none, int64, uint64, floating };
  Kind kind{Kind::none};  ///< which value is set
  std::int64_t i{0};      ///< value when kind is int64
  std::uint64_t u{0};     ///< value when kind is uint64
  double d{0.0};          ///< value when kind is floating
};

/// One recorded NVTX call.
struct Event {
  EventKind kind{EventKind::mark};     ///< what was called
  std::string domain;                  ///< domain name; "" for the global domain
  std::string message;                 ///< the text (resolved for registered strings)
  bool registered{false};              ///< message was a registered string handle
  std::optional<std::uint32_t> color;  ///< ARGB color, if any
  std::uint32_t category{0};           ///< category id (0 = none)
  RecordedPayload payload{};           ///< payload, kind none if absent
  std::uint64_t range_id{0};           ///< start/end ranges: the id the Recorder handed out
  std::uint64_t object{0};             ///< named object: category id, OS thread id, device, stream
  int depth{0};                        ///< push: depth after the push; pop: depth before the pop
  std::thread::id thread{};            ///< the calling thread
  std::uint64_t sequence{0};           ///< position in the process-wide order of recorded calls

  /// A one-line description of the call.
  /// @return kind, domain ("<global>" for the global domain) and message, separated by spaces:
  ///         "push nsightkit forward", "pop nsightkit", "mark <global> hi".
  /// @throws std::bad_alloc when the text cannot be built.
  [[nodiscard]] std::string describe() const {
    std::string s = to_string(kind);
    s += ' ';
    s += domain.empty() ? "<global>" : domain;
    if (!message.empty()) {
      s += ' ';
      s += message;
    }
    return s;
  }
};

}  // namespace testing
}  // namespace nsightkit
