// A program of two translation units built in nsightkit's compiled mode (NSIGHTKIT_COMPILED and
// libnsightkit, from linking nsightkit::nsightkit): this one includes the umbrella header,
// compiled_work.cpp only range.hpp and module.hpp. compiled.cmake runs it
//   compiled_demo api   the report enabled in-process; checks the snapshot, the outputs and the
//                       grammar's errors, then prints "ok"
//   compiled_demo       nothing but the work: NSIGHTKIT_REPORT turns the report on at start-up and
//                       it writes its outputs at exit
// and checks the objects of both translation units hold none of the report engine's code.
#include <nsightkit/nsightkit.hpp>

#include <cstdio>
#include <optional>
#include <string>

void compiled_work(int step);

namespace {

int failures = 0;

void expect(bool ok, std::string const& what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  }
}

void run_work() {
  for (int step = 0; step < 3; ++step) compiled_work(step);
}

int check_in_process() {
  nsightkit::ReportOptions o;
  o.at_exit = false;
  o.record_trace = true;
  bool const on = nsightkit::Report::enable(o);
  if (!nsightkit::enabled) {
    expect(!on && !nsightkit::Report::is_enabled(), "a disabled build never enables the report");
    run_work();
    expect(nsightkit::Report::snapshot().paths.empty(), "a disabled build records nothing");
    expect(!nsightkit::Report::write(), "a disabled build writes nothing");
  } else {
    expect(on && nsightkit::Report::is_enabled(), "Report::enable()");
    run_work();
    nsightkit::ReportSnapshot const snap = nsightkit::Report::snapshot();
    for (std::string step : {"step 0", "step 1", "step 2"}) {
      auto const* row = snap.find(step + "/forward/layer1/attention 1:heads");
      expect(row != nullptr && row->cpu.count == 1,
             "path " + step + "/forward/layer1/attention 1:heads");
    }
    auto const* backward = snap.find("step 2/backward 1.0");
    expect(backward != nullptr && backward->cpu.count == 1, "path step 2/backward 1.0");
    std::string const table = nsightkit::format_table(snap);
    expect(table.find("attention 0:heads") != std::string::npos, "the table names the paths");
    std::string const json = nsightkit::summary_json(snap);
    expect(json.find("\"step 1/forward/layer0\"") != std::string::npos, "the summary JSON");
    expect(nsightkit::summary_csv(snap).find("step 0/backward 0.0") != std::string::npos,
           "the summary CSV");
    expect(nsightkit::Report::trace_json().find("\"name\":\"layer1\"") != std::string::npos,
           "the trace");
    expect(nsightkit::html_page(snap).find("<html") != std::string::npos, "the HTML page");
    nsightkit::Report::reset();
    expect(nsightkit::Report::snapshot().paths.empty(), "Report::reset()");
    nsightkit::Report::disable();
    expect(!nsightkit::Report::is_enabled(), "Report::disable()");
  }
  std::string why;
  std::optional<nsightkit::ReportOptions> const bad =
      nsightkit::ReportOptions::try_parse("table,tabel", &why);
  expect(!bad && why.find("unknown item 'tabel'") != std::string::npos,
         "ReportOptions::try_parse names the bad item (got '" + why + "')");
  std::optional<nsightkit::ReportOptions> const good =
      nsightkit::ReportOptions::try_parse("json=s.json,samples=7");
  expect(good && good->json == "s.json" && good->exact_samples == 7, "ReportOptions::try_parse");
  expect(nsightkit::Report::output_path("out.json") == "out.json", "Report::output_path");
  if (failures != 0) return 1;
  std::puts("ok");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string{argv[1]} == "api") return check_in_process();
  run_work();
  return 0;
}
