"""nsightkit's NVTX tool library in this process, and its C ABI (include/nsightkit/detail/tool_api.hpp).

Capture windows and nsightkit.profile() are the C++ CaptureWindow and report of this library,
called through ctypes: the schedule, NSIGHTKIT_CAPTURE, the profiler calls, the NVTX ranges and the
report are written once, in C++. One copy per process: the library NVTX_INJECTION64_PATH names when
it is nsightkit's (`nsightkit profile` set it, and dlopen of that path gives the copy NVTX loaded),
else the package's own, the CUPTI one where it loads (as the command chooses), so that a window made
before nsightkit.profile() and the report of that block are one library's.
"""

import ctypes
import os
import threading

from .locations import get_tool_dir

API_VERSION = 1
OK, INVALID, REFUSED, RUNNING = 0, 1, 2, 3
FROM_ENVIRONMENT, STRICT_ENVIRONMENT, NO_SYNCHRONIZE = 1, 2, 4
CAPTURING, OFF, SCHEDULE_FROM_ENVIRONMENT = 1, 2, 4
OWNER_NONE, OWNER_THIS, OWNER_PROGRAM, OWNER_TOOL = 0, 1, 2, 3
PHASE_COUNT = 6  # CapturePhase: skip, wait, warmup, active, done, off

LIBRARIES = ("libnsightkit-nvtx-cupti.so", "libnsightkit-nvtx.so")
_ERROR_SIZE = 4096

_i64, _u32, _int, _p, _str = ctypes.c_int64, ctypes.c_uint, ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p
_SIGNATURES = {
    "nsightkit_tool_api_version": (_int, []),
    "nsightkit_tool_window_new": (_int, [ctypes.POINTER(_i64), _u32, _u32, _str, _str, ctypes.POINTER(_p),
                                         ctypes.c_char_p, ctypes.c_size_t]),
    "nsightkit_tool_window_free": (None, [_p]),
    "nsightkit_tool_window_step": (_int, [_p, ctypes.POINTER(_p), ctypes.c_char_p, ctypes.c_size_t]),
    "nsightkit_tool_step_end": (None, [_p]),
    "nsightkit_tool_step_number": (_i64, [_p]),
    "nsightkit_tool_step_phase": (_int, [_p]),
    "nsightkit_tool_phase_name": (_str, [_int]),
    "nsightkit_tool_window_phase_of": (_int, [_p, _i64]),
    "nsightkit_tool_window_next_step": (_i64, [_p]),
    "nsightkit_tool_window_state": (_u32, [_p]),
    "nsightkit_tool_window_schedule": (None, [_p, ctypes.POINTER(_i64)]),
    "nsightkit_tool_window_close": (None, [_p]),
    "nsightkit_tool_request_capture": (None, []),
    "nsightkit_tool_report_owner": (_int, []),
    "nsightkit_tool_report_start": (_int, [_str, ctypes.c_char_p, ctypes.c_size_t]),
    "nsightkit_tool_report_finish": (_int, [_int, ctypes.c_char_p, ctypes.c_size_t]),
    "nsightkit_tool_domain_seen": (_int, [_str]),
}


def injected_path():
    """The NVTX tool NVTX_INJECTION64_PATH names when it is nsightkit's (else "")."""
    path = os.environ.get("NVTX_INJECTION64_PATH", "")
    return path if os.path.basename(path).startswith("libnsightkit-nvtx") else ""


class Tool:
    """The loaded library: `path`, `lib` (its functions, typed), `phases` (CapturePhase names by
    value) and `cupti_missing` (why the CUPTI library did not load; "" when it did or was not
    tried)."""

    def __init__(self, path, lib, cupti_missing):
        self.path = path
        self.lib = lib
        self.cupti_missing = cupti_missing
        for name, (restype, argtypes) in _SIGNATURES.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = restype, argtypes
        self.phases = tuple(lib.nsightkit_tool_phase_name(i).decode() for i in range(PHASE_COUNT))

    def call(self, name, *args):
        """Calls a function that reports failure through a status and a message: (status, text)."""
        error = ctypes.create_string_buffer(_ERROR_SIZE)
        status = getattr(self.lib, name)(*args, error, _ERROR_SIZE)
        return status, error.value.decode("utf-8", "replace")


_lock = threading.Lock()
_tool = None


def _open(path):
    lib = ctypes.CDLL(path)
    try:
        version = lib.nsightkit_tool_api_version()
    except AttributeError:
        version = None
    if version != API_VERSION:
        raise OSError(f"{path} is nsightkit's NVTX tool library of another version (C ABI {version}, this "
                      f"package speaks {API_VERSION}): the package and the library must come from one install")
    return lib


def load():
    """The process's copy of the tool library, loaded on first use. Raises FileNotFoundError (no
    library here: a source checkout) or OSError (it does not load) with what was tried."""
    global _tool
    with _lock:
        if _tool is not None:
            return _tool
        named = injected_path()
        if named:
            _tool = Tool(named, _open(named), "")
            return _tool
        directory = get_tool_dir()
        tried = []
        for name in LIBRARIES:
            path = os.path.join(directory, name)
            if not os.path.exists(path):
                tried.append(f"{path}: not installed")
                continue
            try:
                lib = _open(path)
            except OSError as e:
                tried.append(f"{path}: {e}")
                continue
            _tool = Tool(path, lib, "; ".join(tried))
            return _tool
        raise OSError("nsightkit: no NVTX tool library could be loaded (" + "; ".join(tried) + ")")
