#!/usr/bin/env python3
"""An MPI job of 2 ranks (tests/mpi/mpi_signals_demo.cpp) sent SIGTERM through mpiexec: every rank
writes its own summary and trace (.rank0, .rank1), whole, without a collective, and ends by the
signal; mpiexec reports the job ended by it. (Open MPI kills ranks one second after passing SIGTERM
on unless told otherwise: the test gives them 30 s, as docs/long-jobs.md tells users to.)

usage: run_mpi_signals.py --demo EXE --mpiexec MPIEXEC [--np-flag -n] [--oversubscribe]
                          --checker check_trace.py --workdir DIR
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--np-flag", default="-n")
    ap.add_argument("--oversubscribe", action="store_true")
    ap.add_argument("--checker", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    d = args.workdir
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NSIGHTKIT_", "OMPI_COMM_", "PMI_", "SLURM_"))
           and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "NVTX_INJECTION64_PATH")}
    env["NSIGHTKIT_REPORT"] = f"json={d}/s.json,csv={d}/s.csv,trace={d}/t.json"
    cmd = [args.mpiexec, args.np_flag, "2"] + (["--oversubscribe"] if args.oversubscribe else [])
    version = subprocess.run([args.mpiexec, "--version"], capture_output=True, text=True)
    if re.search("Open MPI|OpenRTE", version.stdout + version.stderr):
        # Open MPI's mpiexec passes SIGTERM on to every rank and sends SIGKILL one second later
        # (odls_base_sigkill_timeout): give the ranks the time to write (docs/long-jobs.md).
        cmd += ["--mca", "odls_base_sigkill_timeout", "30"]
    cmd.append(args.demo)
    print("$ " + " ".join(cmd), flush=True)
    # A session of its own: whatever happens below, the job's processes are killed as a group
    # (a rank left holding the test's output would stall ctest).
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        return judge(args, p, d)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p.wait()


def judge(args, p, d):
    out, err = [], []
    cond = threading.Condition()

    def read(stream, lines):
        for line in stream:
            with cond:
                lines.append(line)
                cond.notify_all()

    readers = [threading.Thread(target=read, args=(p.stdout, out), daemon=True),
               threading.Thread(target=read, args=(p.stderr, err), daemon=True)]
    for r in readers:
        r.start()
    end = time.monotonic() + 120
    with cond:
        while sum(1 for l in out if re.match(r"rank \d pid \d+ ready", l)) < 2:
            if time.monotonic() > end or p.poll() is not None:
                print("FAIL the ranks did not start\n" + "".join(out) + "".join(err))
                return 1
            cond.wait(0.2)
    os.kill(p.pid, signal.SIGTERM)
    try:
        rc = p.wait(120)
    except subprocess.TimeoutExpired:
        p.kill()
        print("FAIL mpiexec did not end after SIGTERM\n" + "".join(out) + "".join(err))
        return 1
    for r in readers:
        r.join(10)
    text = "".join(out) + "".join(err)
    print(text[-3000:])
    failures = []
    if rc == 0:
        failures.append(f"mpiexec exit status {rc}: the job did not end by the signal")
    for rank in (0, 1):
        if not re.search(rf"wrote {re.escape(d)}/s\.rank{rank}\.json .*\(at SIGTERM\)", text):
            failures.append(f"rank {rank} did not say it wrote its files at SIGTERM")
        files = [f"{d}/t.rank{rank}.json", "--summary", f"{d}/s.rank{rank}.json",
                 "--csv", f"{d}/s.rank{rank}.csv", "--expect-pid", str(rank),
                 "--expect-path", "step", "--expect-path", f"step/rank {rank} work"]
        r = subprocess.run([sys.executable, args.checker] + files, capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"rank {rank}'s files: {r.stdout}{r.stderr}")
    if any(os.path.exists(f"{d}/s.merged.json") for _ in (0,)):
        failures.append("a merged summary was written: a signal must not start a collective")
    for f in failures:
        print("FAIL " + f)
    if failures:
        return 1
    print(f"ok mpi_signals (mpiexec exit {rc})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
