"""nsightkit for Python: the reader of the report's saved files (report_file), as nsightkit.load.

    report = nsightkit.load("run.json")          # nsightkit.report_file's Summary (or Trace)
    for row in report.paths:
        print(row.path, row.count, row.total_ns)
"""

from . import report_file
from .report_file import ReportError


def load(path):
    """A saved report file as plain objects: a report_file.Summary for the summary JSON
    (`--report json=...`), a report_file.Trace for a trace (`trace=...`, also .json.gz). A file
    that is neither, or is broken, raises ReportError naming the file and the problem."""
    return report_file.read(path)


__all__ = ["ReportError", "load", "report_file"]
