// Writes the command tests' inputs and what the library makes of them in process:
//   DIR/crafted.json        the summary of nsk_command_test::crafted()
//   DIR/crafted.table.txt   its table (table.hpp), DIR/crafted.threads.txt with every thread's rows
//   DIR/crafted.html        its page (html.hpp)
//   DIR/ranks/s.rankN.json  the summaries of a run of four ranks
//   DIR/ranks.table.txt, ranks.gpu.txt, ranks.json, ranks.csv
//                           the MPI component's merge of those ranks (merge*.hpp), as rank 0
//                           writes it: the default table, the GPU table (--gpu --per-rank
//                           --sort excess), the merged summary and CSV
// test_command.py runs `nsightkit stats/html/merge` on the inputs and compares.
#include "crafted.hpp"

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/mpi/merge.hpp>
#include <nsightkit/detail/mpi/merge_json.hpp>
#include <nsightkit/detail/mpi/merge_text.hpp>
#include <nsightkit/detail/report/output/html.hpp>
#include <nsightkit/detail/report/output/summary.hpp>
#include <nsightkit/detail/report/output/table.hpp>
#include <nsightkit/mpi_types.hpp>

#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

namespace rep = nsightkit::detail::report;
namespace mpi = nsightkit::detail::mpi;

bool write(std::string const& path, std::string const& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    return false;
  }
  bool const ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: command_fixtures DIR\n");
    return 2;
  }
  std::string const dir = argv[1];
  ::mkdir(dir.c_str(), 0755);
  ::mkdir((dir + "/ranks").c_str(), 0755);
  bool ok = true;

  nsightkit::ReportSnapshot const s = nsk_command_test::crafted();
  ok = ok && write(dir + "/crafted.json", rep::summary_json(s));
  ok = ok && write(dir + "/crafted.table.txt", rep::format_table(s, false));
  ok = ok && write(dir + "/crafted.threads.txt", rep::format_table(s, true));
  rep::TextSink page;
  rep::write_html(page, s);
  ok = ok && write(dir + "/crafted.html", page.buffer());

  std::vector<nsightkit::ReportSnapshot> ranks;
  for (int r = 0; r < 4; ++r) ranks.push_back(nsk_command_test::rank_snapshot(r));
  std::vector<mpi::RankReport> reports;
  for (int r = 0; r < 4; ++r) {
    std::string const file = fmt::format("{}/ranks/s.rank{}.json", dir, r);
    ok = ok && write(file, rep::summary_json(ranks[static_cast<std::size_t>(r)]));
    mpi::RankReport rr = mpi::rank_report(ranks[static_cast<std::size_t>(r)], r);
    rr.version = nsightkit::version_string;
    rr.summary_file = file;
    reports.push_back(std::move(rr));
  }
  mpi::MergedView v;
  for (mpi::RankReport const& r : reports) v.ranks.push_back(&r);
  mpi::merge_rows(v);
  mpi::TextOptions o = mpi::text_options(nsightkit::mpi::MergeOptions{});
  ok = ok && write(dir + "/ranks.table.txt", mpi::format_table(v, o));
  mpi::TextOptions g = o;
  g.basis = mpi::Basis::gpu;
  g.per_rank = true;
  g.order = mpi::Order::excess;
  ok = ok && write(dir + "/ranks.gpu.txt", mpi::format_table(v, g));
  rep::TextSink json;
  mpi::merged_json(json, v, o, {},
                   fmt::format("nsightkit merge (nsightkit {})", nsightkit::version_string));
  ok = ok && write(dir + "/ranks.json", json.buffer());
  rep::TextSink csv;
  mpi::merged_csv(csv, v);
  ok = ok && write(dir + "/ranks.csv", csv.buffer());
  return ok ? 0 : 1;
}
