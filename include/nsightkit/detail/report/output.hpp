// Internal: the report's text outputs made from a ReportSnapshot, each written in pieces into a
// TextSink (text_sink.hpp): the table (table.hpp) and the summary JSON and CSV (summary.hpp).
// The trace and the HTML page have headers of their own (trace_json.hpp, html.hpp).
#pragma once

#include <nsightkit/detail/report/summary.hpp>
#include <nsightkit/detail/report/table.hpp>
#include <nsightkit/detail/report/text_sink.hpp>
