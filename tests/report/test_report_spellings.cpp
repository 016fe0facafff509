// The NSIGHTKIT_REPORT grammar's former spellings (part of test_report): an item renamed before
// 0.1.0 still parses as its new name and prints one line on stderr naming it; the new spelling is
// silent.
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <string>

#include "report_support.hpp"

using nsightkit::ReportOptions;
using nsk_test::StderrCapture;

TEST_CASE("window-only's former spelling 'captured' still parses and warns once") {
  {
    StderrCapture err;
    auto o = ReportOptions::try_parse("json=s.json,window-only");  // the new spelling: silent
    REQUIRE(o);
    REQUIRE(o->captured_only);
    o = ReportOptions::try_parse("window-only=off");
    REQUIRE(o);
    REQUIRE_FALSE(o->captured_only);
    REQUIRE(err.text().empty());
  }
  for (char const* spec : {"captured", "json=s.json, captured = on", "captured=off"}) {
    INFO(spec);
    StderrCapture err;
    auto const o = ReportOptions::try_parse(spec);
    REQUIRE(o);
    REQUIRE(o->captured_only == (std::string{spec} != "captured=off"));
    std::string const text = err.text();
    INFO(text);
    REQUIRE(text == "nsightkit: NSIGHTKIT_REPORT='" + std::string{spec} +
                        "': 'captured' is now spelled 'window-only' (only ranges begun while a "
                        "capture window is active); the old spelling still works\n");
  }
  {  // both spellings name one item: given twice, one warning
    StderrCapture err;
    std::string why;
    REQUIRE_FALSE(ReportOptions::try_parse("window-only,captured", &why));
    REQUIRE(why.find("'window-only' given twice") != std::string::npos);
    REQUIRE_FALSE(ReportOptions::try_parse("captured,captured", &why));
    REQUIRE(why.find("'window-only' given twice") != std::string::npos);
    std::string const text = err.text();
    REQUIRE(text.find("'captured' is now spelled 'window-only'") != std::string::npos);
    REQUIRE(text.find('\n') == text.size() - 1);  // the second spec warned once, the first not
    REQUIRE(ReportOptions::parse("captured,csv=x.csv").captured_only);  // parse() accepts it too
  }
}
