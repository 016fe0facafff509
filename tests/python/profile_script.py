"""nsightkit.profile() in a plain Python process, for run_package.py's profile and torch cases: each
mode writes what happened (the exception's type and message, the warnings) to the JSON file OUT.

usage: profile_script.py MODE OUT [DIR]
  write     a window made before two blocks: DIR/block.json, .html and a Kineto-schema trace from
            the first (every step), DIR/captured.json from the second (`window-only`: active steps)
  nested    a profile() inside another
  other     NVTX_INJECTION64_PATH names another tool (as Nsight Systems sets it)
  cupti     gpu=cupti where CUPTI cannot be had (no GPU here)
  late      a range through the nvtx package before the block
  spec      a bad specification
  command   under `nsightkit profile`: the block starts nothing and says so
  torch     torch.profiler active; then instrument() inside a block writes DIR/model.json
"""

import json
import os
import sys
import warnings

import nsightkit


def steps(window, n):
    for _ in range(n):
        with window.step():
            with nsightkit.range("train_step"):
                pass


def attempt(f, seen):
    try:
        f()
    except Exception as e:  # what the user would see
        seen["error"] = type(e).__name__
        seen["message"] = str(e)
        seen["is_profile_error"] = isinstance(e, nsightkit.ProfileError)


def enter(report):
    with nsightkit.profile(report):
        pass


def main():
    mode, out = sys.argv[1], sys.argv[2]
    where = sys.argv[3] if len(sys.argv) > 3 else "."
    seen = {"error": None}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if mode == "write":
            window = nsightkit.CaptureWindow(wait=2, warmup=1, active=3)
            report = (f"table,json={where}/block.json,html={where}/block.html,"
                      f"trace={where}/block-trace.json,trace-schema=kineto")
            with nsightkit.profile(report):
                steps(window, 8)
            with nsightkit.range("between the blocks"):
                pass
            with nsightkit.profile(f"window-only,json={where}/captured.json"):
                steps(nsightkit.CaptureWindow(wait=2, warmup=1, active=3), 8)
        elif mode == "nested":
            def nested():
                with nsightkit.profile(f"json={where}/outer.json"):
                    with nsightkit.range("outer"):
                        enter("table")
            attempt(nested, seen)
        elif mode == "other":
            os.environ["NVTX_INJECTION64_PATH"] = "/opt/nvidia/nsight-systems/target/libToolsInjection64.so"
            attempt(lambda: enter("table"), seen)
        elif mode == "cupti":
            attempt(lambda: enter("table,gpu=cupti"), seen)
        elif mode == "late":
            with nsightkit.range("before the block"):
                pass
            attempt(lambda: enter("table"), seen)
        elif mode == "spec":
            attempt(lambda: enter("table,tabel"), seen)
        elif mode == "command":
            attempt(lambda: enter(f"json={where}/not-written.json"), seen)
        elif mode == "torch":
            import torch

            with torch.profiler.profile():
                attempt(lambda: enter("table"), seen)
            model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
            with nsightkit.profile(f"json={where}/model.json"):
                with nsightkit.instrument(model, name="net"):
                    for _ in range(3):
                        model(torch.randn(2, 4)).sum().backward()
    seen["warnings"] = [str(w.message) for w in caught]
    with open(out, "w", encoding="utf-8") as f:
        json.dump(seen, f)


if __name__ == "__main__":
    main()
