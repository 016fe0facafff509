// Reading the report's saved files (report_file.hpp), with nlohmann-json. Checks follow what the
// report writes (docs/report.md): a documented field that is missing reads as its default where
// nothing depends on it, fields this version does not know are ignored, and every problem is
// one message naming the file and the place in it.
#include "report_file.hpp"

#include <nsightkit/detail/report/output/file.hpp>
#include <nsightkit/detail/text.hpp>

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>
#include <utility>

namespace nsightkit_command {
namespace {

using Json = nlohmann::ordered_json;
namespace nsk = nsightkit;

constexpr char summary_format[] = "nsightkit-report";
constexpr char merged_format[] = "nsightkit-merged-report";
constexpr std::int64_t summary_version = 1;

[[noreturn]] void fail(std::string const& file, std::string const& problem) {
  throw InputError(file + ": " + problem);
}

/// A value as a message shows it: its JSON, printable and short.
std::string shown(Json const& v) {
  std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (nsk::detail::code_points(text) > 40)
    text = std::string{nsk::detail::prefix_code_points(text, 37)} + "...";
  return nsk::detail::printable(text);
}

/// An object of the document, read field by field; `where` names it in messages.
class Fields {
 public:
  Fields(std::string const& file, Json const& obj, std::string where)
      : file_{file}, obj_{obj}, where_{std::move(where)} {}

  [[nodiscard]] std::string const& where() const noexcept { return where_; }
  [[nodiscard]] std::string const& file() const noexcept { return file_; }

  /// The field, or null when it is absent or null.
  [[nodiscard]] Json const* get(char const* key) const {
    auto const it = obj_.find(key);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }

  [[noreturn]] void bad(char const* key, char const* what) const {
    Json const* v = get(key);
    fail(file_, prefix() + "'" + key + "' must be " + what + ", not " +
                    (v != nullptr ? shown(*v) : std::string{"null"}));
  }

  [[nodiscard]] std::uint64_t u64(
      char const* key, std::uint64_t def = 0,
      std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const {
    Json const* v = get(key);
    if (v == nullptr) return def;
    std::uint64_t out = 0;
    if (v->is_number_unsigned()) {
      out = v->get<std::uint64_t>();
    } else if (v->is_number_integer() && v->get<std::int64_t>() >= 0) {
      out = static_cast<std::uint64_t>(v->get<std::int64_t>());
    } else if (v->is_number_float() && integral(v->get<double>()) && v->get<double>() >= 0 &&
               v->get<double>() < 1.8e19) {
      out = static_cast<std::uint64_t>(v->get<double>());
    } else {
      bad(key, "a non-negative integer");
    }
    if (out > max) bad(key, "a smaller non-negative integer");
    return out;
  }

  [[nodiscard]] std::int64_t i64(char const* key, std::int64_t def = 0) const {
    Json const* v = get(key);
    if (v == nullptr) return def;
    if (v->is_number_integer()) {
      if (v->is_number_unsigned() &&
          v->get<std::uint64_t>() > std::uint64_t{std::numeric_limits<std::int64_t>::max()})
        bad(key, "an integer of 64 bits");
      return v->get<std::int64_t>();
    }
    if (v->is_number_float() && integral(v->get<double>()) && std::abs(v->get<double>()) < 9.2e18)
      return static_cast<std::int64_t>(v->get<double>());
    bad(key, "an integer");
  }

  /// A non-negative integer number of nanoseconds.
  [[nodiscard]] std::int64_t ns(char const* key, std::int64_t def = 0) const {
    std::int64_t const v = i64(key, def);
    if (v < 0) bad(key, "a non-negative integer");
    return v;
  }

  [[nodiscard]] double number(char const* key, double def = 0.0) const {
    Json const* v = get(key);
    if (v == nullptr) return def;
    if (!v->is_number()) bad(key, "a number");
    return v->get<double>();
  }

  [[nodiscard]] bool flag(char const* key, bool def = false) const {
    Json const* v = get(key);
    if (v == nullptr) return def;
    if (!v->is_boolean()) bad(key, "true or false");
    return v->get<bool>();
  }

  [[nodiscard]] std::string text(char const* key, std::string def = {}) const {
    Json const* v = get(key);
    if (v == nullptr) return def;
    if (!v->is_string()) bad(key, "a string");
    return v->get<std::string>();
  }

  /// A list field (absent or null: empty).
  [[nodiscard]] Json const& list(char const* key) const {
    static Json const empty = Json::array();
    Json const* v = get(key);
    if (v == nullptr) return empty;
    if (!v->is_array()) bad(key, "a list");
    return *v;
  }

  /// An object field, or null when absent or null.
  [[nodiscard]] Json const* object(char const* key) const {
    Json const* v = get(key);
    if (v != nullptr && !v->is_object()) bad(key, "an object or null");
    return v;
  }

  /// "where: " (nothing at the top of the document).
  [[nodiscard]] std::string prefix() const { return where_.empty() ? "" : where_ + ": "; }

 private:
  static bool integral(double d) noexcept { return std::isfinite(d) && d == std::floor(d); }

  std::string const& file_;
  Json const& obj_;
  std::string where_;
};

/// `v` as an object's fields; `where` names it.
Fields fields(std::string const& file, Json const& v, std::string const& where) {
  if (!v.is_object()) fail(file, where + " is not an object");
  return Fields{file, v, where};
}

/// Durations: count and total are required, the rest read as 0 where absent. mean_ns is written
/// rounded to 0.1 ns: total / count, which it was computed as, comes back exactly.
nsk::TimeStats time_stats(Fields const& f) {
  if (f.get("count") == nullptr || f.get("total_ns") == nullptr)
    fail(f.file(), f.where() + " needs a non-negative integer 'count' and 'total_ns'");
  nsk::TimeStats t;
  t.count = f.u64("count");
  t.total_ns = f.ns("total_ns");
  double const exact =
      t.count == 0 ? 0.0 : static_cast<double>(t.total_ns) / static_cast<double>(t.count);
  double const written = f.number("mean_ns", exact);
  t.mean_ns = std::abs(written - exact) <= 0.05 + 1e-12 * std::abs(exact) ? exact : written;
  t.min_ns = f.ns("min_ns");
  t.p50_ns = f.ns("p50_ns");
  t.p95_ns = f.ns("p95_ns");
  t.max_ns = f.ns("max_ns");
  t.exact = f.flag("exact", true);
  return t;
}

nsk::CopyStats copy_stats(Fields const& f, char const* key) {
  nsk::CopyStats c;
  Json const* v = f.object(key);
  if (v == nullptr) return c;
  Fields const g{f.file(), *v, f.where() + "." + key};
  c.count = g.u64("count");
  c.bytes = g.u64("bytes");
  c.total_ns = g.ns("total_ns");
  c.pageable = g.u64("pageable");
  return c;
}

nsk::GpuWorkStats work_stats(Fields const& f) {
  constexpr std::uint64_t u32 = std::numeric_limits<std::uint32_t>::max();
  nsk::GpuWorkStats w;
  w.kernels = f.u64("kernels");
  w.self_kernels = f.u64("self_kernels");
  w.kernel_ns = f.ns("kernel_ns");
  w.busy_ns = f.ns("busy_ns");
  w.self_busy_ns = f.ns("self_busy_ns");
  w.span_ns = f.ns("span_ns");
  w.idle_ns = f.ns("idle_ns");
  w.calls_with_work = f.u64("calls_with_work");
  w.streams = static_cast<std::uint32_t>(f.u64("streams", 0, u32));
  if (Json const* v = f.object("launch_latency"))
    w.launch_latency = time_stats(Fields{f.file(), *v, f.where() + ".launch_latency"});
  w.h2d = copy_stats(f, "h2d");
  w.d2h = copy_stats(f, "d2h");
  w.d2d = copy_stats(f, "d2d");
  w.other_copies = copy_stats(f, "other_copies");
  w.memsets = copy_stats(f, "memsets");
  Json const& top = f.list("top_kernels");
  for (std::size_t i = 0; i < top.size(); ++i) {
    Fields const k =
        fields(f.file(), top[i], f.where() + ".top_kernels[" + std::to_string(i) + "]");
    w.top_kernels.push_back(nsk::KernelStats{k.text("name"), k.u64("count"), k.ns("total_ns")});
  }
  w.allocations = f.u64("allocations");
  w.allocated_bytes = f.u64("allocated_bytes");
  w.freed_bytes = f.u64("freed_bytes");
  w.peak_bytes = f.u64("peak_bytes");
  w.sync_calls = f.u64("sync_calls");
  w.sync_ns = f.ns("sync_ns");
  w.sync_api = f.text("sync_api");
  w.legacy_stream_work = f.u64("legacy_stream_work");
  w.delegated_kernels = f.u64("delegated_kernels");
  w.delegated_kernel_ns = f.ns("delegated_kernel_ns");
  return w;
}

/// An unambiguous text of a path's components (lengths before the parts).
void append_key(std::string& key, std::string const& domain, std::string const& name) {
  key += std::to_string(domain.size()) + ':' + domain + std::to_string(name.size()) + ':' + name;
}

/// Rows in tree order (a parent before its children) appended to `out`: parents are indices into
/// `out`, as the snapshot has them. Rows without self_ns get total minus their children's totals.
void read_rows(std::string const& file, Json const& list, std::string const& where,
               std::uint32_t thread, std::vector<nsk::PathStats>& out) {
  if (!list.is_array()) fail(file, "'" + where + "' is not a list");
  std::size_t const first = out.size();
  std::vector<std::size_t> stack;
  std::vector<std::string> keys;
  std::set<std::string> seen;
  std::vector<bool> has_self;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string at = where + "[" + std::to_string(i) + "]";
    Fields const f = fields(file, list[i], at);
    Json const* name = f.get("name");
    Json const* depth = f.get("depth");
    if (name == nullptr || !name->is_string() || depth == nullptr)
      fail(file, at + " needs a string 'name' and an integer 'depth'");
    nsk::PathStats row;
    row.name = name->get<std::string>();
    row.domain = f.text("domain", "nsightkit");
    row.depth = static_cast<std::size_t>(f.u64("depth"));
    std::string const label = nsk::detail::printable(f.text("path", row.name));
    if (row.depth > stack.size()) {
      fail(file, at + " ('" + label + "') has depth " + std::to_string(row.depth) +
                     " but no parent before it (rows must be in tree order)");
    }
    stack.resize(row.depth);
    keys.resize(row.depth);
    std::string key = keys.empty() ? std::string{} : keys.back();
    append_key(key, row.domain, row.name);
    if (!seen.insert(key).second) fail(file, at + ": path '" + label + "' appears twice");
    row.parent = stack.empty() ? static_cast<std::size_t>(-1) : stack.back();
    // Written by every report; a crafted file without it gets the parent's path and the name.
    row.path = f.get("path") != nullptr ? f.text("path")
               : stack.empty()          ? row.name
                                        : out[stack.back()].path + "/" + row.name;
    row.thread = thread;
    Fields const at_row{file, list[i], at + " ('" + label + "')"};
    row.cpu = time_stats(at_row);
    has_self.push_back(f.get("self_ns") != nullptr);
    row.self_ns = at_row.ns("self_ns");
    if (Json const* gpu = at_row.object("gpu"))
      row.gpu = time_stats(Fields{file, *gpu, at + ".gpu"});
    if (Json const* work = at_row.object("gpu_work")) {
      // Every use of a row's GPU work starts from its busy time.
      if (work->find("busy_ns") == work->end())
        fail(file, at + " ('" + label + "'): gpu_work has no 'busy_ns'");
      row.work = work_stats(Fields{file, *work, at + ".gpu_work"});
    }
    stack.push_back(out.size());
    keys.push_back(std::move(key));
    out.push_back(std::move(row));
  }
  for (std::size_t i = first; i < out.size(); ++i) {
    if (has_self[i - first]) continue;
    std::int64_t children = 0;
    for (std::size_t k = i + 1; k < out.size() && out[k].depth > out[i].depth; ++k) {
      if (out[k].parent == i) children += out[k].cpu.total_ns;
    }
    out[i].self_ns = std::max<std::int64_t>(0, out[i].cpu.total_ns - children);
  }
}

nsk::ReportSnapshot snapshot_from(std::string const& file, Json const& doc,
                                  std::string& nsightkit_version) {
  constexpr std::uint64_t u32 = std::numeric_limits<std::uint32_t>::max();
  Fields const top{file, doc, ""};
  Json const* version = top.get("version");
  if (version == nullptr || !version->is_number_integer() ||
      version->get<std::int64_t>() != summary_version) {
    fail(file, std::string{summary_format} + " version " +
                   (version != nullptr ? shown(*version) : std::string{"(none)"}) +
                   " is not one this reader understands (1); read it with the nsightkit that "
                   "wrote it");
  }
  for (char const* key : {"rank", "pid", "run_ns", "paths"}) {
    if (doc.find(key) == doc.end())
      fail(file, std::string{summary_format} + " without '" + key + "'");
  }
  nsk::ReportSnapshot s;
  nsightkit_version = top.text("nsightkit_version");
  if (Json const* rank = top.get("rank")) {
    if (!rank->is_number_integer() || rank->get<std::int64_t>() < 0 ||
        rank->get<std::int64_t>() > std::numeric_limits<int>::max())
      fail(file, "'rank' must be a non-negative integer or null, not " + shown(*rank));
    s.rank = static_cast<int>(rank->get<std::int64_t>());
  }
  if (top.get("pid") == nullptr) fail(file, "'pid' must be a non-negative integer, not null");
  s.pid = static_cast<long>(top.u64("pid", 0, std::numeric_limits<long>::max()));
  s.forked_from = static_cast<long>(top.i64("forked_from"));
  s.run_ns = top.ns("run_ns");
  s.captured_only = top.flag("captured_only");
  if (top.get("paths") == nullptr) fail(file, "'paths' must be a list, not null");
  read_rows(file, *top.get("paths"), "paths", 0, s.paths);
  Json const& threads = top.list("threads");
  for (std::size_t i = 0; i < threads.size(); ++i) {
    std::string const at = "threads[" + std::to_string(i) + "]";
    Fields const t = fields(file, threads[i], at);
    if (t.get("tid") == nullptr) fail(file, at + " needs an integer 'tid'");
    nsk::ThreadStats info;
    info.id = static_cast<std::uint32_t>(t.u64("tid", 0, u32));
    info.name = t.text("name");
    info.exited = t.flag("exited");
    info.ranges = t.u64("ranges");
    info.trace_dropped = t.u64("trace_events_dropped");
    info.paths_over_limit = t.u64("paths_over_limit");
    info.depth_over_limit = t.u64("depth_over_limit");
    info.marks_over_limit = t.u64("marks_over_limit");
    read_rows(file, t.list("paths"), at + ".paths", info.id, s.thread_paths);
    s.threads.push_back(std::move(info));
  }
  if (Json const* steps = top.object("steps")) s.steps = time_stats(Fields{file, *steps, "steps"});
  Json const& series = top.list("step_series");
  for (std::size_t i = 0; i < series.size(); ++i) {
    Json const& p = series[i];
    bool ok = p.is_array() && p.size() == 4;
    for (std::size_t k = 0; ok && k < 4; ++k) ok = p[k].is_number_integer();
    if (!ok || p[1].get<std::int64_t>() < 0 || p[2].get<std::int64_t>() < 0 ||
        p[3].get<std::int64_t>() < 0)
      fail(file, "step_series[" + std::to_string(i) +
                     "] must be [start_ns, steps, total_ns, max_ns] (integers), not " + shown(p));
    s.step_series.push_back(nsk::StepPoint{p[0].get<std::int64_t>(), p[1].get<std::uint64_t>(),
                                           p[2].get<std::int64_t>(), p[3].get<std::int64_t>()});
  }
  Json const& se = top.list("start_end_ranges");
  for (std::size_t i = 0; i < se.size(); ++i) {
    std::string const at = "start_end_ranges[" + std::to_string(i) + "]";
    Fields const f = fields(file, se[i], at);
    Json const* time = f.get("time");
    if (f.get("name") == nullptr || time == nullptr)
      fail(file, at + " needs a string 'name' and an object 'time'");
    s.start_end.push_back(nsk::NamedStats{f.text("name"), f.text("domain", "nsightkit"),
                                          time_stats(fields(file, *time, at + ".time"))});
  }
  Json const& marks = top.list("marks");
  for (std::size_t i = 0; i < marks.size(); ++i) {
    std::string const at = "marks[" + std::to_string(i) + "]";
    Fields const f = fields(file, marks[i], at);
    if (f.get("name") == nullptr || f.get("count") == nullptr)
      fail(file, at + " needs a string 'name' and an integer 'count'");
    s.marks.push_back(
        nsk::MarkStats{f.text("name"), f.text("domain", "nsightkit"), f.u64("count")});
  }
  if (Json const* gpu = top.object("gpu")) {
    Fields const g{file, *gpu, "gpu"};
    nsk::GpuTimingStats& t = s.gpu;
    t.ranges_timed = g.u64("ranges_timed");
    t.ranges_pending = g.u64("ranges_pending");
    t.ranges_skipped = g.u64("ranges_skipped");
    t.events_created = g.u64("events_created");
    t.error = g.text("error");
    t.source = g.text("source");
    t.note = g.text("note");
    t.records = g.u64("records");
    t.records_dropped = g.u64("records_dropped");
    t.records_unattributed = g.u64("records_unattributed");
    t.records_late = g.u64("records_late");
    t.records_delegated = g.u64("records_delegated");
    Json const& devices = g.list("devices");
    for (std::size_t i = 0; i < devices.size(); ++i) {
      Fields const d = fields(file, devices[i], "gpu.devices[" + std::to_string(i) + "]");
      nsk::GpuDeviceStats dev;
      dev.device = static_cast<std::uint32_t>(d.u64("device", 0, u32));
      dev.kernels = d.u64("kernels");
      dev.copies = d.u64("copies");
      dev.busy_ns = d.ns("busy_ns");
      dev.span_ns = d.ns("span_ns");
      dev.kernel_busy_ns = d.ns("kernel_busy_ns");
      dev.copy_busy_ns = d.ns("copy_busy_ns");
      dev.copy_overlap_ns = d.ns("copy_overlap_ns");
      t.devices.push_back(dev);
    }
    Json const& streams = g.list("streams");
    for (std::size_t i = 0; i < streams.size(); ++i) {
      Fields const d = fields(file, streams[i], "gpu.streams[" + std::to_string(i) + "]");
      nsk::GpuStreamStats st;
      st.device = static_cast<std::uint32_t>(d.u64("device", 0, u32));
      st.stream = static_cast<std::uint32_t>(d.u64("stream", 0, u32));
      st.kernels = d.u64("kernels");
      st.copies = d.u64("copies");
      st.busy_ns = d.ns("busy_ns");
      st.name = d.text("name");
      t.streams.push_back(st);
    }
  }
  Json const& advice = top.list("advice");
  for (std::size_t i = 0; i < advice.size(); ++i) {
    std::string const at = "advice[" + std::to_string(i) + "]";
    Fields const f = fields(file, advice[i], at);
    nsk::Advice a;
    a.rule = f.text("rule");
    a.severity = f.text("severity");
    Json const& paths = f.list("paths");
    for (std::size_t k = 0; k < paths.size(); ++k) {
      if (!paths[k].is_string())
        fail(file, at + ".paths[" + std::to_string(k) + "] is not a string");
      a.paths.push_back(paths[k].get<std::string>());
    }
    a.evidence = f.text("evidence");
    a.cost_ns = f.i64("cost_ns");
    a.suggestion = f.text("suggestion");
    s.advice.push_back(std::move(a));
  }
  Json const& missing = top.list("advice_missing");
  for (std::size_t i = 0; i < missing.size(); ++i) {
    if (!missing[i].is_string())
      fail(file, "advice_missing[" + std::to_string(i) + "] is not a string");
    s.advice_missing.push_back(missing[i].get<std::string>());
  }
  return s;
}

/// Whether a trace's producer says the merge wrote it (merges before `nsightkit merge` named
/// themselves otherwise; their otherData has the merged trace's "ranks" and "aligned").
bool merged_trace(std::string const& producer, Json const& other) {
  return producer.rfind("nsightkit merge", 0) == 0 ||
         (other.contains("ranks") && other.contains("aligned"));
}

/// Parses `text`; a parse error becomes one message saying whether the file looks cut short.
Json parse(std::string const& file, std::string const& text, Json::parser_callback_t cb) {
  std::size_t const start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) fail(file, "empty file (did the process die before writing it?)");
  try {
    return Json::parse(text, std::move(cb));
  } catch (Json::parse_error const& e) {
    std::string what = e.what();
    std::size_t const cut = what.find("] ");
    if (cut != std::string::npos) what.erase(0, cut + 2);
    std::size_t const at = std::min<std::size_t>(e.byte, text.size());
    for (std::size_t i = 0; i < at;) {
      std::size_t const n = nsk::detail::utf8_sequence(text, i);
      if (n == 0) {
        fail(file, "not UTF-8 text (byte " + std::to_string(i) + " is no UTF-8): not a JSON file");
      }
      i += n;
    }
    if (e.byte >= text.size() && (text[start] == '{' || text[start] == '[')) {
      fail(file, "broken JSON (" + nsk::detail::printable(what) +
                     "): cut short by a process that died while writing it?");
    }
    fail(file, "not JSON (" + nsk::detail::printable(what) + ")");
  }
}

}  // namespace

std::string read_text(std::string const& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail(path, "a directory, not a file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fail(path, std::string{"cannot read: "} + std::strerror(errno));
  std::string data;
  char buf[1 << 16];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) != 0) data.append(buf, n);
  int const error = std::ferror(f) != 0 ? errno : 0;
  std::fclose(f);
  if (error != 0) fail(path, std::string{"cannot read: "} + std::strerror(error));
  if (data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
      static_cast<unsigned char>(data[1]) == 0x8b) {
    namespace gz = nsk::detail::report::gzip;
    if (gz::api().unavailable != nullptr)
      fail(path, std::string{"gzip-compressed, and "} + gz::api().unavailable);
    std::string text;
    if (!gz::inflate_members(data, text))
      fail(path, "gzip stream cut short or broken: did the process die while writing it?");
    return text;
  }
  return data;
}

ReportFile read_report_file(std::string const& path) {
  std::string const text = read_text(path);
  ReportFile out;
  // Trace events are taken out while parsing (one compact line each), so that a large trace is
  // never held as a document.
  std::string top_key;
  bool in_events = false, saw_events = false;
  std::size_t index = 0;
  std::string event_problem;
  auto on_event = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth == 1 && event == Json::parse_event_t::key) {
      top_key = parsed.get<std::string>();
    } else if (depth == 1 && event == Json::parse_event_t::array_start) {
      in_events = top_key == "traceEvents";
      saw_events = saw_events || in_events;
    } else if (depth == 1 && event == Json::parse_event_t::array_end) {
      in_events = false;
    } else if (in_events && depth == 2 &&
               (event == Json::parse_event_t::object_end ||
                event == Json::parse_event_t::array_end || event == Json::parse_event_t::value)) {
      std::string const at = "traceEvents[" + std::to_string(index++) + "]";
      auto const ph = parsed.is_object() ? parsed.find("ph") : parsed.end();
      if (ph == parsed.end() || !ph->is_string()) {
        if (event_problem.empty()) event_problem = at + " is not an event object with a 'ph'";
        return false;
      }
      auto const name = parsed.find("name");
      std::string const n =
          name != parsed.end() && name->is_string() ? name->get<std::string>() : "";
      auto const ts = parsed.find("ts");
      if (*ph != "M" && (ts == parsed.end() || !ts->is_number()) && event_problem.empty())
        event_problem = at + " ('" + nsk::detail::printable(n) + "') has no numeric 'ts'";
      TraceMeta meta = TraceMeta::none;
      if (*ph == "M" && n == "process_name") meta = TraceMeta::process_name;
      if (*ph == "M" && n == "process_sort_index") meta = TraceMeta::process_sort_index;
      out.trace.events.push_back(
          TraceEvent{parsed.dump(-1, ' ', false, Json::error_handler_t::replace), meta});
      return false;
    }
    return true;
  };
  Json const doc = parse(path, text, on_event);
  if (!doc.is_object()) return out;
  auto const format = doc.find("format");
  if (format != doc.end() && *format == summary_format) {
    out.kind = FileKind::summary;
    out.summary.file = path;
    out.summary.snapshot = snapshot_from(path, doc, out.summary.nsightkit_version);
    out.trace = SavedTrace{};
    return out;
  }
  if (format != doc.end() && *format == merged_format) {
    out.kind = FileKind::merged;
    return out;
  }
  auto const other = doc.find("otherData");
  if (!saw_events || other == doc.end() || !other->is_object()) return out;
  auto const producer = other->find("producer");
  if (producer == other->end() || !producer->is_string()) return out;
  std::string const prod = producer->get<std::string>();
  if (merged_trace(prod, *other)) {
    out.kind = FileKind::merged;
    return out;
  }
  if (prod.rfind("nsightkit ", 0) != 0) return out;
  out.kind = FileKind::trace;
  if (!event_problem.empty()) fail(path, event_problem);
  Fields const f{path, *other, "otherData"};
  SavedTrace& t = out.trace;
  t.file = path;
  t.nsightkit_version = prod.substr(10);
  if (Json const* rank = f.get("rank")) {
    if (!rank->is_number_integer() || rank->get<std::int64_t>() < 0 ||
        rank->get<std::int64_t>() > std::numeric_limits<int>::max())
      fail(path, "otherData.rank must be a non-negative integer or null, not " + shown(*rank));
    t.rank = static_cast<int>(rank->get<std::int64_t>());
  }
  if (f.get("pid") != nullptr) t.pid = static_cast<long>(f.i64("pid"));
  if (Json const* clock = f.get("clock"); clock != nullptr && clock->is_string())
    t.clock = clock->get<std::string>();
  if (Json const* origin = f.get("time_origin_ns");
      origin != nullptr && origin->is_number_integer())
    t.origin_ns = origin->get<std::int64_t>();
  t.events_dropped = f.u64("events_dropped");
  return out;
}

SavedSummary read_summary(std::string const& path) {
  ReportFile f = read_report_file(path);
  switch (f.kind) {
    case FileKind::summary: return std::move(f.summary);
    case FileKind::trace:
      fail(path, "a trace (trace=...), not a summary: the summary is the file json=... writes");
    case FileKind::merged:
      fail(path, "a merged report (nsightkit merge), not one process's summary");
    case FileKind::other: break;
  }
  fail(path, std::string{"not an nsightkit summary: expected \"format\": \""} + summary_format +
                 "\" (the file NSIGHTKIT_REPORT=json=... writes)");
}

}  // namespace nsightkit_command
