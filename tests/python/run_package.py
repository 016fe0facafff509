#!/usr/bin/env python3
"""The Python package (pyproject.toml, python/nsightkit/), built and used as its users would.

usage: run_package.py CASE --source ROOT --dir WORK [--base-python PY] [--expect-cupti]

CASE:
  wheel  (ctest fixture of the others) builds the wheel once with pip (scikit-build-core),
         checks what it holds, and installs it, with its dependencies from PyPI, into a fresh
         virtual environment WORK/venv made from the first Python that has torch (Debian's
         python3-torch, seen through --system-site-packages), else from this Python
  api    in that environment, without torch: `import nsightkit` loads neither torch nor nvtx;
         get_include(), get_cmake_dir() (find_package(nsightkit) configures with it) and
         get_pkgconfig_dir(); the console script is the C++ command (its exit status, its
         messages); it finds its NVTX tool libraries inside the package (the CUPTI one, whose
         libcupti.so.13 comes from PyPI's nvidia-cuda-cupti through its run path, where CUPTI was
         built); `nsightkit profile -- python` with nsightkit.range, read back with load()
  capture a capture window from Python (capture_script.py) is the C++ CaptureWindow of the tool
         library: its phases; under `nsightkit profile`, the steps, the captured totals, the
         window's `capture` range and ProfilerStep#N in the Kineto-schema trace read back with
         load(); NSIGHTKIT_CAPTURE (--capture, the variable) replaces the schedule; nsightkit.step();
         captures requested by the report's trigger signal and by request_capture(); with no tool
         at all the window still steps, cheaply, and says nothing but the no-driver line
  profile nsightkit.profile() without the command (profile_script.py): the outputs of two blocks
         (every step, then `window-only`), and each refusal's exception and message: nested, another
         NVTX tool, gpu=cupti without CUPTI, NVTX started before the block, a bad specification;
         under `nsightkit profile` a warning and nothing written
  torch  `nsightkit profile` on a small PyTorch model under nsightkit.instrument(): every module's
         path (its qualified name with '/') and count, exactly; hooks removed by remove() and by a
         `with` block; none installed when no NVTX tool listens; profile() refuses under
         torch.profiler and, around instrument(), writes the module paths. Exit 77 (skipped) where
         the environment has no torch.
  pandas `nsightkit.load(...).to_pandas()` on a report of a program with ranges on two threads:
         the summary's frames equal the report's own summary CSV (merged and per thread), a
         crafted summary's GPU columns, the trace's frame, the message without pandas
         (frames_check.py). Exit 77 (skipped) where the environment has no pandas.
  detr   bench/pytorch_detr.py (the DETR-style inference loop the GPU machine measures) on the CPU
         under nsightkit profile with instrument(): a row for every module of its model, named
         by its qualified path (ModuleList items too), each called as often as the loop calls it,
         no backward row under torch.inference_mode(). Exit 77 (skipped) without torch.
Standard library only.
"""

import argparse
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import zipfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, timeout=300, env_extra=None, check=False, **kw):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NSIGHTKIT_") and k not in ("NVTX_INJECTION64_PATH", "PYTHONPATH")}
    env.update(env_extra or {})
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, **kw)
    sys.stderr.write(f"$ {' '.join(cmd)}\nexit {p.returncode}\n")
    if p.returncode != 0 or check:
        sys.stderr.write(f"stdout:\n{p.stdout[-4000:]}\nstderr:\n{p.stderr[-4000:]}\n")
    return p


def expect(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}")


def venv_python(a):
    return os.path.join(a.dir, "venv", "bin", "python")


def has_torch(python):
    return subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0


def site_packages(a):
    p = run([venv_python(a), "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"])
    return p.stdout.strip()


def case_wheel(a):
    base = a.base_python
    if not base:
        candidates = ["/usr/bin/python3", sys.executable]
        base = next((c for c in candidates if os.path.exists(c) and has_torch(c)), sys.executable)
    with_torch = has_torch(base)
    print(f"virtual environment from {base} ({'with' if with_torch else 'without'} torch)")
    for d in ("venv", "dist"):
        shutil.rmtree(os.path.join(a.dir, d), ignore_errors=True)
    os.makedirs(a.dir, exist_ok=True)
    venv = [base, "-m", "venv"] + (["--system-site-packages"] if with_torch else []) + [
        os.path.join(a.dir, "venv")]
    expect(run(venv).returncode == 0, "a fresh virtual environment")
    py = venv_python(a)

    t0 = time.monotonic()
    p = run([py, "-m", "pip", "wheel", a.source, "--no-deps", "-w", os.path.join(a.dir, "dist"),
             "--config-settings", f"build-dir={os.path.join(a.dir, 'build')}"], timeout=1500,
            env_extra={"CMAKE_BUILD_PARALLEL_LEVEL": os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")})
    expect(p.returncode == 0, f"pip wheel builds the package ({time.monotonic() - t0:.0f} s)")
    wheels = glob.glob(os.path.join(a.dir, "dist", "nsightkit-*.whl"))
    expect(len(wheels) == 1, f"one wheel ({[os.path.basename(w) for w in wheels]})")
    wheel = wheels[0]
    expect(re.search(r"-py3-none-linux_x86_64\.whl$", wheel) is not None,
           "tagged for any Python 3 on Linux: programs, no extension module")
    with zipfile.ZipFile(wheel) as z:
        infos = {i.filename: i for i in z.infolist()}
        meta = next(z.read(n).decode() for n in infos if n.endswith(".dist-info/METADATA"))
        entry = next(z.read(n).decode() for n in infos if n.endswith(".dist-info/entry_points.txt"))
        layout = z.read("nsightkit/_layout.py").decode()
    command = infos.get("nsightkit/bin/nsightkit")
    expect(command is not None and (command.external_attr >> 16) & stat.S_IXUSR,
           "the nsightkit program, executable, in nsightkit/bin")
    tools = ["nsightkit/lib/nsightkit/libnsightkit-nvtx.so"]
    if a.expect_cupti:
        tools.append("nsightkit/lib/nsightkit/libnsightkit-nvtx-cupti.so")
    for name in tools + ["nsightkit/include/nsightkit/nsightkit.hpp",
                         "nsightkit/share/cmake/nsightkit/nsightkit-config.cmake",
                         "nsightkit/share/cmake/nsightkit/src/nsightkit.cpp",
                         "nsightkit/lib/pkgconfig/nsightkit.pc", "nsightkit/__init__.py",
                         "nsightkit/report_file.py", "nsightkit/modules.py"]:
        expect(name in infos, f"the wheel holds {name}")
    expect(not any("nsightkit_report" in n or "/tests/" in n or "/examples/" in n for n in infos),
           "no second reader, no tests or examples")
    expect("nsightkit = nsightkit.command:main" in entry, "the console script nsightkit")
    for dep in ("nvtx", "nvidia-nvtx", "nvidia-cuda-cupti"):
        expect(re.search(rf"^Requires-Dist: {dep}\b", meta, re.M) is not None, f"depends on {dep}")
    expect(a.dir not in layout and a.source not in layout and '"../' not in layout,
           "its layout names no path of the build machine")

    t0 = time.monotonic()
    p = run([py, "-m", "pip", "install", wheel], timeout=900)
    expect(p.returncode == 0, f"pip installs it with its dependencies ({time.monotonic() - t0:.0f} s)")
    if a.expect_cupti:
        lib = os.path.join(site_packages(a), "nsightkit", "lib", "nsightkit", "libnsightkit-nvtx-cupti.so")
        p = run(["readelf", "-d", lib])
        expect("[$ORIGIN/../../../nvidia/cu13/lib]" in p.stdout,
               "the CUPTI tool library's run path: PyPI's nvidia-cuda-cupti, from its own directory")
        p = run(["ldd", lib], env_extra={"LD_LIBRARY_PATH": ""})
        where = re.search(r"libcupti\.so\.13 => (\S+)", p.stdout)
        want = os.path.join(site_packages(a), "nvidia", "cu13", "lib", "libcupti.so.13")
        expect(where is not None and os.path.realpath(where.group(1)) == os.path.realpath(want),
               f"libcupti.so.13 is the wheel's ({where.group(1) if where else 'not found'})")
    return 0


def nsightkit_in_venv(a):
    return os.path.join(a.dir, "venv", "bin", "nsightkit")


def summary(a, path):
    """The report's summary read by the installed package's reader (nsightkit.load)."""
    code = ("import json, sys, nsightkit\n"
            "s = nsightkit.load(sys.argv[1])\n"
            "print(json.dumps({'type': type(s).__name__,"
            " 'counts': {r.path: r.count for r in s.paths}}))\n")
    p = run([venv_python(a), "-c", code, path])
    expect(p.returncode == 0, f"nsightkit.load reads {os.path.basename(path)}")
    doc = json.loads(p.stdout)
    expect(doc["type"] == "Summary", "a Summary")
    return doc["counts"]


def case_api(a):
    py = venv_python(a)
    p = run([py, "-c", "import sys, nsightkit; print(sorted({'torch', 'nvtx'} & set(sys.modules)))"], cwd=a.dir)
    expect(p.returncode == 0 and p.stdout.strip() == "[]", "import nsightkit loads neither torch nor nvtx")
    code = ("import os, nsightkit\n"
            "print(nsightkit.__version__)\n"
            "print(os.path.isfile(os.path.join(nsightkit.get_include(), 'nsightkit', 'nsightkit.hpp')))\n"
            "print(nsightkit.get_cmake_dir())\n"
            "print(os.path.isfile(os.path.join(nsightkit.get_pkgconfig_dir(), 'nsightkit.pc')))\n")
    p = run([py, "-c", code], cwd=a.dir)
    lines = p.stdout.split()
    expect(p.returncode == 0 and len(lines) == 4, "get_include, get_cmake_dir, get_pkgconfig_dir")
    version = re.search(r"project\(nsightkit\s+VERSION\s+([0-9.]+)", open(os.path.join(a.source, "CMakeLists.txt")).read()).group(1)
    expect(lines[0] == version, f"__version__ is CMake's project version ({lines[0]})")
    expect(lines[1] == "True" and lines[3] == "True", "the headers and nsightkit.pc are there")
    cmake_dir = lines[2]
    expect(os.path.isfile(os.path.join(cmake_dir, "nsightkit-config.cmake")), "nsightkit-config.cmake is there")

    # find_package(nsightkit) through get_cmake_dir() (NVTX3 from whichever provider comes first
    # here); the package's NVTX3 finder takes the environment's nvidia-nvtx when asked for PyPI's.
    build = os.path.join(a.dir, "consumer")
    shutil.rmtree(build, ignore_errors=True)
    p = run(["cmake", "-S", os.path.join(HERE, "consumer"), "-B", build, f"-Dnsightkit_DIR={cmake_dir}",
             f"-DNSIGHTKIT_PYTHON_EXECUTABLE={py}"])
    expect(p.returncode == 0 and "nsightkit found" in p.stdout, "find_package(nsightkit) with get_cmake_dir()")
    p = run([py, os.path.join(cmake_dir, "nsightkit-find-nvtx3.py"), "--source", "pypi"])
    nvtx_include = os.path.join(site_packages(a), "nvidia", "cu13", "include")
    expect(p.returncode == 0 and os.path.realpath(p.stdout.strip()) == os.path.realpath(nvtx_include),
           f"NVTX3's headers from the environment's nvidia-nvtx ({p.stdout.strip()})")

    cmd = nsightkit_in_venv(a)
    p = run([cmd, "--help"])
    expect(p.returncode == 0 and "usage: nsightkit <command>" in p.stdout, "the console script runs the command")
    missing = os.path.join(a.dir, "missing.json")
    p = run([cmd, "stats", missing])
    expect(p.returncode == 2 and f"nsightkit stats: error: {missing}" in p.stderr,
           "the command's exit status and message come through")
    p = run([cmd, "profile", "--", py, "-c", "import os, sys; print(os.environ['NVTX_INJECTION64_PATH']); sys.exit(3)"])
    expect(p.returncode == 3, "nsightkit profile: the program's exit status (3)")
    lib = "libnsightkit-nvtx-cupti.so" if a.expect_cupti else "libnsightkit-nvtx.so"
    injected = p.stdout.strip()
    expect(os.path.realpath(injected) == os.path.realpath(
        os.path.join(site_packages(a), "nsightkit", "lib", "nsightkit", lib)),
        f"the NVTX tool is the package's {lib} ({injected})")

    out = os.path.join(a.dir, "ranges.json")
    p = run([cmd, "profile", "--report", f"json={out},table", "--", py, os.path.join(HERE, "ranges_script.py"), "4"])
    expect(p.returncode == 4, "exit status 4 through the console script and the command")
    counts = summary(a, out)
    expect(counts == {"train_step": 5, "train_step/load": 5, "train_step/compute": 5},
           f"nsightkit.range as a context manager and a decorator, nested ({counts})")
    expect("train_step" in p.stderr and "compute" in p.stderr, "the table on stderr")
    return 0


def script_run(a, script, mode, profile_args=None, env_extra=None, extra=()):
    """Runs a test script in the environment (under `nsightkit profile PROFILE_ARGS` when given);
    (process, what the script wrote)."""
    seen_path = os.path.join(a.dir, f"{os.path.basename(script)}-{mode}.json")
    if os.path.exists(seen_path):
        os.remove(seen_path)
    cmd = [venv_python(a), os.path.join(HERE, script), mode, seen_path, *extra]
    if profile_args is not None:
        cmd = [nsightkit_in_venv(a), "profile", *profile_args, "--"] + cmd
    p = run(cmd, env_extra=env_extra)
    seen = None
    if os.path.exists(seen_path):
        with open(seen_path, encoding="utf-8") as f:
            seen = json.load(f)
    return p, seen


def read_summary(a, path):
    """(steps, {path: count}, {start/end range: count}) of a summary, read with nsightkit.load."""
    code = ("import json, sys, nsightkit\n"
            "s = nsightkit.load(sys.argv[1])\n"
            "print(json.dumps([s.steps.count if s.steps else 0, {r.path: r.count for r in s.paths},"
            " {r.name: r.time.count for r in s.start_end_ranges}, s.captured_only]))\n")
    p = run([venv_python(a), "-c", code, path])
    expect(p.returncode == 0, f"nsightkit.load reads {os.path.basename(path)}")
    return json.loads(p.stdout)


def step_names(a, trace):
    code = ("import json, sys, nsightkit\n"
            "t = nsightkit.load(sys.argv[1])\n"
            "print(json.dumps(sorted({e['name'] for e in t.raw['traceEvents']"
            " if str(e.get('name', '')).startswith('ProfilerStep#')})))\n")
    p = run([venv_python(a), "-c", code, trace])
    expect(p.returncode == 0, f"nsightkit.load reads the trace {os.path.basename(trace)}")
    return json.loads(p.stdout)


def case_capture(a):
    W, U, A, D = "wait", "warmup", "active", "done"
    summary, trace = os.path.join(a.dir, "capture.json"), os.path.join(a.dir, "capture-trace.json")
    p, seen = script_run(a, "capture_script.py", "window",
                         ["--report", f"json={summary},trace={trace},trace-schema=kineto"])
    expect(p.returncode == 0 and seen is not None, "a window's steps under nsightkit profile")
    expect(seen["phases"] == [W, W, U, A, A, A, D, D] and seen["captured"] == [False] * 3 + [True] * 3 + [False] * 2,
           f"CaptureWindow(wait=2, warmup=1, active=3): the C++ window's phases ({seen['phases']})")
    expect(seen["schedule"] == [2, 1, 3, 1, 0, False] and not seen["from_environment"]
           and seen["next_step"] == 8 and seen["phase_of_100"] == D, "its schedule, next step, phase_of")
    steps, counts, start_end, _ = read_summary(a, summary)
    expect(steps == 8 and counts == {"train_step": 8},
           f"the report's steps line has every step, not path components ({steps}, {counts})")
    expect(start_end.get("capture") == 1, f"one `capture` window range ({start_end})")
    names = step_names(a, trace)
    expect(names == [f"ProfilerStep#{i}" for i in range(8)], f"ProfilerStep#N in Kineto's schema ({names})")

    p, seen = script_run(a, "capture_script.py", "window", ["--report", f"window-only,json={summary}"])
    steps, counts, _, captured_only = read_summary(a, summary)
    expect(p.returncode == 0 and captured_only and steps == 3 and counts == {"train_step": 3},
           f"`window-only`: the totals of the 3 active steps ({steps}, {counts})")

    p, seen = script_run(a, "capture_script.py", "window",
                         ["--report", f"window-only,json={summary}", "--capture", "wait=1,active=2"])
    steps, counts, _, _ = read_summary(a, summary)
    expect(p.returncode == 0 and seen["phases"] == [W, A, A] + [D] * 5 and seen["from_environment"]
           and seen["schedule"] == [1, 0, 2, 1, 0, False] and steps == 2 and counts == {"train_step": 2},
           f"--capture (NSIGHTKIT_CAPTURE) replaces the code's schedule ({seen['phases']}, {steps})")
    p, seen = script_run(a, "capture_script.py", "window", env_extra={"NSIGHTKIT_CAPTURE": "skip_first=6,active=1"})
    expect(p.returncode == 0 and seen["phases"] == ["skip"] * 6 + [A, D],
           f"NSIGHTKIT_CAPTURE without the command too ({seen['phases']})")
    p, seen = script_run(a, "capture_script.py", "window", env_extra={"NSIGHTKIT_CAPTURE": "wait=x"})
    expect(p.returncode == 0 and seen["phases"] == ["off"] * 8
           and "NSIGHTKIT_CAPTURE=\"wait=x\"" in p.stderr and "capture disabled" in p.stderr,
           "a bad NSIGHTKIT_CAPTURE: the C++ window's one message, capture off")

    p, seen = script_run(a, "capture_script.py", "default", ["--report", f"json={summary}", "--capture",
                                                             "skip_first=1,active=2"])
    steps, counts, _, _ = read_summary(a, summary)
    expect(p.returncode == 0 and seen["phases"] == ["skip", A, A, D, D, D] and steps == 6,
           f"nsightkit.step(): the default window, NSIGHTKIT_CAPTURE's schedule ({seen['phases']})")
    p, seen = script_run(a, "capture_script.py", "default")
    expect(p.returncode == 0 and seen["phases"] == ["off"] * 6, "nsightkit.step() without a schedule: off")

    for mode, how in (("signal", "the report's trigger signal (SIGUSR2)"), ("request", "request_capture()")):
        p, seen = script_run(a, "capture_script.py", mode, ["--report", f"window-only,json={summary}"])
        phases = seen["phases"] if seen else None
        ok = phases is not None and phases[:3] == [W] * 3 and phases[-3:] == [U, A, A] and set(phases[3:-3]) <= {W}
        steps, counts, _, _ = read_summary(a, summary)
        expect(p.returncode == 0 and ok and steps == 2 and counts == {"train_step": 2},
               f"an on-demand window captures after {how}: warm-up, then 2 captured steps ({phases}, {steps})")

    p, seen = script_run(a, "capture_script.py", "plain")
    noise = [line for line in p.stderr.splitlines()
             if line and not line.startswith("nsightkit: CaptureWindow: no CUDA driver/device")]
    expect(p.returncode == 0 and seen["phases"] == [W, W, U, A, A, A, D, D] and not noise,
           f"no tool: the window steps and says nothing but the no-driver line ({noise})")
    expect(seen["step_us"] < 100, f"a step costs little with nothing listening ({seen['step_us']:.2f} us)")
    return 0


def case_profile(a):
    out = os.path.join(a.dir, "profile")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    p, seen = script_run(a, "profile_script.py", "write", extra=(out,))
    expect(p.returncode == 0 and seen is not None and seen["warnings"] == [], "two profile() blocks run")
    for name in ("block.json", "block.html", "block-trace.json", "captured.json"):
        expect(os.path.getsize(os.path.join(out, name)) > 0, f"profile() wrote {name} when its block ended")
    steps, counts, start_end, _ = read_summary(a, os.path.join(out, "block.json"))
    expect(steps == 8 and counts == {"train_step": 8} and start_end.get("capture") == 1,
           f"the first block: every step and range, the window's capture range ({steps}, {counts})")
    expect(step_names(a, os.path.join(out, "block-trace.json")) == [f"ProfilerStep#{i}" for i in range(8)],
           "the first block's Kineto-schema trace: ProfilerStep#N")
    expect("train_step" in p.stderr, "the first block's table on stderr")
    steps, counts, _, captured_only = read_summary(a, os.path.join(out, "captured.json"))
    expect(captured_only and steps == 3 and counts == {"train_step": 3},
           f"the second block holds its own run: `window-only`, the 3 active steps ({steps}, {counts})")

    refusals = {
        "nested": ("ProfileError", ["already inside a profile() block"]),
        "other": ("ProfileError", ["another NVTX tool is attached", "libToolsInjection64.so"]),
        "cupti": ("ProfileError", ["gpu=cupti, but", "gpu=auto or gpu=events"]),
        "late": ("ProfileError", ["NVTX in this process already started without nsightkit's tool",
                                  "before the program's first range"]),
        "spec": ("ValueError", ["unknown item 'tabel'", "expected a comma-separated list"]),
    }
    for mode, (kind, words) in refusals.items():
        p, seen = script_run(a, "profile_script.py", mode, extra=(out,))
        message = (seen or {}).get("message", "")
        expect(p.returncode == 0 and seen["error"] == kind and all(w in message for w in words)
               and (kind != "ProfileError" or seen["is_profile_error"]),
               f"{mode}: {kind} naming the problem ({message[:160]})")
    _, counts, _, _ = read_summary(a, os.path.join(out, "outer.json"))
    expect(counts == {"outer": 1}, f"the outer block still wrote its report ({counts})")

    p, seen = script_run(a, "profile_script.py", "command", ["--report", f"json={out}/command.json"], extra=(out,))
    expect(p.returncode == 0 and seen["error"] is None and len(seen["warnings"]) == 1
           and "runs under `nsightkit profile`" in seen["warnings"][0],
           f"under nsightkit profile: a warning, no error ({seen['warnings']})")
    expect(not os.path.exists(os.path.join(out, "not-written.json")) and os.path.exists(os.path.join(out, "command.json")),
           "the command's report is written, the block's is not")
    return 0


def case_torch(a):
    py = venv_python(a)
    if not has_torch(py):
        print(f"{py} has no torch (Debian: python3-torch): skipped")
        return SKIP
    out = os.path.join(a.dir, "torch-report.json")
    seen_path = os.path.join(a.dir, "torch-seen.json")
    script = os.path.join(HERE, "instrumented_model.py")
    p = run([nsightkit_in_venv(a), "profile", "--report", f"json={out},table", "--", py, script, seen_path],
            timeout=600)
    expect(p.returncode == 0, "the model runs under nsightkit profile")
    with open(seen_path, encoding="utf-8") as f:
        seen = json.load(f)
    print(f"torch {seen['torch']}, always_call: {seen['always_call']}")
    expect(seen["paths"] == ["stem", "backbone", "backbone/0", "backbone/0/conv1", "backbone/0/relu",
                             "backbone/0/conv2", "backbone/1", "backbone/1/conv1", "backbone/1/relu",
                             "backbone/1/conv2", "head"],
           f"instrument()'s paths are the qualified names with '/' ({seen['paths']})")
    expect(seen["active"] and seen["hooks_while_on"] == 2 * seen["modules"],
           f"a pre and a post hook on every module, the model's own for the backward ranges "
           f"({seen['hooks_while_on']})")
    expect(seen["hooks_after_remove"] == 0, "remove() takes every hook away")
    counts = summary(a, out)
    expected = seen["expected"]
    missing = {k: v for k, v in expected.items() if counts.get(k) != v}
    # Backward: each module's own row at least once a pass (how often a chain is reopened within
    # a pass is autograd's order); the marks' rows are exact (in `expected`).
    passes = seen["passes"]
    low = {p: counts.get(p) for p in seen["backward_paths"] if (counts.get(p) or 0) < passes}
    expect(not low, f"a backward row for every module, each pass ({low})")
    expect(counts.get("backward", 0) >= passes, "the model's own backward row")
    backward_rows = {p for p in counts if p == "backward" or p.startswith("backward/")}
    stray = sorted(backward_rows - set(seen["backward_paths"]) - set(expected) - {"backward"})
    expect(not stray, f"no backward row but the modules' and the marks' ({stray})")
    extra = sorted(set(counts) - set(expected) - backward_rows)
    expect(not missing, f"every module path with its count ({ {k: (v, counts.get(k)) for k, v in missing.items()} })")
    expect(not extra, f"no other paths: no module ranges after remove() or the with block ({extra})")
    expect(counts["backbone/1/conv2"] == 3 + 3 * passes and counts["train_step/backbone/0/relu"] == 2
           and counts["net/backbone/0/conv1"] == 1, "module paths at the top, under a range, under a name")
    expect("backbone" in p.stderr and "conv1" in p.stderr, "the table on stderr")

    # No NVTX tool: no hook at all.
    code = ("import nsightkit, torch\n"
            "m = torch.nn.Sequential(torch.nn.Linear(2, 2))\n"
            "r = nsightkit.instrument(m)\n"
            "print(r.active, sum(len(x._forward_pre_hooks) + len(x._forward_hooks) for x in m.modules()), r.paths)\n")
    p = run([py, "-c", code])
    expect(p.returncode == 0 and p.stdout.split()[:2] == ["False", "0"],
           f"no NVTX tool: no hook installed, paths still listed ({p.stdout.strip()})")

    # nsightkit.profile() without the command: refused under torch.profiler; around instrument().
    p, seen = script_run(a, "profile_script.py", "torch", extra=(a.dir,))
    expect(p.returncode == 0 and seen["error"] == "ProfileError" and "torch.profiler is active" in seen["message"],
           f"profile() refuses under torch.profiler ({seen and seen.get('message')})")
    _, counts, _, _ = read_summary(a, os.path.join(a.dir, "model.json"))
    forward = {k: v for k, v in counts.items() if not k.startswith("backward")}
    expect(forward == {"net": 3, "net/0": 3, "net/1": 3, "net/2": 3} and counts.get("backward/net/0", 0) >= 3,
           f"profile() around instrument(): the module paths without the command ({counts})")
    return 0


def case_pandas(a):
    py = venv_python(a)
    if run([py, "-c", "import pandas"]).returncode != 0:
        print(f"{py} has no pandas (Debian: python3-pandas): skipped")
        return SKIP
    script = os.path.join(HERE, "frames_check.py")
    files = [os.path.join(a.dir, f"frames.{kind}") for kind in ("json", "csv", "trace.json")]
    p = run([nsightkit_in_venv(a), "profile", "--report", "json={},csv={},trace={}".format(*files), "--",
             py, script, "run"])
    expect(p.returncode == 0, "the program runs under nsightkit profile")
    p = run([py, script, "check"] + files, check=True)
    sys.stdout.write(p.stdout)
    expect(p.returncode == 0, "nsightkit.load(...).to_pandas(): the frames")
    return 0


def case_detr(a):
    py = venv_python(a)
    if not has_torch(py):
        print(f"{py} has no torch (Debian: python3-torch): skipped")
        return SKIP
    bench = os.path.join(a.source, "bench")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import json, pytorch_detr\n"
            "m = pytorch_detr.Detr('tiny', 1, 1, 20)\n"
            "print(json.dumps([n.replace('.', '/') for n, _ in m.named_modules() if n]))\n")
    p = run([py, "-c", code, bench])
    expect(p.returncode == 0, "the script's model builds")
    modules = set(json.loads(p.stdout))
    out = os.path.join(a.dir, "detr-report.json")
    warmup, steps = 1, 2
    p = run([nsightkit_in_venv(a), "profile", "--report", f"json={out}", "--", py,
             os.path.join(bench, "pytorch_detr.py"), "--device", "cpu", "--model", "tiny", "--image", "64",
             "--enc-layers", "1", "--dec-layers", "1", "--queries", "20", "--batch", "1",
             "--warmup", str(warmup), "--steps", str(steps), "--annotate", "nsightkit"], timeout=600)
    expect(p.returncode == 0 and '"model": "detr"' in p.stdout, "the DETR loop runs on the CPU under nsightkit profile")
    counts = summary(a, out)
    calls = warmup + steps
    loop = {"postprocess", "to_host"}
    expect(set(counts) == modules | loop, f"a row per module path and the loop's two ranges, no backward row "
           f"(missing {sorted((modules | loop) - set(counts))}, extra {sorted(set(counts) - modules - loop)})")
    expect("transformer/encoder/layers/0/self_attn/sdpa" in counts
           and "transformer/decoder/layers/0/cross_attn" in counts, "ModuleList items under their qualified paths")
    once = ["backbone", "backbone/stage4/1/conv2", "input_proj", "transformer/encoder/layers",
            "transformer/encoder/layers/0/self_attn/sdpa", "transformer/decoder/norm", "box_head/fc2",
            "postprocess", "to_host"]
    expect(all(counts[k] == calls for k in once) and counts["backbone/stage1/0/relu"] == 2 * calls,
           f"each called as often as the loop calls it ({ {k: counts[k] for k in once} })")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["wheel", "api", "capture", "profile", "torch", "pandas", "detr"])
    ap.add_argument("--source", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--base-python", default="")
    ap.add_argument("--expect-cupti", action="store_true")
    a = ap.parse_args()
    a.source, a.dir = os.path.abspath(a.source), os.path.abspath(a.dir)
    if a.case != "wheel" and not os.path.exists(nsightkit_in_venv(a)):
        raise SystemExit(f"FAILED: no installed package in {a.dir}/venv (the wheel case sets it up)")
    return {"wheel": case_wheel, "api": case_api, "capture": case_capture, "profile": case_profile,
            "torch": case_torch, "pandas": case_pandas, "detr": case_detr}[a.case](a)


if __name__ == "__main__":
    sys.exit(main())
