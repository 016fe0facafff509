#!/usr/bin/env python3
"""nsightkit_launch: start one process per GPU ("rank") on this host, without MPI.

  nsightkit_launch.py --nproc N [options] -- PROGRAM [ARGS...]

Like `torchrun --standalone`, for any program: every rank gets RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE and NSIGHTKIT_RENDEZVOUS (a private directory the ranks share for their bootstrap
data), its output is forwarded line by line with a "[rank N] " prefix, and a rank that fails
stops the whole run with one clear line instead of leaving the others waiting forever.
Standard library only (Python 3.8+); Linux (it uses process groups and /proc).
See docs/multi-gpu.md ("Launching ranks"), and --help.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

PROG = "nsightkit_launch"
MAX_RANKS = 1024            # a typo (--nproc 20000) must not fork thousands of processes
POLL_S = 0.05               # how often the ranks' states are checked
KILL_WAIT_S = 5.0           # after SIGKILL, how long to wait for a process before giving up on it
DRAIN_WAIT_S = 2.0          # after the ranks ended, how long to wait for the rest of their output
LINE_LIMIT = 1 << 20        # longer lines are forwarded in pieces of this size, each prefixed
DEFAULT_GRACE_S = 10.0
DEFAULT_START_TIMEOUT_S = 60.0

# Exit statuses of the launcher itself (a rank's own failure is propagated as it is).
EXIT_USAGE = 2              # bad command line, unusable rendezvous directory
EXIT_CANNOT_EXECUTE = 126   # PROGRAM exists but cannot be executed (as in a shell)
EXIT_NOT_FOUND = 127        # PROGRAM not found (as in a shell)
EXIT_TIMEOUT = 124          # --timeout reached (as coreutils' timeout)

# Set by the launcher for each rank; --env cannot set them.
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NSIGHTKIT_RENDEZVOUS",
                 "NSIGHTKIT_START_TIMEOUT")

# NVLink multicast (NVLS) stays off. On the shared multi-GPU machines this project runs on, a
# program that uses multicast objects can put the host's GPUs, which other users share, out of
# service for a day or more; NCCL turns NVLS on by itself on NVSwitch systems, so "not asking for
# it" is not enough. The ranks always get these values, whatever the launching environment says,
# unless the user asks otherwise explicitly with --env (e.g. on a machine of their own).
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

DESCRIPTION = """\
Starts N copies of PROGRAM on this host, one per GPU ("rank"), without MPI, and watches them:
the run ends when every rank has exited, or as soon as one fails (the others are then stopped).
"""

EPILOG = f"""\
environment of each rank:
  RANK, LOCAL_RANK          0 .. N-1 (one host: the same); use LOCAL_RANK as the CUDA device
  WORLD_SIZE, LOCAL_WORLD_SIZE
                            N
  NSIGHTKIT_RENDEZVOUS      a directory shared by the ranks for bootstrap data (rank 0 writes
                            e.g. an NCCL unique id to a temporary name there and renames it; the
                            others poll for the final name). Private (mode 0700), created empty
                            for the run and removed at its end unless --rendezvous/--keep-rendezvous.
  NSIGHTKIT_START_TIMEOUT   --start-timeout: how long a rank waits for another's bootstrap data
  NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1
                            NVLink multicast off (it can take shared GPU hosts out of service),
                            even if set otherwise in the environment; only --env overrides them.
  CUDA_VISIBLE_DEVICES is not changed: every rank sees every GPU and picks LOCAL_RANK.

output:
  Each rank's standard output and error go to the launcher's, a whole line at a time, prefixed
  "[rank N] ". Through a pipe, C stdio buffers a program's stdout in blocks: flush it (std::endl,
  fflush) or call setvbuf(stdout, nullptr, _IOLBF, 0) to see lines as they are written.

faults:
  A rank that exits non-zero or is killed by a signal stops the run: one line names it, the
  other ranks get SIGTERM, and SIGKILL after --grace seconds. Each rank runs in its own process
  group (and session), so these signals also reach the processes it started. Ctrl-C (SIGINT),
  SIGTERM or SIGHUP to the launcher is forwarded to the ranks in the same way (twice: SIGKILL now).
  Processes a rank leaves running in its group after it exited are stopped the same way.
  No wait is unbounded, except the run itself when no --timeout is given.

exit status:
  0        every rank exited with 0
  1-255    the first failing rank's exit code, or 128+SIGNAL if a signal killed it
  124      --timeout reached
  126/127  PROGRAM could not be executed / was not found
  128+SIG  the launcher got SIGINT (130), SIGTERM (143) or SIGHUP (129)
  2        bad usage (also: unusable --rendezvous directory)
"""


def positive_int_ranks(text):
    try:
        n = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of ranks, got {text!r}") from None
    if not 1 <= n <= MAX_RANKS:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_RANKS} ranks, got {n}")
    return n


def seconds(allow_zero):
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
        if v != v or v in (float("inf"), float("-inf")) or v < 0 or (v == 0 and not allow_zero):
            what = "zero or more" if allow_zero else "a positive number of"
            raise argparse.ArgumentTypeError(f"expected {what} seconds, got {text!r}")
        return v
    return parse


def env_assignment(text):
    key, sep, value = text.partition("=")
    if not sep or not ENV_NAME.match(key):
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    if key in LAUNCHER_VARS:
        hint = " (use --start-timeout)" if key == "NSIGHTKIT_START_TIMEOUT" else ""
        raise argparse.ArgumentTypeError(f"{key} is set by the launcher for each rank{hint}")
    return key, value


def build_parser():
    p = argparse.ArgumentParser(
        prog=PROG, description=DESCRIPTION, epilog=EPILOG,
        usage=f"{PROG} --nproc N [options] -- PROGRAM [ARGS...]",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--nproc", "--nproc-per-node", dest="nproc", metavar="N", required=True,
                   type=positive_int_ranks, help=f"number of ranks to start (1 to {MAX_RANKS})")
    p.add_argument("--timeout", metavar="SECONDS", type=seconds(False),
                   help="stop every rank and exit 124 if the run lasts longer (default: no limit)")
    p.add_argument("--start-timeout", metavar="SECONDS", type=seconds(False),
                   help="exported as NSIGHTKIT_START_TIMEOUT: how long a rank waits for another "
                        "rank's bootstrap data (default: the environment's NSIGHTKIT_START_TIMEOUT, "
                        f"else {DEFAULT_START_TIMEOUT_S:g})")
    p.add_argument("--grace", metavar="SECONDS", type=seconds(True), default=DEFAULT_GRACE_S,
                   help="when stopping ranks, time between SIGTERM (or the forwarded signal) "
                        f"and SIGKILL (default: {DEFAULT_GRACE_S:g})")
    p.add_argument("--rendezvous", metavar="DIR",
                   help="use DIR (created if missing, must be empty) as NSIGHTKIT_RENDEZVOUS and keep "
                        "it; default: a fresh private temporary directory, removed at the end")
    p.add_argument("--keep-rendezvous", action="store_true",
                   help="keep the temporary rendezvous directory (its path is printed at the end)")
    p.add_argument("--env", metavar="NAME=VALUE", action="append", type=env_assignment, default=[],
                   help="set a variable for every rank (repeatable); the only way to change "
                        "NCCL_NVLS_ENABLE and the other multicast switches")
    p.add_argument("--no-prefix", action="store_true",
                   help='forward output lines without the "[rank N] " prefix (still whole lines)')
    p.add_argument("--quiet-ranks", action="store_true",
                   help="drop the standard output of ranks other than 0 (standard error is kept)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="say what is started, and print the per-rank summary even on success")
    p.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


def parse_args(argv):
    parser = build_parser()
    # Everything after the first "--" belongs to the program (a later "--" is one of its arguments).
    # Without "--", the first non-option word starts the program.
    if "--" in argv:
        i = argv.index("--")
        args = parser.parse_args(argv[:i])
        args.command = args.command + argv[i:] if args.command else argv[i + 1:]
    else:
        args = parser.parse_args(argv)
    if not args.command:
        parser.error(f"missing the program to run: {PROG} --nproc N [options] -- PROGRAM [ARGS...]")
    if args.rendezvous is not None and args.keep_rendezvous:
        parser.error("--keep-rendezvous is for the temporary directory; a --rendezvous DIR is always kept")
    return parser, args


def signal_name(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def group_members(pgids):
    """Live (non-zombie) processes in each of the process groups `pgids`, from /proc."""
    found = {g: [] for g in pgids}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found  # no /proc: only the rank processes themselves are tracked
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue  # exited meanwhile
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = data[data.rfind(b")") + 2:].split()
        if len(fields) < 3 or fields[0] in (b"Z", b"X"):
            continue
        pgrp = int(fields[2])
        if pgrp in found:
            found[pgrp].append(int(name))
    return found


class Rank:
    def __init__(self, index):
        self.index = index
        self.proc = None
        self.pid = None
        self.started = None      # time.monotonic() at start
        self.ended = None        # when its exit was seen
        self.how = None          # ("code", n) or ("signal", n)
        self.readers = []
        self.gave_up = False     # still there after SIGKILL and KILL_WAIT_S

    def name(self):
        return f"rank {self.index} (pid {self.pid})"

    def poll(self):
        """Notices the rank's exit without reaping it: while it stays a zombie its pid (= its process
        group's id) cannot be reused, so signalling its group later can never hit a stranger."""
        if self.how is not None or self.proc is None:
            return
        try:
            st = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            # Reaped behind our back (nothing here does that): its status may be lost; count it
            # as a failure rather than wait forever for an exit that was already seen.
            rc = self.proc.returncode
            self.how = ("code", 255) if rc is None else ("code", rc) if rc >= 0 else ("signal", -rc)
            self.ended = time.monotonic()
            return
        if st is None:
            return
        self.ended = time.monotonic()
        if st.si_code == os.CLD_EXITED:
            self.how = ("code", st.si_status)
        else:
            self.how = ("signal", st.si_status)

    def failed(self):
        return self.how is not None and self.how != ("code", 0)

    def exit_status(self):
        kind, n = self.how
        return n if kind == "code" else 128 + n

    def describe(self):
        kind, n = self.how
        if kind == "code":
            return f"exited with code {n}"
        return f"was killed by signal {n} ({signal_name(n)})"

    def elapsed(self):
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    def signal_group(self, sig):
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class Launcher:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()   # one writer at a time: lines are never torn
        self.signals = []              # signals received by the launcher, in order
        self.ranks = [Rank(i) for i in range(args.nproc)]
        self.rendezvous = None
        self.remove_rendezvous = False
        self.start_timeout = args.start_timeout

    # ---- messages and output ----
    def say(self, msg):
        with self.lock:
            try:
                sys.stderr.write(f"{PROG}: {msg}\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass

    def pump(self, src, dst, prefix):
        """Forwards whole lines from a rank's pipe; reads to the end even if `dst` is gone, so the
        rank never blocks on a full pipe."""
        try:
            while True:
                line = src.readline(LINE_LIMIT)
                if not line:
                    break
                if not line.endswith(b"\n"):
                    line += b"\n"
                with self.lock:
                    try:
                        dst.write(prefix + line)
                        dst.flush()
                    except (OSError, ValueError):
                        pass  # e.g. our stdout is a closed pipe: drop the output, keep draining
        except (OSError, ValueError):
            pass
        finally:
            try:
                src.close()
            except OSError:
                pass

    # ---- set-up ----
    def resolve_start_timeout(self):
        if self.start_timeout is not None:
            return
        text = os.environ.get("NSIGHTKIT_START_TIMEOUT", "").strip()
        if not text:
            self.start_timeout = DEFAULT_START_TIMEOUT_S
            return
        try:
            self.start_timeout = seconds(False)(text)
        except argparse.ArgumentTypeError as e:
            raise SetupError(f"NSIGHTKIT_START_TIMEOUT={text!r} in the environment: {e}; "
                             "fix it, unset it, or pass --start-timeout") from None

    def make_rendezvous(self):
        a = self.args
        if a.rendezvous is not None:
            path = os.path.abspath(a.rendezvous)
            if os.path.exists(path):
                if not os.path.isdir(path):
                    raise SetupError(f"--rendezvous {a.rendezvous}: exists and is not a directory")
                if os.listdir(path):
                    raise SetupError(f"--rendezvous {a.rendezvous}: directory is not empty (files "
                                     "left from an earlier run would be read as this run's "
                                     "bootstrap data); empty it or leave --rendezvous out")
            else:
                try:
                    os.makedirs(path, mode=0o700)
                except OSError as e:
                    raise SetupError(f"--rendezvous {a.rendezvous}: cannot create it: {e.strerror}") from None
            self.rendezvous = path
        else:
            try:
                self.rendezvous = tempfile.mkdtemp(prefix="nsightkit-rendezvous-")
            except OSError as e:
                raise SetupError(f"cannot create a temporary rendezvous directory in "
                                 f"{tempfile.gettempdir()}: {e.strerror}") from None
            self.remove_rendezvous = not a.keep_rendezvous

    def rank_env(self, rank):
        a = self.args
        env = dict(os.environ)
        explicit = dict(a.env)
        for k, v in MULTICAST_OFF.items():
            if k not in explicit:
                env[k] = v
        env.update(explicit)
        env.update({
            "RANK": str(rank.index),
            "LOCAL_RANK": str(rank.index),
            "WORLD_SIZE": str(a.nproc),
            "LOCAL_WORLD_SIZE": str(a.nproc),
            "NSIGHTKIT_RENDEZVOUS": self.rendezvous,
            "NSIGHTKIT_START_TIMEOUT": f"{self.start_timeout:g}",
        })
        return env

    def start(self, rank):
        a = self.args
        quiet = a.quiet_ranks and rank.index != 0
        rank.started = time.monotonic()
        # start_new_session: the rank leads its own process group (so a signal to the group reaches
        # its children) and has no controlling terminal (so a Ctrl-C reaches only the launcher,
        # which forwards it once, to every rank). stdin is not shared: N readers of one terminal
        # would steal each other's input.
        rank.proc = subprocess.Popen(
            a.command, env=self.rank_env(rank), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL if quiet else subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
        rank.pid = rank.proc.pid
        prefix = b"" if a.no_prefix else f"[rank {rank.index}] ".encode()
        streams = [(rank.proc.stderr, sys.stderr.buffer)]
        if not quiet:
            streams.insert(0, (rank.proc.stdout, sys.stdout.buffer))
        for src, dst in streams:
            t = threading.Thread(target=self.pump, args=(src, dst, prefix), daemon=True,
                                 name=f"rank{rank.index}-output")
            t.start()
            rank.readers.append(t)

    # ---- stopping ----
    def started_ranks(self):
        return [r for r in self.ranks if r.proc is not None]

    def alive(self):
        """Ranks still running, or whose process group still holds live processes."""
        ranks = self.started_ranks()
        for r in ranks:
            r.poll()
        members = group_members([r.pid for r in ranks])
        return [r for r in ranks if not r.gave_up and (r.how is None or members.get(r.pid))]

    def stop(self, sig, signals_seen=None):
        """Sends `sig` to every live rank's process group, SIGKILL after --grace seconds, or at once
        when the launcher gets a signal beyond the first `signals_seen` (default: those received so
        far). Returns within grace + KILL_WAIT_S."""
        signals_before = len(self.signals) if signals_seen is None else signals_seen
        for r in self.alive():
            r.signal_group(sig)
        deadline = time.monotonic() + self.args.grace
        while True:
            alive = self.alive()
            if not alive:
                return
            if len(self.signals) > signals_before:
                self.say(f"got {signal_name(self.signals[-1])} again; sending SIGKILL now")
                break
            if time.monotonic() >= deadline:
                for r in alive:
                    what = "still running" if r.how is None else "exited, but processes of its group are still running"
                    self.say(f"{r.name()} {what} {self.args.grace:g} s after {signal_name(sig)}; sending SIGKILL")
                break
            time.sleep(POLL_S)
        for r in alive:
            r.signal_group(signal.SIGKILL)
        deadline = time.monotonic() + KILL_WAIT_S
        while True:
            alive = self.alive()
            if not alive:
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        for r in alive:
            r.gave_up = True
            self.say(f"{r.name()} did not go away {KILL_WAIT_S:g} s after SIGKILL (stuck in the "
                     "kernel, e.g. in a GPU driver call?); giving up on it")

    # ---- the run ----
    def on_signal(self, sig, _frame):
        self.signals.append(sig)  # only recorded here: the main loop acts on it

    def run(self):
        a = self.args
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self.on_signal)
        self.resolve_start_timeout()
        self.make_rendezvous()
        if a.verbose:
            self.say(f"starting {a.nproc} rank(s) of {subprocess.list2cmdline(a.command)}; "
                     f"rendezvous directory {self.rendezvous}")
        t0 = time.monotonic()
        status = None
        for r in self.ranks:
            if self.signals:
                break
            try:
                self.start(r)
            except OSError as e:
                prog = a.command[0]
                if isinstance(e, FileNotFoundError):
                    where = "" if os.sep in prog else " (searched PATH)"
                    self.say(f"cannot start rank {r.index}: program {prog!r} not found{where}")
                    status = EXIT_NOT_FOUND
                else:
                    self.say(f"cannot start rank {r.index}: program {prog!r} cannot be executed: "
                             f"{e.strerror or e}")
                    status = EXIT_CANNOT_EXECUTE
                r.proc = None
                if self.started_ranks():
                    self.say("stopping the ranks already started")
                    self.stop(signal.SIGTERM)
                break
        first_failure = None
        timed_out = False
        while status is None:
            if self.signals:
                sig = self.signals[0]
                self.say(f"got {signal_name(sig)}; forwarding it to the ranks (SIGKILL after "
                         f"{a.grace:g} s, or at once on a second signal)")
                self.stop(sig, signals_seen=1)
                status = 128 + sig
                break
            for r in self.ranks:
                r.poll()
            failed = [r for r in self.ranks if r.failed()]
            if failed:
                first_failure = failed[0]  # several in one poll: the lowest rank
                others = [r for r in self.ranks if r.how is None]
                tail = "; stopping the other ranks" if others else ""
                self.say(f"{first_failure.name()} {first_failure.describe()} after "
                         f"{first_failure.elapsed():.1f} s{tail}")
                self.stop(signal.SIGTERM)
                status = first_failure.exit_status()
                break
            if all(r.how is not None for r in self.ranks):
                status = 0
                break
            if a.timeout is not None and time.monotonic() - t0 >= a.timeout:
                running = ", ".join(f"{r.index} (pid {r.pid})" for r in self.ranks if r.how is None)
                self.say(f"--timeout {a.timeout:g} s reached; ranks still running: {running}; stopping them")
                timed_out = True
                self.stop(signal.SIGTERM)
                status = EXIT_TIMEOUT
                break
            time.sleep(POLL_S)

        if status == 0:
            # Every rank exited 0; processes they left behind in their groups are strays of the run.
            members = group_members([r.pid for r in self.ranks])
            strays = [(r, members[r.pid]) for r in self.ranks if members.get(r.pid)]
            if strays:
                for r, pids in strays:
                    self.say(f"rank {r.index} exited but left processes running in its process group "
                             f"(pids {', '.join(map(str, pids))}); stopping them")
                self.stop(signal.SIGTERM)
        return self.finish(status, first_failure, timed_out)

    def finish(self, status, first_failure, timed_out):
        a = self.args
        # The rest of the output: bounded, since a process outside the rank's group (it called
        # setsid) may still hold the pipe open.
        deadline = time.monotonic() + DRAIN_WAIT_S
        stuck_output = []
        for r in self.started_ranks():
            for t in r.readers:
                t.join(max(0.0, deadline - time.monotonic()))
                if t.is_alive() and r not in stuck_output:
                    stuck_output.append(r)
        for r in stuck_output:
            self.say(f"the output of rank {r.index} is still held open by a process outside its "
                     "process group; not waiting for it")
        for r in self.started_ranks():
            r.poll()
            if r.how is not None:
                try:
                    r.proc.wait(timeout=1.0)  # reap (it is a zombie already)
                except subprocess.TimeoutExpired:
                    pass
        if self.remove_rendezvous:
            shutil.rmtree(self.rendezvous, ignore_errors=True)
        elif self.rendezvous is not None and a.keep_rendezvous:
            self.say(f"rendezvous directory kept: {self.rendezvous}")
        if status != 0 or a.verbose:
            for r in self.ranks:
                if r.proc is None:
                    self.say(f"summary: rank {r.index}: not started")
                    continue
                if r.how is None:
                    state = "still running (did not go away after SIGKILL)"
                else:
                    state = f"{r.describe()} after {r.elapsed():.1f} s"
                note = ""
                if r is first_failure:
                    note = " <- first failure"
                elif r.how is not None and r.how[0] == "signal" and status != 0:
                    note = " (stopped by the launcher)" if (first_failure or timed_out or self.signals) else ""
                self.say(f"summary: {r.name()}: {state}{note}")
        return status, bool(stuck_output)


class SetupError(Exception):
    pass


def main(argv=None):
    _, args = parse_args(sys.argv[1:] if argv is None else argv)
    launcher = Launcher(args)
    try:
        status, stuck = launcher.run()
    except SetupError as e:
        launcher.say(str(e))
        return EXIT_USAGE
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        pass
    if stuck:
        # Reader threads are blocked on pipes someone else holds; do not wait for them at exit.
        os._exit(status)
    return status


if __name__ == "__main__":
    sys.exit(main())
