"""nsightkit for Python and PyTorch (docs/pytorch.md).

    import nsightkit
    ranges = nsightkit.instrument(model)        # an NVTX range per module call: backbone/layer1/0/conv1
    with nsightkit.range("train_step"):         # a range of your own (also a decorator)
        loss = model(x).sum()
    ranges.remove()

Run the program under `nsightkit profile --report table,json=run.json -- python train.py` (the
`nsightkit` command installed with this package), then read the report back:

    report = nsightkit.load("run.json")          # nsightkit.report_file's Summary (or Trace)
    for row in report.paths:
        print(row.path, row.count, row.total_ns)

A capture window (the C++ CaptureWindow's schedule: wait, warmup, active, repeat) and the report
for a block of the program, without the command:

    window = nsightkit.CaptureWindow(wait=5, warmup=2, active=3)
    with nsightkit.profile(report="table,html=run.html"):
        for batch in loader:
            with window.step():             # or nsightkit.step(): NSIGHTKIT_CAPTURE's window
                train_step(batch)

get_include() and get_cmake_dir() give C++ extensions nsightkit's headers and CMake package.
Importing nsightkit imports neither torch nor nvtx: they are loaded on first use.
"""

from . import report_file
from .capture import CaptureStep, CaptureWindow, Schedule, request_capture, step
from .locations import get_cmake_dir, get_include, get_pkgconfig_dir
from .modules import ModuleRanges, instrument
from .profiling import ProfileError, profile
from .ranges import DOMAIN, range  # noqa: A004 (nsightkit.range)
from .report_file import ReportError

try:
    from importlib.metadata import PackageNotFoundError, version as _version

    __version__ = _version("nsightkit")
except (ImportError, PackageNotFoundError):  # a source checkout
    __version__ = None


def load(path):
    """A saved report file as plain objects: a report_file.Summary for the summary JSON
    (`--report json=...`), a report_file.Trace for a trace (`trace=...`, also .json.gz). A file
    that is neither, or is broken, raises ReportError naming the file and the problem. Either's
    to_pandas() makes a pandas DataFrame of it, where pandas is installed."""
    return report_file.read(path)


__all__ = ["CaptureStep", "CaptureWindow", "DOMAIN", "ModuleRanges", "ProfileError", "ReportError", "Schedule",
           "get_cmake_dir", "get_include", "get_pkgconfig_dir", "instrument", "load", "profile", "range",
           "report_file", "request_capture", "step"]
