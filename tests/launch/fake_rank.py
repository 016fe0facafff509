#!/usr/bin/env python3
"""A stand-in for a rank program, started by tools/nsightkit_launch.py in tests/launch/test_launch.py.

  fake_rank.py OUTDIR ACTION_FOR_RANK0 [ACTION_FOR_RANK1 ...]

Rank r runs the r-th action (the last one when there are fewer actions than ranks). It first
sets up (signal dispositions, the child process), then writes its pid to OUTDIR/pid.<rank> (under
a temporary name, then renamed, so a reader never sees half a file): that file means "ready".
Then it waits until every rank is ready (bounded: 30 s), so that a rank that fails at once cannot
overtake a slow-starting peer, whatever the machine's load. An action is NAME[:ARG[:ARG]]
followed by comma-separated flags:

  ok                 exit 0
  exit:CODE[:DELAY]  sleep DELAY seconds (default 0), exit CODE
  sleep:SECONDS      sleep
  kill:SIGNUM        kill itself with SIGNUM
  env                write the launcher's variables and facts about NSIGHTKIT_RENDEZVOUS to
                     OUTDIR/env.<rank>.json
  spam:LINES:LENGTH  write LINES lines of LENGTH copies of its rank digit to stdout and to stderr,
                     each line in two write() calls, so that only whole-line forwarding keeps it whole
  serve:DELAY:TEXT   the bootstrap pattern, rank 0's side: after DELAY s, publish TEXT as
                     NSIGHTKIT_RENDEZVOUS/bootstrap (temporary name, then rename)
  fetch              the other side: poll for that file up to NSIGHTKIT_START_TIMEOUT seconds, print
                     what it holds; exit 1 with a message naming rank 0 if it never comes
  trap               wait up to 60 s for SIGINT or SIGTERM, write its name to OUTDIR/signal.<rank>,
                     exit 0

flags (any action):
  child              first start a child process that sleeps 60 s (outliving a short-lived rank)
                     and write its pid to OUTDIR/child.<rank>
  ignore-term        ignore SIGTERM (the child too)
"""
import json
import os
import signal
import stat
import subprocess
import sys
import time


def publish(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)  # atomic: readers see nothing or everything


def main():
    outdir = sys.argv[1]
    actions = sys.argv[2:]
    rank = int(os.environ["RANK"])
    spec = actions[min(rank, len(actions) - 1)].split(",")
    name, *params = spec[0].split(":")
    flags = set(spec[1:])
    if "ignore-term" in flags:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    caught = []
    if name == "trap":
        def record(sig, _frame):
            caught.append(sig)
        signal.signal(signal.SIGINT, record)
        signal.signal(signal.SIGTERM, record)
    if "child" in flags:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        publish(os.path.join(outdir, f"child.{rank}"), str(child.pid))
    publish(os.path.join(outdir, f"pid.{rank}"), str(os.getpid()))
    world = int(os.environ["WORLD_SIZE"])
    t0 = time.monotonic()
    while not all(os.path.exists(os.path.join(outdir, f"pid.{r}")) for r in range(world)):
        if time.monotonic() - t0 > 30:
            break
        time.sleep(0.01)

    if name == "ok":
        return 0
    if name == "exit":
        time.sleep(float(params[1]) if len(params) > 1 else 0.0)
        return int(params[0])
    if name == "sleep":
        time.sleep(float(params[0]))
        return 0
    if name == "kill":
        os.kill(os.getpid(), int(params[0]))
        time.sleep(10)
        return 0
    if name == "env":
        rdv = os.environ.get("NSIGHTKIT_RENDEZVOUS", "")
        facts = {k: os.environ.get(k) for k in (
            "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NSIGHTKIT_RENDEZVOUS",
            "NSIGHTKIT_START_TIMEOUT", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
            "NVSHMEM_DISABLE_NVLS", "NSK_TEST_EXTRA", "CUDA_VISIBLE_DEVICES")}
        facts["rendezvous_is_dir"] = os.path.isdir(rdv)
        facts["rendezvous_mode"] = stat.S_IMODE(os.stat(rdv).st_mode) if os.path.isdir(rdv) else None
        facts["pid"] = os.getpid()
        facts["pgid"] = os.getpgid(0)
        publish(os.path.join(outdir, f"env.{rank}.json"), json.dumps(facts))
        return 0
    if name == "spam":
        lines, length = int(params[0]), int(params[1])
        body = str(rank % 10).encode() * length
        half = length // 2
        for i in range(lines):
            fd = 1 if i % 2 == 0 else 2
            os.write(fd, body[:half])
            if i % 7 == 0:
                time.sleep(0.001)  # let other ranks' lines in between the two halves
            os.write(fd, body[half:] + b"\n")
        return 0
    if name == "serve":
        time.sleep(float(params[0]))
        publish(os.path.join(os.environ["NSIGHTKIT_RENDEZVOUS"], "bootstrap"), params[1])
        print("published the bootstrap data", flush=True)
        return 0
    if name == "fetch":
        path = os.path.join(os.environ["NSIGHTKIT_RENDEZVOUS"], "bootstrap")
        limit = float(os.environ["NSIGHTKIT_START_TIMEOUT"])
        t0 = time.monotonic()
        while not os.path.exists(path):
            if time.monotonic() - t0 > limit:
                print(f"rank {rank}: no bootstrap data from rank 0 in {path} after {limit:g} s; "
                      "giving up", file=sys.stderr, flush=True)
                return 1
            time.sleep(0.02)
        with open(path) as f:
            print(f"got bootstrap data: {f.read()}", flush=True)
        return 0
    if name == "trap":
        t0 = time.monotonic()
        while not caught and time.monotonic() - t0 < 60:
            time.sleep(0.02)
        publish(os.path.join(outdir, f"signal.{rank}"),
                signal.Signals(caught[0]).name if caught else "none")
        return 0
    print(f"fake_rank.py: unknown action {name!r}", file=sys.stderr)
    return 99


if __name__ == "__main__":
    sys.exit(main())
