// `nsightkit html`: the report's HTML page from saved summaries, made by the page builder the
// report itself uses (detail/report/output/html.hpp): one run, the ranks of one run, or two runs
// compared; and a page written again from the data inside it (with this nsightkit's page).
#include "arguments.hpp"
#include "command.hpp"
#include "output.hpp"
#include "report_file.hpp"

#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/report/output/html.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace nsightkit_command {
namespace {

namespace nsk = nsightkit;
namespace rep = nsightkit::detail::report;
using Json = nlohmann::ordered_json;

constexpr char help[] =
    R"(usage: nsightkit html REPORT.json [REPORT.json ...] [options]
       nsightkit html REPORT.json --compare BASE.json [options]
       nsightkit html PAGE.html [options]

Makes the report's HTML page (docs/report-html.md) from saved summaries (the JSON that
NSIGHTKIT_REPORT=json=PATH writes), with the code the program uses for its own page (html=PATH):
one self-contained file with an icicle view of the path tree, the sortable and filterable table,
steps over the run and top kernels per module.

  one summary            the page of that run (the page the program itself writes)
  several summaries      the ranks of one run: a per-rank view, all ranks summed, each path's
                         least and most rank
  --compare BASE.json    REPORT against BASE (BASE is "before", REPORT "after"): the difference
                         per path, red where it got slower
  a page (.html)         the page written again from the data inside it (a page of an older
                         nsightkit, which needed a chart library, becomes whole)

options:
  -o, --output PATH      the page to write (default report.html)
  --compare BASE.json    compare REPORT.json with BASE.json
  --labels A,B,...       the runs' names, in the order given (default: "rank N", else the run's
                         process id for one summary and the file's name for several;
                         "before,after" with --compare)
  --title TEXT           the page's title
  -h, --help             this text

The page needs no library and no network: its script draws the charts itself. Exit status: 0
when the page was written; 2 for a bad option or input (the message names the file and the
problem).
)";

std::string base_name(std::string const& path) {
  std::size_t const slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool ends_with(std::string const& s, char const* tail) {
  std::string const t{tail};
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

std::vector<std::string> split_labels(std::string const& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (;;) {
    std::size_t const comma = s.find(',', pos);
    std::string label{nsk::detail::trim(s.substr(pos, comma - pos))};
    out.push_back(std::move(label));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

/// The data of a page nsightkit wrote, as JSON text for a new page (its title set, the note an
/// older page carried about a missing chart library dropped).
std::string data_from_page(std::string const& path, std::string const& title_option,
                           std::string& title) {
  std::string const text = read_text(path);
  constexpr char open[] = "<script id=\"nsk-data\" type=\"application/json\">";
  std::size_t const begin = text.find(open);
  std::size_t const end =
      begin == std::string::npos ? begin : text.find("</script>", begin + sizeof open - 1);
  if (end == std::string::npos)
    throw InputError(path + ": not a page written by nsightkit (no nsk-data element)");
  Json data;
  try {
    data = Json::parse(text.substr(begin + sizeof open - 1, end - begin - (sizeof open - 1)));
  } catch (Json::parse_error const& e) {
    throw InputError(path + ": its data is not valid JSON (" + nsk::detail::printable(e.what()) +
                     ")");
  }
  if (!data.is_object() || data.value("format", Json()) != "nsightkit-page" ||
      data.value("version", Json()) != 1)
    throw InputError(path + ": its data is not an nsightkit page of version 1");
  if (data.contains("runs") && data["runs"].is_array()) {
    for (Json& run : data["runs"]) {
      if (!run.is_object() || !run.contains("notes") || !run["notes"].is_array()) continue;
      Json kept = Json::array();
      for (Json const& n : run["notes"]) {
        if (!(n.is_string() && n.get<std::string>().rfind("the charts' script library", 0) == 0))
          kept.push_back(n);
      }
      run["notes"] = std::move(kept);
    }
  }
  title = !title_option.empty()                                 ? title_option
          : data.contains("title") && data["title"].is_string() ? data["title"].get<std::string>()
                                                                : "nsightkit report";
  data["title"] = title;
  // The data sits in a script element: "<" only occurs inside its strings, where \u003c is the
  // same character.
  std::string json = data.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

int html(Arguments const& a) {
  std::vector<std::string> inputs = a.positionals();
  if (inputs.empty()) throw UsageError("give a summary (REPORT.json), several, or a page");
  std::string const output = a.value("--output", "report.html");
  std::string const title_option = a.value("--title");
  rep::TextSink sink;
  std::size_t paths = 0, runs_written = 0;

  if (inputs.size() == 1 && !a.has("--compare") &&
      (ends_with(inputs[0], ".html") || ends_with(inputs[0], ".htm"))) {
    if (a.has("--labels")) throw UsageError("--labels names summaries; a page has its own");
    std::string title;
    std::string const data = data_from_page(inputs[0], title_option, title);
    rep::write_page(sink, title, [&](rep::TextSink& into) { into.buffer() += data; });
    write_file(output, sink.buffer());
    std::fprintf(stderr, "nsightkit html: wrote %s (the page of %s, written again)\n",
                 output.c_str(), inputs[0].c_str());
    return 0;
  }

  rep::HtmlMode mode = inputs.size() > 1 ? rep::HtmlMode::ranks : rep::HtmlMode::single;
  if (a.has("--compare")) {
    if (inputs.size() != 1)
      throw UsageError("--compare compares one summary with BASE, not " +
                       std::to_string(inputs.size()));
    inputs.insert(inputs.begin(), a.value("--compare"));
    mode = rep::HtmlMode::compare;
  }
  std::vector<SavedSummary> saved;
  for (std::string const& p : inputs) saved.push_back(read_summary(p));
  std::vector<std::string> labels;
  if (a.has("--labels")) {
    labels = split_labels(a.value("--labels"));
    if (labels.size() != saved.size())
      throw UsageError("--labels names " + std::to_string(labels.size()) + " runs, but " +
                       std::to_string(saved.size()) + " were given");
  } else if (mode == rep::HtmlMode::compare) {
    labels = {"before", "after"};
  } else {
    for (SavedSummary const& s : saved) {
      labels.push_back(mode == rep::HtmlMode::single || s.snapshot.rank
                           ? rep::html_label(s.snapshot)
                           : base_name(s.file));
    }
  }
  std::vector<rep::HtmlRun> runs;
  for (std::size_t i = 0; i < saved.size(); ++i) runs.push_back({&saved[i].snapshot, labels[i]});
  std::string title = title_option;
  if (title.empty()) {
    title = mode == rep::HtmlMode::single  ? rep::html_title(saved[0].snapshot)
            : mode == rep::HtmlMode::ranks ? fmt::format("nsightkit report: {} ranks", saved.size())
                                           : "nsightkit: " + labels[0] + " vs " + labels[1];
  }
  rep::write_html(sink, runs, mode, title);
  write_file(output, sink.buffer());
  for (SavedSummary const& s : saved) paths = std::max(paths, s.snapshot.paths.size());
  runs_written = runs.size();
  std::fprintf(stderr, "nsightkit html: wrote %s (%s, %zu run%s, up to %zu paths each)\n",
               output.c_str(), rep::to_string(mode), runs_written, runs_written == 1 ? "" : "s",
               paths);
  return 0;
}

}  // namespace

int run_html(Invocation const& call) {
  return run_subcommand("nsightkit html", help, call.args,
                        {{"--output", "-o", true, false},
                         {"--compare", nullptr, true, false},
                         {"--labels", nullptr, true, false},
                         {"--title", nullptr, true, false}},
                        html);
}

}  // namespace nsightkit_command
