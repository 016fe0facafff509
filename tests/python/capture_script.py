"""Capture windows from Python, for run_package.py's capture case: each mode steps a window and
writes what it saw (phases, schedule, timings) to the JSON file OUT.

usage: capture_script.py MODE OUT
  window   CaptureWindow(wait=2, warmup=1, active=3): 8 steps, a range in each
  default  nsightkit.step(): 6 steps of the default window (NSIGHTKIT_CAPTURE's schedule)
  signal   CaptureWindow.on_demand(warmup=1, active=2), SIGUSR2 (the report's trigger) after step 2;
           steps until the two active steps ran (at most 20 s)
  request  the same with nsightkit.request_capture() after step 2
  plain    no tool at all: the window's phases, and what a step costs
"""

import json
import os
import signal
import sys
import time

import nsightkit


def run(window, n, seen):
    for _ in range(n):
        with window.step() as s:
            seen["phases"].append(s.phase)
            seen["captured"].append(s.captured)
            with nsightkit.range("train_step"):
                pass


def main():
    mode, out = sys.argv[1], sys.argv[2]
    seen = {"phases": [], "captured": []}
    if mode in ("window", "plain"):
        window = nsightkit.CaptureWindow(wait=2, warmup=1, active=3)
        run(window, 8, seen)
        seen["schedule"] = list(window.schedule)
        seen["from_environment"] = window.schedule_from_environment
        seen["next_step"] = window.next_step
        seen["phase_of_100"] = window.phase_of(100)
        if mode == "plain":
            quiet = nsightkit.CaptureWindow(wait=10**9, active=1)
            n = 20000
            t0 = time.perf_counter()
            for _ in range(n):
                with quiet.step():
                    pass
            seen["step_us"] = (time.perf_counter() - t0) / n * 1e6
    elif mode == "default":
        for _ in range(6):
            with nsightkit.step() as s:
                seen["phases"].append(s.phase)
                with nsightkit.range("train_step"):
                    pass
    elif mode in ("signal", "request"):
        window = nsightkit.CaptureWindow.on_demand(warmup=1, active=2)
        deadline = time.monotonic() + 20
        while seen["phases"].count("active") < 2 and time.monotonic() < deadline:
            run(window, 1, seen)
            if len(seen["phases"]) == 3:
                if mode == "signal":
                    os.kill(os.getpid(), signal.SIGUSR2)
                else:
                    nsightkit.request_capture()
            time.sleep(0.01)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(seen, f)


if __name__ == "__main__":
    main()
