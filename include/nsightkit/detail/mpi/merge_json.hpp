// Internal: the merged report's summary JSON ("format": "nsightkit-merged-report", version 1) and
// CSV, with the statistics of both bases (CPU and GPU time) and every rank's numbers; what rank 0
// writes under MPI and `nsightkit merge --json/--csv` writes. The table and the number formats
// are in merge_text.hpp.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/json.hpp>
#include <nsightkit/detail/mpi/merge.hpp>
#include <nsightkit/detail/mpi/merge_text.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>
#include <nsightkit/detail/text.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::mpi {

// ---------------------------------------------------------------------------------------------
// JSON

/// Opens an object with a spread's fields; the caller adds more and closes it.
inline void json_spread(std::string& out, Spread const& st) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"min_ns\":{},\"median_ns\":{},\"max_ns\":{},\"slowest_rank\":{},"
                 "\"fastest_rank\":{},\"others_median_ns\":{},\"excess_ns\":{},\"excess\":{}",
                 num(st.min_ns), num(st.median_ns), num(st.max_ns), st.slowest, st.fastest,
                 st.has_others ? num(st.others_median_ns) : "null",
                 st.has_others ? num(st.excess_ns) : "null",
                 st.has_others && st.has_excess ? flt(st.excess) : "null");
}

/// A GPU source as a JSON string, or null for none.
inline void json_source(std::string& out, GpuFrom g) {
  if (g == GpuFrom::none) {
    out += "null";
  } else {
    json_string(out, to_string(g));
  }
}

inline void json_stats(std::string& out, Merged const& m, Basis basis) {
  auto const st = m.stats(basis);
  if (!st) {
    out += "null";
    return;
  }
  json_spread(out, *st);
  auto const mean = m.mean_per_call(basis);
  out += ",\"mean_per_call_ns\":";
  out += mean ? flt(*mean) : "null";
  if (basis == Basis::gpu) {
    out += ",\"source\":";
    json_source(out, m.gpu_from());
  }
  out += ",\"per_rank\":[";
  auto const counts = m.counts(basis);
  bool first = true;
  for (auto const& [r, t] : m.per_rank(basis)) {
    fmt::format_to(std::back_inserter(out), "{}{{\"rank\":{},\"count\":{},\"total_ns\":{}}}",
                   first ? "" : ",", r, counts.at(r), num(t));
    first = false;
  }
  out += "]}";
}

inline void json_int_list(std::string& out, std::vector<int> const& v) {
  out += '[';
  for (std::size_t i = 0; i < v.size(); ++i) out += (i == 0 ? "" : ",") + std::to_string(v[i]);
  out += ']';
}

inline void json_merged_row(std::string& out, Merged const& m, std::vector<int> const& all_ranks) {
  out += "{\"section\":";
  json_string(out, to_string(m.section));
  out += ",\"path\":";
  json_string(out, m.path);
  fmt::format_to(std::back_inserter(out), ",\"depth\":{},\"components\":", m.depth);
  if (m.section == Section::paths) {
    out += '[';
    for (std::size_t i = 0; i < m.key.size(); ++i) {
      out += i == 0 ? "[" : ",[";
      json_string(out, m.key[i].domain);
      out += ',';
      json_string(out, m.key[i].name);
      out += ']';
    }
    out += ']';
  } else {
    out += "null";
  }
  std::vector<int> present, missing;
  for (int r : all_ranks) (m.ranks.count(r) != 0 ? present : missing).push_back(r);
  out += ",\"ranks_present\":";
  json_int_list(out, present);
  out += ",\"ranks_missing\":";
  json_int_list(out, missing);
  out += ",\"cpu\":";
  json_stats(out, m, Basis::cpu);
  out += ",\"gpu\":";
  json_stats(out, m, Basis::gpu);
  out += '}';
}

inline void json_stragglers(std::string& out, Stragglers const& s) {
  out += "{\"findings\":[";
  for (std::size_t i = 0; i < s.findings.size(); ++i) {
    Finding const& f = s.findings[i];
    fmt::format_to(std::back_inserter(out), "{}\n  {{\"rank\":{},\"section\":", i == 0 ? "" : ",",
                   f.rank);
    json_string(out, to_string(f.section));
    out += ",\"path\":";
    json_string(out, f.path);
    fmt::format_to(std::back_inserter(out),
                   ",\"depth\":{},\"total_ns\":{},\"others_median_ns\":{},\"excess_ns\":{},"
                   "\"excess\":{},\"waiting_excluded_ns\":{},\"share\":{},\"ranks_compared\":{}}}",
                   f.depth, num(f.total_ns), num(f.others_median_ns), num(f.excess_ns),
                   f.has_excess ? flt(f.excess) : "null", num(f.waiting_excluded_ns), flt(f.share),
                   f.ranks_compared);
  }
  fmt::format_to(std::back_inserter(out), "],\"judged_paths\":{},\"slowest_rank_counts\":[",
                 s.judged);
  bool first = true;
  for (auto const& [r, n] : s.slowest_counts) {
    fmt::format_to(std::back_inserter(out), "{}{{\"rank\":{},\"paths\":{}}}", first ? "" : ",", r,
                   n);
    first = false;
  }
  out += "],\"collectives\":[";
  for (std::size_t i = 0; i < s.collectives.size(); ++i) {
    if (i != 0) out += ',';
    json_string(out, s.collectives[i]->path);
  }
  out += "]}";
}

inline void json_collective_time(std::string& out, MergedView const& v, Basis basis,
                                 Thresholds const& th) {
  auto const ct = collective_time(v.tree, basis, th);
  if (!ct) {
    out += "null";
    return;
  }
  out += '[';
  for (std::size_t i = 0; i < v.ranks.size(); ++i) {
    RankReport const* s = v.ranks[i];
    auto const it = ct->find(s->rank);
    double const t = it != ct->end() ? it->second : 0.0;
    fmt::format_to(std::back_inserter(out), "{}{{\"rank\":{},\"total_ns\":{},\"share\":{}}}",
                   i == 0 ? "" : ",", s->rank, num(t),
                   s->run_ns > 0 ? flt(t / static_cast<double>(s->run_ns)) : "null");
  }
  out += ']';
}

/// The merged summary (format "nsightkit-merged-report", version 1).
inline void merged_json(report::TextSink& sink, MergedView const& v, TextOptions const& o,
                        std::vector<Message> const& messages, std::string const& producer) {
  std::string& out = sink.buffer();
  std::vector<int> const all_ranks = v.rank_numbers();
  Thresholds const& th = o.thresholds;
  out += "{\"format\":\"nsightkit-merged-report\",\"version\":1,\"producer\":";
  json_string(out, producer);
  out += ",\n\"ranks\":[";
  for (std::size_t i = 0; i < v.ranks.size(); ++i) {
    RankReport const* s = v.ranks[i];
    fmt::format_to(std::back_inserter(out),
                   "{}\n {{\"rank\":{},\"rank_assigned\":{},\"file\":", i == 0 ? "" : ",", s->rank,
                   s->rank_assigned ? "true" : "false");
    if (s->summary_file.empty()) {
      out += "null";
    } else {
      json_string(out, s->summary_file);
    }
    fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"nsightkit_version\":", s->pid);
    json_string(out, s->version);
    fmt::format_to(std::back_inserter(out),
                   ",\"run_ns\":{},\"captured_only\":{},\"gpu_source\":", s->run_ns,
                   s->captured_only ? "true" : "false");
    json_source(out, gpu_from(*s));
    out += '}';
  }
  out += "],\n\"run_ns\":";
  if (v.ranks.empty()) {
    out += "null";
  } else {
    json_spread(out, run_spread(v));
    out += '}';
  }
  fmt::format_to(std::back_inserter(out),
                 ",\n\"thresholds\":{{\"min_excess_pct\":{},\"min_excess_ms\":{},"
                 "\"min_share_pct\":{},\"collective_patterns\":[",
                 flt(th.excess * 100), flt(th.excess_ns / 1e6), flt(th.share * 100));
  for (std::size_t i = 0; i < th.collectives.size(); ++i) {
    if (i != 0) out += ',';
    json_string(out, th.collectives[i]);
  }
  out += "]},\n\"paths\":[";
  for (std::size_t i = 0; i < v.tree.size(); ++i) {
    out += i == 0 ? "\n " : ",\n ";
    json_merged_row(out, *v.tree[i], all_ranks);
    sink.maybe_flush();
  }
  out += "],\n\"steps\":";
  if (v.steps != nullptr) {
    json_merged_row(out, *v.steps, all_ranks);
  } else {
    out += "null";
  }
  out += ",\n\"start_end_ranges\":[";
  for (std::size_t i = 0; i < v.start_end.size(); ++i) {
    out += i == 0 ? "\n " : ",\n ";
    json_merged_row(out, *v.start_end[i], all_ranks);
  }
  out += "],\n\"marks\":[";
  std::vector<std::pair<Component, std::vector<std::pair<int, std::uint64_t>>>> marks;
  for (RankReport const* s : v.ranks) {
    for (RankMark const& mk : s->marks) {
      auto it = std::find_if(marks.begin(), marks.end(), [&](auto const& e) {
        return e.first.domain == mk.domain && e.first.name == mk.name;
      });
      if (it == marks.end()) it = marks.insert(marks.end(), {Component{mk.domain, mk.name}, {}});
      it->second.emplace_back(s->rank, mk.count);
    }
  }
  for (std::size_t i = 0; i < marks.size(); ++i) {
    out += i == 0 ? "\n {\"domain\":" : ",\n {\"domain\":";
    json_string(out, marks[i].first.domain);
    out += ",\"name\":";
    json_string(out, marks[i].first.name);
    out += ",\"per_rank\":[";
    for (std::size_t j = 0; j < marks[i].second.size(); ++j) {
      fmt::format_to(std::back_inserter(out), "{}{{\"rank\":{},\"count\":{}}}", j == 0 ? "" : ",",
                     marks[i].second[j].first, marks[i].second[j].second);
    }
    out += "]}";
  }
  out += "],\n\"stragglers\":{";
  double const run_median = run_spread(v).median_ns;
  for (Basis basis : {Basis::cpu, Basis::gpu}) {
    out += basis == Basis::cpu ? "\"cpu\":" : ",\n\"gpu\":";
    json_stragglers(out, find_stragglers(judged_rows(v, basis), basis, run_median, th));
  }
  out += "},\n\"collective_time\":{\"cpu\":";
  json_collective_time(out, v, Basis::cpu, th);
  out += ",\"gpu\":";
  json_collective_time(out, v, Basis::gpu, th);
  out += "},\n\"messages\":[";
  for (std::size_t i = 0; i < messages.size(); ++i) {
    out += i == 0 ? "\n {\"level\":" : ",\n {\"level\":";
    json_string(out, messages[i].level);
    out += ",\"text\":";
    json_string(out, messages[i].text);
    out += '}';
  }
  out += "]}\n";
  sink.flush();
}

// ---------------------------------------------------------------------------------------------
// CSV

/// A CSV field quoted where it must be (a comma, a quote, a line break).
inline void csv_field(std::string& out, std::string const& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) {
    out += s;
    return;
  }
  out += '"';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

/// One row per path (then the steps and the start/end ranges): statistics for both bases, the
/// source of the GPU numbers, then each rank's CPU and GPU totals and counts.
inline void merged_csv(report::TextSink& sink, MergedView const& v) {
  std::string& out = sink.buffer();
  std::vector<int> const all_ranks = v.rank_numbers();
  static constexpr char const* stats[] = {
      "min_ns", "median_ns", "max_ns", "slowest_rank", "excess_ns", "excess", "mean_per_call_ns"};
  out += "section,path,depth,ranks_present,ranks_missing";
  for (char const* basis : {"cpu", "gpu"}) {
    for (char const* k : stats) fmt::format_to(std::back_inserter(out), ",{}_{}", basis, k);
  }
  out += ",gpu_source";
  for (char const* basis : {"cpu", "gpu"}) {
    for (int r : all_ranks)
      fmt::format_to(std::back_inserter(out), ",{}_total_ns_rank{}", basis, r);
  }
  for (int r : all_ranks) fmt::format_to(std::back_inserter(out), ",count_rank{}", r);
  out += '\n';
  std::vector<Merged const*> rows = v.tree;
  if (v.steps != nullptr) rows.push_back(v.steps);
  rows.insert(rows.end(), v.start_end.begin(), v.start_end.end());
  for (Merged const* m : rows) {
    out += to_string(m->section);
    out += ',';
    csv_field(out, m->path);
    std::string missing;
    for (int r : all_ranks) {
      if (m->ranks.count(r) == 0) missing += (missing.empty() ? "" : " ") + std::to_string(r);
    }
    fmt::format_to(std::back_inserter(out), ",{},{},{}", m->depth, m->ranks.size(), missing);
    for (Basis basis : {Basis::cpu, Basis::gpu}) {
      auto const st = m->stats(basis);
      if (!st) {
        out += ",,,,,,,";
        continue;
      }
      auto const mean = m->mean_per_call(basis);
      fmt::format_to(
          std::back_inserter(out), ",{},{},{},{},{},{},{}", num(st->min_ns), num(st->median_ns),
          num(st->max_ns), st->slowest, st->has_others ? num(st->excess_ns) : "",
          st->has_others && st->has_excess ? flt(st->excess) : "", mean ? flt(*mean) : "");
    }
    out += ',';
    out += to_string(m->gpu_from());
    for (Basis basis : {Basis::cpu, Basis::gpu}) {
      PerRank const per_rank = m->per_rank(basis);
      for (int r : all_ranks) {
        auto const it = per_rank.find(r);
        out += ',';
        if (it != per_rank.end()) out += num(it->second);
      }
    }
    auto const counts = m->counts(Basis::cpu);
    for (int r : all_ranks) {
      auto const it = counts.find(r);
      out += ',';
      if (it != counts.end()) out += std::to_string(it->second);
    }
    out += '\n';
    sink.maybe_flush();
  }
  sink.flush();
}

}  // namespace detail::mpi
NSIGHTKIT_DETAIL_END_NAMESPACE
