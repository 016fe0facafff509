// Internal: the grammar of a capture schedule given as text (the NSIGHTKIT_CAPTURE variable), and
// the rules a schedule must follow (CaptureSchedule::validation_error, CaptureSchedule::parse).
//
//   value    := an "off" word (detail::is_off_word: 0, off, none, false, no; any case)
//             | item ("," item)*
//   item     := key "=" integer                  (blanks around key and integer are ignored)
//             | "on-demand"                      (capture only when requested: warmup, active)
//   key      := "wait" | "warmup" | "active" | "repeat" | "skip_first"   (each at most once)
//   integer  := digit+                           (0 .. 9223372036854775807; no sign, no suffix)
//
// `active` is required and at least 1; keys not given take CaptureSchedule's defaults (the
// text replaces the code's schedule as a whole, it does not patch it).
// Every function here reports problems as text (empty = fine), never by throwing, so the window
// can choose between throwing and warning, and the code works without exceptions.
// Here too CaptureSchedule's validation_error() and parse() (capture_types.hpp). Compiled
// (NSIGHTKIT_COMPILED), only src/nsightkit.cpp includes this file: it defines those two members and
// the two entries schedule.hpp declares.
#pragma once

#include <nsightkit/capture_types.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture/schedule.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/text.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::capture {

/// Parses a non-negative decimal int64 ("0" .. "9223372036854775807"). Returns an error text
/// naming `value` and `key`, or "" on success.
inline std::string parse_schedule_count(std::string_view value, std::string_view key,
                                        std::int64_t& out) {
  if (value.empty()) return "value of " + quote_value(key) + " is empty";
  std::uint64_t v = 0;
  constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  for (char c : value) {
    if (c < '0' || c > '9') {
      return "value " + quote_value(value) + " of " + quote_value(key) +
             " is not a non-negative integer (digits only)";
    }
    auto const digit = static_cast<std::uint64_t>(c - '0');
    if (v > (max - digit) / 10) {
      return "value " + quote_value(value) + " of " + quote_value(key) +
             " is out of range (at most " + std::to_string(max) + ")";
    }
    v = v * 10 + digit;
  }
  out = static_cast<std::int64_t>(v);
  return {};
}

/// Parses `text` (see the grammar above, without the "off" words) into `out`.
/// Returns "" on success, else one sentence naming the bad part.
inline std::string parse_schedule_text(std::string_view text, ParsedSchedule& out) {
  static constexpr std::array<std::string_view, 5> keys{"wait", "warmup", "active", "repeat",
                                                        "skip_first"};
  std::array<bool, keys.size()> seen{};
  ParsedSchedule r;
  text = trim(text);
  if (text.empty()) return "the schedule is empty";
  std::size_t pos = 0;
  while (true) {
    std::size_t const comma = text.find(',', pos);
    std::string_view const raw =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    std::string_view const item = trim(raw);
    if (item.empty()) return "empty item (a stray comma?)";
    std::size_t const eq = item.find('=');
    if (eq == std::string_view::npos && item == "on-demand") {
      if (r.on_demand) return "'on-demand' is given twice";
      r.on_demand = true;
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
      continue;
    }
    if (eq == std::string_view::npos) {
      return "item " + quote_value(item) + " is not key=value (or on-demand)";
    }
    std::string_view const key = trim(item.substr(0, eq));
    std::string_view const value = trim(item.substr(eq + 1));
    std::size_t k = 0;
    while (k < keys.size() && keys[k] != key) ++k;
    if (k == keys.size()) {
      return "unknown key " + quote_value(key) +
             " (known: wait, warmup, active, repeat, skip_first)";
    }
    if (seen[k]) return "key " + quote_value(key) + " is given twice";
    seen[k] = true;
    std::int64_t* const fields[] = {&r.wait, &r.warmup, &r.active, &r.repeat, &r.skip_first};
    std::string err = parse_schedule_count(value, key, *fields[k]);
    if (!err.empty()) return err;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (!seen[2]) return "'active' is missing (how many steps to capture)";
  if (r.on_demand && (seen[0] || seen[3])) {
    return "on-demand captures only when asked: give warmup and active, not wait or repeat";
  }
  if (r.active == 0) return "active=0 captures nothing (write \"off\" to switch capture off)";
  out = r;
  return {};
}

NSIGHTKIT_DETAIL_ENTRY std::string schedule_error(ParsedSchedule const& s) {
  struct Field {
    char const* name;
    std::int64_t value;
  };
  for (Field const f : {Field{"wait", s.wait}, Field{"warmup", s.warmup}, Field{"active", s.active},
                        Field{"repeat", s.repeat}, Field{"skip_first", s.skip_first}}) {
    if (f.value < 0) {
      return std::string{f.name} + " must not be negative (got " + std::to_string(f.value) + ")";
    }
  }
  if (s.active < 1) return "active must be at least 1 (got 0): such a window captures nothing";
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  if (s.wait > max - s.warmup || s.wait + s.warmup > max - s.active) {
    return "wait + warmup + active overflows a 64-bit step count";
  }
  return {};
}

NSIGHTKIT_DETAIL_ENTRY std::optional<ParsedSchedule> parse_schedule(std::string_view text,
                                                                    std::string* error) {
  ParsedSchedule p;
  std::string err = parse_schedule_text(text, p);
  if (err.empty()) err = schedule_error(p);
  if (!err.empty()) {
    if (error != nullptr) *error = std::move(err);
    return std::nullopt;
  }
  return p;
}

}  // namespace detail::capture

NSIGHTKIT_DETAIL_MEMBER std::string CaptureSchedule::validation_error() const {
  return detail::capture::schedule_error({wait, warmup, active, repeat, skip_first, on_demand});
}

NSIGHTKIT_DETAIL_MEMBER std::optional<CaptureSchedule> CaptureSchedule::parse(std::string_view text,
                                                                              std::string* error) {
  std::optional<detail::capture::ParsedSchedule> const p =
      detail::capture::parse_schedule(text, error);
  if (!p) return std::nullopt;
  return CaptureSchedule{p->wait, p->warmup, p->active, p->repeat, p->skip_first, p->on_demand};
}

NSIGHTKIT_DETAIL_END_NAMESPACE
