// Internal: the schedule's fields as the grammar returns them, and the grammar's two entries, which
// CaptureSchedule::validation_error() and CaptureSchedule::parse() call. Those two members are
// defined with the grammar (schedule_parse.hpp), so capture_types.hpp includes neither file: in
// the compiled mode only src/nsightkit.cpp parses them (detail/compiled.hpp).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::capture {

/// The fields of a schedule, in CaptureSchedule's order (parsed from text, or a schedule checked).
struct ParsedSchedule {
  std::int64_t wait{0};
  std::int64_t warmup{0};
  std::int64_t active{0};
  std::int64_t repeat{1};
  std::int64_t skip_first{0};
  bool on_demand{false};
};

/// "" when the fields make a valid schedule, else what is wrong with them (one sentence):
/// CaptureSchedule::validation_error().
NSIGHTKIT_DETAIL_ENTRY std::string schedule_error(ParsedSchedule const& s);

/// CaptureSchedule::parse: the schedule in `text`, valid, or std::nullopt with what is wrong
/// in `*error` (when not null).
NSIGHTKIT_DETAIL_ENTRY std::optional<ParsedSchedule> parse_schedule(std::string_view text,
                                                                    std::string* error);

}  // namespace detail::capture
NSIGHTKIT_DETAIL_END_NAMESPACE
