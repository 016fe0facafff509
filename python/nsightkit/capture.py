"""Capture windows from Python: nsightkit's C++ CaptureWindow (docs/capture-window.md), with the
schedule of torch.profiler.schedule (wait, warmup, active, repeat, skip_first).

    window = nsightkit.CaptureWindow(wait=5, warmup=2, active=3)   # NSIGHTKIT_CAPTURE may override
    for batch in loader:
        with window.step():                 # NVTX range "step N"; steps 7, 8, 9 are captured
            train_step(batch)

The window is the C++ one, run in nsightkit's NVTX tool library (nsightkit.tool): the schedule's
arithmetic, NSIGHTKIT_CAPTURE, cuProfilerStart/Stop, the NVTX ranges and the report's treatment of
steps (the steps line, `window-only`, ProfilerStep#N in Kineto's schema, captures requested by the
report's trigger signal or file) are its own. Without any tool listening, a step costs two calls
into the library and NVTX's no-op.
"""

import collections
import ctypes
import threading
import warnings

from . import tool as _tool

Schedule = collections.namedtuple("Schedule", "wait warmup active repeat skip_first on_demand")
Schedule.__doc__ = "A capture window's schedule, as CaptureSchedule holds it (on_demand: captures only on request)."

_BACKENDS = {"none": 0, "cuda_profiler": 1, "nvtx_range": 2, "all": 3}
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _backends(value):
    names = [value] if isinstance(value, str) else list(value)
    bits = 0
    for name in names:
        if name not in _BACKENDS:
            raise ValueError(f"nsightkit.CaptureWindow: unknown backend {name!r}; expected some of "
                             f"{', '.join(_BACKENDS)}")
        bits |= _BACKENDS[name]
    return bits


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"nsightkit.CaptureWindow: {name} must be an int, not {type(value).__name__}")
    if not _INT64[0] <= value <= _INT64[1]:
        raise ValueError(f"nsightkit.CaptureWindow: {name}={value} does not fit in 64 bits")
    return value


class CaptureStep:
    """One step of a window: begins when window.step() returns, ends at the end of its `with`
    block or at end(), on the thread that began it. `number` counts from 0; `phase` is "skip",
    "wait", "warmup", "active", "done" or "off"; `captured` is phase == "active"."""

    __slots__ = ("_window", "_handle", "number", "phase", "_used")

    def __init__(self, window, handle):
        self._window = window  # keeps the window while the step is open
        self._handle = handle
        lib = window._lib
        self.number = lib.nsightkit_tool_step_number(handle)
        self.phase = window._phases[lib.nsightkit_tool_step_phase(handle)]
        self._used = False

    @property
    def captured(self):
        return self.phase == "active"

    @property
    def open(self):
        return self._handle is not None

    def end(self):
        """Ends the step (the capture stops after the window's last active step); idempotent."""
        self._used = True
        handle, self._handle = self._handle, None
        if handle is not None:
            self._window._lib.nsightkit_tool_step_end(handle)

    def __enter__(self):
        self._used = True
        return self

    def __exit__(self, exc_type, exc, tb):
        self.end()
        return False

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle is None:
            return
        if not self._used:  # `window.step()` alone: it began and ended here, around nothing
            warnings.warn(f"nsightkit: step {self.number} was dropped without `with` or end(), so it "
                          "ended at once; put the step's work in `with window.step():`",
                          RuntimeWarning, stacklevel=2)
        try:
            self.end()
        except Exception:  # interpreter shutdown: the library outlives the objects
            pass

    def __repr__(self):
        state = "open" if self._handle is not None else "ended"
        return f"<nsightkit.CaptureStep {self.number} {self.phase} {state}>"


class CaptureWindow:
    """A capture window (the C++ nsightkit::CaptureWindow): counts steps, knows each one's phase,
    and at the edges of the active steps calls cuProfilerStart/cuProfilerStop (Nsight Systems'
    --capture-range=cudaProfilerApi, Nsight Compute's --profile-from-start off), opens the NVTX
    range `range_name` ("capture") and tells the report.

    The schedule is torch.profiler.schedule's, in CaptureSchedule's terms: `skip_first` steps
    skipped once, then `repeat` cycles (0: forever; the default is 1 cycle, not torch's 0) of `wait`
    steps, `warmup` steps and `active` captured steps. NSIGHTKIT_CAPTURE (`environment`; None: not
    read) replaces it as a whole when set, or switches capture off; a bad value prints one message
    and switches capture off (`strict_environment=True`: ValueError). An invalid schedule in code
    raises ValueError with the C++ message.

    `backends`: "all" (default), "cuda_profiler", "nvtx_range", "none", or a list of them.
    `synchronize`: wait for the device before stopping the profiler (default True).

    Steps come from any thread, one at a time; step() while a step is open raises RuntimeError.
    close() (or leaving a `with window:` block) ends an open capture and captures nothing more.
    """

    def __init__(self, *, wait=0, warmup=0, active=1, repeat=1, skip_first=0, backends="all",
                 synchronize=True, range_name="capture", environment="NSIGHTKIT_CAPTURE",
                 strict_environment=False, _on_demand=False, _from_environment=False):
        schedule = [_count("wait", wait), _count("warmup", warmup), _count("active", active),
                    _count("repeat", repeat), _count("skip_first", skip_first), 1 if _on_demand else 0]
        flags = ((_tool.FROM_ENVIRONMENT if _from_environment else 0)
                 | (_tool.STRICT_ENVIRONMENT if strict_environment else 0)
                 | (0 if synchronize else _tool.NO_SYNCHRONIZE))
        self._handle = None
        t = _tool.load()
        self._lib, self._phases = t.lib, t.phases
        handle = ctypes.c_void_p()
        status, message = t.call("nsightkit_tool_window_new", (ctypes.c_int64 * 6)(*schedule),
                                 _backends(backends), flags, _text(range_name), _text(environment),
                                 ctypes.byref(handle))
        if status == _tool.INVALID:
            raise ValueError(message)
        if status != _tool.OK:
            raise RuntimeError(f"nsightkit.CaptureWindow: {message}")
        self._handle = handle.value

    @classmethod
    def from_environment(cls, **options):
        """A window with no schedule in code: it captures only when NSIGHTKIT_CAPTURE (or
        `nsightkit profile --capture`) gives one; its steps are numbered and are NVTX ranges anyway."""
        return cls(_from_environment=True, **options)

    @classmethod
    def on_demand(cls, *, warmup=0, active=1, **options):
        """A window that captures only on request (nsightkit.request_capture(), the report's trigger
        signal or file): then its next `warmup` steps, and the `active` steps after them."""
        return cls(warmup=warmup, active=active, _on_demand=True, **options)

    def step(self):
        """Begins the next step; use it as `with window.step():` (or call its end())."""
        handle = ctypes.c_void_p()
        status, message = _tool.load().call("nsightkit_tool_window_step", self._live(),
                                            ctypes.byref(handle))
        if status != _tool.OK:
            raise RuntimeError(f"{message}; from Python: one `with window.step():` per iteration")
        return CaptureStep(self, handle.value)

    def steps(self, iterable):
        """Each item of `iterable` in a step of its own: `for batch in window.steps(loader):`.
        Fetching the next item is outside the steps."""
        for item in iterable:
            with self.step():
                yield item

    def phase_of(self, step):
        """The phase of step number `step` by the schedule in force and any requested capture."""
        return self._phases[self._lib.nsightkit_tool_window_phase_of(self._live(), _count("step", step))]

    @property
    def next_step(self):
        """The number the next step() gets: the steps begun so far."""
        return self._lib.nsightkit_tool_window_next_step(self._live())

    @property
    def capturing(self):
        """Whether a capture is open (between a window's start and its stop)."""
        return bool(self._lib.nsightkit_tool_window_state(self._live()) & _tool.CAPTURING)

    @property
    def off(self):
        """Whether capture is switched off (NSIGHTKIT_CAPTURE=off or a bad value, or
        from_environment() without the variable); steps are still numbered and still ranges."""
        return bool(self._lib.nsightkit_tool_window_state(self._live()) & _tool.OFF)

    @property
    def schedule_from_environment(self):
        """Whether NSIGHTKIT_CAPTURE decided the schedule (a schedule or an off word)."""
        return bool(self._lib.nsightkit_tool_window_state(self._live()) & _tool.SCHEDULE_FROM_ENVIRONMENT)

    @property
    def schedule(self):
        """The Schedule in force (the code's, or NSIGHTKIT_CAPTURE's when it replaced it)."""
        values = (ctypes.c_int64 * 6)()
        self._lib.nsightkit_tool_window_schedule(self._live(), values)
        return Schedule(*values[:5], bool(values[5]))

    def close(self):
        """Ends an open capture now and captures nothing more (later steps are "off")."""
        if self._handle is not None:
            self._lib.nsightkit_tool_window_close(self._handle)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle is not None:
            self._handle = None
            try:
                self._lib.nsightkit_tool_window_free(handle)
            except Exception:  # interpreter shutdown
                pass

    def _live(self):
        if self._handle is None:
            raise RuntimeError("nsightkit.CaptureWindow: this window was not made")
        return self._handle

    def __repr__(self):
        if self._handle is None:
            return "<nsightkit.CaptureWindow (not made)>"
        s = self.schedule
        return (f"<nsightkit.CaptureWindow wait={s.wait} warmup={s.warmup} active={s.active} "
                f"repeat={s.repeat} skip_first={s.skip_first}{' on-demand' if s.on_demand else ''}"
                f"{' off' if self.off else ''}, next step {self.next_step}>")


def _text(value):
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise TypeError(f"nsightkit.CaptureWindow: expected a non-empty str or None, not {value!r}")
    return value.encode()


_default_lock = threading.Lock()
_default = None


def default_window():
    """The window nsightkit.step() steps: CaptureWindow.from_environment(), made on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = CaptureWindow.from_environment()
        return _default


def step():
    """The next step of the default window (`with nsightkit.step():`), which captures only when
    NSIGHTKIT_CAPTURE (or `nsightkit profile --capture`) gives a schedule."""
    return default_window().step()


def request_capture():
    """Asks every capture window of the process to capture its next warm-up and active steps, as
    the report's trigger signal (SIGUSR2) and trigger file do (nsightkit::request_capture())."""
    _tool.load().lib.nsightkit_tool_request_capture()

