"""nsightkit.profile(): the report for a block of a Python program, without `nsightkit profile`.

    with nsightkit.profile(report="table,json=run.json,html=run.html"):
        train()                               # the outputs are written when the block ends

The block starts the report of nsightkit's NVTX tool library in this process (nsightkit.tool) and
makes the library the process's NVTX tool (NVTX_INJECTION64_PATH) for the modules whose NVTX starts
during the block. NVTX asks for its tool once per module, at that module's first NVTX call, so the
block must come before the program's first range; it checks that NVTX hands the `nvtx` package's
module (nsightkit.range, instrument(), nvtx.annotate) to the report, and refuses otherwise, as it
refuses when another profiler is attached. Every refusal is a ProfileError (a RuntimeError) naming
the problem and the fix; a bad specification is a ValueError with the report's own message.
"""

import itertools
import os
import sys
import threading
import warnings

from . import tool as _tool


class ProfileError(RuntimeError):
    """nsightkit.profile() cannot give a truthful report here; the message says why and what to do."""


_lock = threading.Lock()
_active = None
_probes = itertools.count()
_VARIABLE = "NVTX_INJECTION64_PATH"


def _torch_profiler():
    # torch.profiler / torch.autograd.profiler.profile hold CUPTI and time every op; emit_nvtx() also
    # runs the autograd profiler, in NVTX mode, whose ranges the report hears: that one is welcome.
    torch = sys.modules.get("torch")
    autograd = getattr(getattr(torch, "_C", None), "_autograd", None)
    if autograd is None or not autograd._profiler_enabled():
        return ""
    kind = autograd._profiler_type() if hasattr(autograd, "_profiler_type") else "unknown"
    kind = str(kind).rsplit(".", 1)[-1]
    return "" if kind == "NVTX" else kind


class profile:  # noqa: N801 (used as a function: nsightkit.profile(...))
    """The report for the `with` block: `report` in NSIGHTKIT_REPORT's grammar (docs/report.md),
    e.g. "table,json=run.json,html=run.html,gpu=cupti"; the outputs are written when the block ends.

    Refuses (ProfileError) inside another profile() block, under torch.profiler, under another NVTX
    tool (Nsight Systems, Nsight Compute), with gpu=cupti when CUPTI cannot be had (another CUPTI
    user, no GPU), when NVTX's module of the `nvtx` package already started without a tool, and
    when the program carries its own compiled report. Under `nsightkit profile` the command's
    report is the one in use: the block starts nothing and says so (a RuntimeWarning).
    """

    def __init__(self, report="table"):
        if not isinstance(report, str):
            raise TypeError(f"nsightkit.profile: report must be a str, not {type(report).__name__}")
        self.report = report
        self._started = False
        self._restore = None

    def __enter__(self):
        global _active
        with _lock:
            if _active is not None:
                raise ProfileError("nsightkit.profile(): already inside a profile() block; one report "
                                   "runs at a time: end the outer block first, or use ranges "
                                   "(nsightkit.range) and capture windows inside it")
            self._start()
            _active = self
        return self

    def _start(self):
        named = os.environ.get(_VARIABLE, "")
        if named and not _tool.injected_path():
            raise ProfileError(
                f"nsightkit.profile(): another NVTX tool is attached ({_VARIABLE}={named}, as Nsight "
                "Systems and Nsight Compute set it); it receives this process's NVTX ranges, so "
                "nsightkit's report would miss them. Profile with that tool, or run without it")
        kind = _torch_profiler()
        if kind:
            raise ProfileError(
                f"nsightkit.profile(): torch.profiler is active (autograd profiler: {kind}); it holds "
                "CUPTI and times every op, so the report would measure the profiler. End the "
                "torch.profiler block first, or enter nsightkit.profile() outside it")
        t = _tool.load()
        status, message = t.call("nsightkit_tool_report_start", self.report.encode())
        if status == _tool.RUNNING:
            warnings.warn(f"nsightkit.profile(report={self.report!r}): {message}; this block starts "
                          "no report of its own", RuntimeWarning, stacklevel=3)
            return
        if status == _tool.INVALID:
            raise ValueError(f"nsightkit.profile(report={self.report!r}): {message}")
        if status != _tool.OK:
            fix = ""
            if "gpu=cupti" in message:
                fix = (f" ({t.cupti_missing})" if t.cupti_missing else "") + (
                    ". Ask for gpu=auto or gpu=events, or run without the other CUPTI user (Nsight "
                    "Systems, Nsight Compute; a torch.profiler that recorded CUDA activity keeps "
                    "CUPTI for the rest of the process)")
            raise ProfileError(f"nsightkit.profile(report={self.report!r}): {message}{fix}")
        self._started = True
        try:
            if not named:  # modules whose NVTX starts from now on load the library (the one loaded)
                self._restore = (None,)
                os.environ[_VARIABLE] = t.path
            why = self._probe(t)
        except BaseException:  # the block does not begin: nothing may stay started
            self._finish(t, write=False)
            raise
        if why:
            self._finish(t, write=False)
            raise ProfileError(f"nsightkit.profile(): {why}")

    def _probe(self, t):
        # A domain that the `nvtx` package's module creates must reach the library: its NVTX then
        # hands that module's ranges (nsightkit.range, instrument(), nvtx.annotate) to the report.
        try:
            import nvtx
        except ImportError:
            return ""  # no `nvtx` package: none of its ranges can be missed
        name = f"nsightkit.profile probe {os.getpid()}.{next(_probes)}"
        nvtx.get_domain(name)
        if t.lib.nsightkit_tool_domain_seen(name.encode()):
            return ""
        return ("NVTX in this process already started without nsightkit's tool: NVTX asks for its "
                "tool once per module, at the module's first NVTX call, and the `nvtx` package made "
                "one before this block (nsightkit.range, instrument(), nvtx.annotate or "
                "nvtx.get_domain), so the report would not see those ranges. Enter "
                "nsightkit.profile() before the program's first range, or run the program under "
                "`nsightkit profile -- python ...`")

    def _finish(self, t, write):
        if self._restore is not None:
            previous = self._restore[0]
            if previous is None:
                os.environ.pop(_VARIABLE, None)
            else:
                os.environ[_VARIABLE] = previous
            self._restore = None
        if not self._started:
            return _tool.OK, ""
        self._started = False
        return t.call("nsightkit_tool_report_finish", 1 if write else 0)

    def __exit__(self, exc_type, exc, tb):
        global _active
        with _lock:
            _active = None
            status, message = self._finish(_tool.load(), write=True)
        if status != _tool.OK and exc_type is None:
            raise ProfileError(f"nsightkit.profile(report={self.report!r}): {message}")
        return False
