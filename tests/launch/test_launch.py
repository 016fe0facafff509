#!/usr/bin/env python3
"""Tests of tools/nsightkit_launch.py, run by ctest (tests/launch.cmake: one entry per test_ method).

  test_launch.py [LaunchTest.test_name ...]

Fake rank programs (fake_rank.py) stand in for GPU programs. Time bounds are generous upper
limits that prove "does not hang", never speed assertions.
"""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.environ.get("NSK_LAUNCHER",
                          os.path.join(HERE, os.pardir, os.pardir, "tools", "nsightkit_launch.py"))
FAKE = os.path.join(HERE, "fake_rank.py")
BOUND_S = 20.0  # "returns promptly": far above what any of these runs needs


def gone(pid, within=5.0):
    """True once `pid` no longer runs (a zombie counts as gone: init may be slow to reap it)."""
    deadline = time.monotonic() + within
    while True:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
            if state in (b"Z", b"X"):
                return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


class LaunchTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="nsk-launch-test-")
        self.out = self.tmp.name
        self.started = []  # launcher processes of this test, ended in tearDown if still running

    def tearDown(self):
        for p in self.started:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.tmp.cleanup()

    # ---- helpers ----
    def launch(self, opts, actions, env=None, program=None):
        """Runs the launcher to its end; returns (exit status, stdout, stderr, seconds)."""
        cmd = [sys.executable, LAUNCHER] + opts + ["--"]
        cmd += program if program is not None else [sys.executable, FAKE, self.out] + actions
        full_env = dict(os.environ)
        for k, v in (env or {}).items():
            if v is None:
                full_env.pop(k, None)
            else:
                full_env[k] = v
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env,
                           timeout=60)
        return (p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"),
                time.monotonic() - t0)

    def spawn(self, opts, actions):
        p = subprocess.Popen([sys.executable, LAUNCHER] + opts + ["--", sys.executable, FAKE, self.out]
                             + actions, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.started.append(p)
        return p

    def wait_for_line(self, pipe, text, within=10.0):
        """Reads `pipe` until a line contains `text` (bounded)."""
        deadline = time.monotonic() + within
        buf = b""
        while text.encode() not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([pipe], [], [], left)[0]:
                self.fail(f"no line with {text!r} within {within} s; got {buf.decode()!r}")
            chunk = os.read(pipe.fileno(), 4096)
            if not chunk:
                self.fail(f"end of output before a line with {text!r}; got {buf.decode()!r}")
            buf += chunk

    def read(self, name, within=10.0):
        """A file a rank writes (waits for it, bounded)."""
        path = os.path.join(self.out, name)
        deadline = time.monotonic() + within
        while not os.path.exists(path):
            if time.monotonic() >= deadline:
                self.fail(f"{name} never appeared in {within} s")
            time.sleep(0.02)
        with open(path) as f:
            return f.read()

    def assert_no_traceback(self, text):
        self.assertNotIn("Traceback", text)

    def check_success(self, nproc):
        rc, out, err, _ = self.launch(["--nproc", str(nproc)], ["env"],
                                      env={"NCCL_NVLS_ENABLE": "1", "NSIGHTKIT_START_TIMEOUT": None})
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "", "nothing from the launcher when every rank succeeds")
        facts = [json.loads(self.read(f"env.{r}.json")) for r in range(nproc)]
        rdv = facts[0]["NSIGHTKIT_RENDEZVOUS"]
        self.assertTrue(rdv and os.path.isabs(rdv))
        pgids = set()
        for r, f in enumerate(facts):
            self.assertEqual(f["RANK"], str(r))
            self.assertEqual(f["LOCAL_RANK"], str(r))
            self.assertEqual(f["WORLD_SIZE"], str(nproc))
            self.assertEqual(f["LOCAL_WORLD_SIZE"], str(nproc))
            self.assertEqual(f["NSIGHTKIT_RENDEZVOUS"], rdv, "one directory for all ranks")
            self.assertTrue(f["rendezvous_is_dir"], "the directory exists while the ranks run")
            self.assertEqual(f["rendezvous_mode"] & 0o077, 0, "private to the user")
            # The environment said 1; the launcher keeps NVLink multicast off regardless.
            self.assertEqual(f["NCCL_NVLS_ENABLE"], "0")
            self.assertEqual(f["TORCH_SYMM_MEM_DISABLE_MULTICAST"], "1")
            self.assertEqual(f["NVSHMEM_DISABLE_NVLS"], "1")
            self.assertEqual(f["NSIGHTKIT_START_TIMEOUT"], "60", "the default")
            self.assertEqual(f["pgid"], f["pid"], "each rank leads its own process group")
            pgids.add(f["pgid"])
        self.assertEqual(len(pgids), nproc)
        self.assertFalse(os.path.exists(rdv), "the temporary rendezvous directory is removed")

    # ---- success ----
    def test_two_ranks_succeed(self):
        self.check_success(2)

    def test_three_ranks_succeed(self):
        self.check_success(3)

    def test_env_option_and_start_timeout(self):
        rc, _, err, _ = self.launch(["-n", "2", "--env", "NCCL_NVLS_ENABLE=1", "--env", "NSK_TEST_EXTRA=a=b",
                                     "--start-timeout", "7.5"], ["env"],
                                    env={"CUDA_VISIBLE_DEVICES": "3,5"})
        self.assertEqual(rc, 0, err)
        for r in range(2):
            f = json.loads(self.read(f"env.{r}.json"))
            self.assertEqual(f["NCCL_NVLS_ENABLE"], "1", "an explicit --env is the one override")
            self.assertEqual(f["TORCH_SYMM_MEM_DISABLE_MULTICAST"], "1")
            self.assertEqual(f["NSK_TEST_EXTRA"], "a=b")
            self.assertEqual(f["NSIGHTKIT_START_TIMEOUT"], "7.5")
            self.assertEqual(f["CUDA_VISIBLE_DEVICES"], "3,5", "left as the user set it")

    def test_output_prefixed_and_whole_lines(self):
        lines, length = 200, 3000
        rc, out, err, _ = self.launch(["--nproc", "3"], ["spam:%d:%d" % (lines, length)])
        self.assertEqual(rc, 0, err[-2000:])
        for stream, text, parity in (("stdout", out, 0), ("stderr", err, 1)):
            counts = {}
            for line in text.splitlines():
                m = re.fullmatch(r"\[rank (\d)\] (\d+)", line)
                self.assertIsNotNone(m, f"{stream}: torn or unprefixed line {line[:80]!r}...")
                rank, body = m.group(1), m.group(2)
                self.assertEqual(body, rank * length, f"{stream}: a line of rank {rank} is mixed")
                counts[rank] = counts.get(rank, 0) + 1
            expected = len([i for i in range(lines) if i % 2 == parity])
            self.assertEqual(counts, {"0": expected, "1": expected, "2": expected}, stream)

    def test_no_prefix_and_quiet_ranks(self):
        rc, out, err, _ = self.launch(["--nproc", "2", "--no-prefix"], ["spam:4:10"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(out.splitlines()), ["0" * 10] * 2 + ["1" * 10] * 2)
        rc, out, err, _ = self.launch(["--nproc", "3", "--quiet-ranks"], ["spam:4:10"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines(), ["[rank 0] " + "0" * 10] * 2, "only rank 0's stdout")
        self.assertEqual(sorted(err.splitlines()),
                         sorted(f"[rank {r}] {str(r) * 10}" for r in range(3) for _ in range(2)),
                         "every rank's stderr")

    def test_verbose_summary_on_success(self):
        rc, _, err, _ = self.launch(["--nproc", "2", "--verbose"], ["ok"])
        self.assertEqual(rc, 0, err)
        self.assertRegex(err, r"starting 2 rank\(s\) of ")
        for r in range(2):
            self.assertRegex(err, rf"summary: rank {r} \(pid \d+\): exited with code 0 after [\d.]+ s\n")

    # ---- faults ----
    def test_failing_rank_stops_the_others(self):
        # Rank 0 (and a child it started) would run for 60 s; rank 1 exits 3 after 0.3 s.
        rc, _, err, secs = self.launch(["--nproc", "2"], ["sleep:60,child", "exit:3:0.3"])
        self.assertEqual(rc, 3, err)
        self.assertLess(secs, BOUND_S)
        self.assertRegex(err, r"nsightkit_launch: rank 1 \(pid \d+\) exited with code 3 after [\d.]+ s; "
                              r"stopping the other ranks\n")
        self.assertRegex(err, r"summary: rank 1 \(pid \d+\): exited with code 3 .*first failure")
        self.assertRegex(err, r"summary: rank 0 \(pid \d+\): was killed by signal 15 \(SIGTERM\)")
        self.assertTrue(gone(int(self.read("pid.0"))), "rank 0 was stopped")
        self.assertTrue(gone(int(self.read("child.0"))), "the signal reached rank 0's process group")
        self.assert_no_traceback(err)

    def test_rank_ignoring_sigterm_is_killed_after_grace(self):
        rc, _, err, secs = self.launch(["--nproc", "2", "--grace", "0.5"],
                                       ["sleep:60,child,ignore-term", "exit:1:0.3"])
        self.assertEqual(rc, 1, err)
        self.assertLess(secs, BOUND_S)
        self.assertRegex(err, r"rank 0 \(pid \d+\) still running 0.5 s after SIGTERM; sending SIGKILL")
        self.assertRegex(err, r"summary: rank 0 \(pid \d+\): was killed by signal 9 \(SIGKILL\)")
        self.assertTrue(gone(int(self.read("pid.0"))))
        self.assertTrue(gone(int(self.read("child.0"))))

    def test_rank_killed_by_signal(self):
        rc, _, err, secs = self.launch(["--nproc", "2"], ["sleep:60", "kill:9"])
        self.assertEqual(rc, 128 + 9, err)
        self.assertLess(secs, BOUND_S)
        self.assertRegex(err, r"rank 1 \(pid \d+\) was killed by signal 9 \(SIGKILL\) after [\d.]+ s; "
                              r"stopping the other ranks")
        self.assertTrue(gone(int(self.read("pid.0"))))

    def test_child_left_behind_by_a_successful_rank_is_stopped(self):
        # The child holds the rank's output pipe open: the launcher must neither hang nor leave it.
        rc, _, err, secs = self.launch(["--nproc", "1", "--grace", "1"], ["sleep:0.2,child"])
        self.assertEqual(rc, 0, err)
        self.assertLess(secs, BOUND_S)
        self.assertRegex(err, r"rank 0 exited but left processes running in its process group "
                              r"\(pids \d+\); stopping them")
        self.assertTrue(gone(int(self.read("child.0"))))

    def test_program_not_found(self):
        missing = os.path.join(self.out, "no-such-program")
        rc, out, err, _ = self.launch(["--nproc", "2"], [], program=[missing, "--flag"])
        self.assertEqual(rc, 127)
        self.assertIn(f"cannot start rank 0: program '{missing}' not found", err)
        self.assert_no_traceback(err)
        rc, _, err, _ = self.launch(["--nproc", "2"], [], program=["nsk-no-such-program-on-path"])
        self.assertEqual(rc, 127)
        self.assertIn("program 'nsk-no-such-program-on-path' not found (searched PATH)", err)
        self.assert_no_traceback(err)

    def test_program_not_executable(self):
        script = os.path.join(self.out, "not-executable.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(script, 0o644)
        rc, _, err, _ = self.launch(["--nproc", "2"], [], program=[script])
        self.assertEqual(rc, 126)
        self.assertRegex(err, rf"cannot start rank 0: program '{re.escape(script)}' cannot be executed: ")
        self.assert_no_traceback(err)

    def test_timeout_stops_ranks_and_names_them(self):
        rc, _, err, secs = self.launch(["--nproc", "2", "--timeout", "3", "--grace", "1"],
                                       ["sleep:3600", "ok"])
        self.assertEqual(rc, 124, err)
        self.assertLess(secs, BOUND_S)
        self.assertRegex(err, r"--timeout 3 s reached; ranks still running: 0 \(pid \d+\); stopping them")
        self.assertNotRegex(err, r"still running: .*\b1 \(pid", "rank 1 had finished")
        self.assertTrue(gone(int(self.read("pid.0"))))

    def test_bad_usage(self):
        cases = [
            (["--nproc", "0", "--", "true"], r"--nproc.*expected 1 to \d+ ranks, got 0"),
            (["--nproc", "abc", "--", "true"], r"--nproc.*expected a whole number of ranks, got 'abc'"),
            (["--nproc", "-1", "--", "true"], r"--nproc"),
            (["--nproc", "2"], r"missing the program to run"),
            (["--nproc", "2", "--"], r"missing the program to run"),
            (["--", "true"], r"required: -n/--nproc"),
            (["--nproc", "2", "--timeout", "0", "--", "true"], r"--timeout.*positive number of seconds"),
            (["--nproc", "2", "--grace", "soon", "--", "true"], r"--grace.*expected a number of seconds"),
            (["--nproc", "2", "--env", "NOEQUALS", "--", "true"], r"--env.*expected NAME=VALUE, got 'NOEQUALS'"),
            (["--nproc", "2", "--env", "RANK=3", "--", "true"], r"--env.*RANK is set by the launcher"),
            (["--nproc", "2", "--frobnicate", "--", "true"], r"unrecognized arguments: --frobnicate"),
        ]
        for argv, pattern in cases:
            with self.subTest(argv=argv):
                p = subprocess.run([sys.executable, LAUNCHER] + argv, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, timeout=30)
                err = p.stderr.decode()
                self.assertEqual(p.returncode, 2, err)
                self.assertRegex(err, pattern)
                self.assert_no_traceback(err)

    def test_program_arguments_pass_through(self):
        # "--" and option-like words after PROGRAM belong to it, with or without a leading "--".
        probe = "import sys; print(sys.argv[1:])"
        for lead in (["--"], []):
            with self.subTest(lead=lead):
                p = subprocess.run([sys.executable, LAUNCHER, "-n", "1"] + lead +
                                   [sys.executable, "-c", probe, "--nproc", "7", "--", "x"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
                self.assertEqual(p.returncode, 0, p.stderr.decode())
                self.assertEqual(p.stdout.decode(), "[rank 0] ['--nproc', '7', '--', 'x']\n")

    # ---- the bootstrap pattern through NSIGHTKIT_RENDEZVOUS ----
    def test_rendezvous_exchange(self):
        rc, out, err, _ = self.launch(["--nproc", "3"], ["serve:0.5:tcp-port 45678", "fetch"])
        self.assertEqual(rc, 0, err)
        self.assertIn("[rank 0] published the bootstrap data\n", out)
        self.assertIn("[rank 1] got bootstrap data: tcp-port 45678\n", out)
        self.assertIn("[rank 2] got bootstrap data: tcp-port 45678\n", out)

    def test_rendezvous_missing_peer_fails_within_start_timeout(self):
        # Rank 0 never publishes: rank 1 gives up after --start-timeout, and that stops the run.
        rc, _, err, secs = self.launch(["--nproc", "2", "--start-timeout", "1", "--grace", "1"],
                                       ["sleep:60", "fetch"])
        self.assertEqual(rc, 1, err)
        self.assertLess(secs, BOUND_S)
        self.assertRegex(err, r"\[rank 1\] rank 1: no bootstrap data from rank 0 in .* after 1 s")
        self.assertRegex(err, r"rank 1 \(pid \d+\) exited with code 1 after")
        self.assertTrue(gone(int(self.read("pid.0"))))

    def test_rendezvous_option_and_keep(self):
        given = os.path.join(self.out, "rdv")
        rc, _, err, _ = self.launch(["--nproc", "2", "--rendezvous", given], ["env"])
        self.assertEqual(rc, 0, err)
        f = json.loads(self.read("env.1.json"))
        self.assertEqual(f["NSIGHTKIT_RENDEZVOUS"], given)
        self.assertTrue(os.path.isdir(given), "a given directory is kept")
        with open(os.path.join(given, "stale"), "w") as fh:
            fh.write("from an earlier run")
        rc, _, err, _ = self.launch(["--nproc", "2", "--rendezvous", given], ["env"])
        self.assertEqual(rc, 2)
        self.assertIn(f"--rendezvous {given}: directory is not empty", err)

        rc, _, err, _ = self.launch(["--nproc", "2", "--keep-rendezvous"], ["serve:0:x", "ok"])
        self.assertEqual(rc, 0, err)
        m = re.search(r"rendezvous directory kept: (\S+)\n", err)
        self.assertIsNotNone(m, err)
        try:
            with open(os.path.join(m.group(1), "bootstrap")) as fh:
                self.assertEqual(fh.read(), "x")
        finally:
            shutil.rmtree(m.group(1), ignore_errors=True)

    # ---- signals to the launcher ----
    def check_forwarded(self, sig):
        p = self.spawn(["--nproc", "2"], ["trap"])
        for r in range(2):
            self.read(f"pid.{r}")  # both ranks run and have their handlers installed
        p.send_signal(sig)
        _, err = p.communicate(timeout=BOUND_S)
        err = err.decode()
        self.assertEqual(p.returncode, 128 + sig, err)
        self.assertIn(f"got {signal.Signals(sig).name}; forwarding it to the ranks", err)
        for r in range(2):
            self.assertEqual(self.read(f"signal.{r}"), signal.Signals(sig).name)

    def test_sigint_forwarded(self):
        self.check_forwarded(signal.SIGINT)

    def test_sigterm_forwarded(self):
        self.check_forwarded(signal.SIGTERM)

    def test_second_signal_kills_at_once(self):
        p = self.spawn(["--nproc", "2", "--grace", "60"], ["sleep:60,ignore-term"])
        for r in range(2):
            self.read(f"pid.{r}")
        p.send_signal(signal.SIGTERM)
        self.wait_for_line(p.stderr, "got SIGTERM; forwarding it to the ranks")
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=BOUND_S)  # well before the 60 s grace
        err = err.decode()
        self.assertEqual(p.returncode, 128 + signal.SIGTERM, err)
        self.assertIn("got SIGTERM again; sending SIGKILL now", err)
        for r in range(2):
            self.assertTrue(gone(int(self.read(f"pid.{r}"))))

    def test_launcher_is_an_executable_script(self):
        self.assertTrue(os.access(LAUNCHER, os.X_OK), f"{LAUNCHER} is not executable")
        with open(LAUNCHER) as f:
            self.assertEqual(f.readline(), "#!/usr/bin/env python3\n")
        p = subprocess.run([sys.executable, LAUNCHER, "--help"], stdout=subprocess.PIPE, timeout=30)
        self.assertEqual(p.returncode, 0)
        text = p.stdout.decode()
        for word in ("--nproc", "--timeout", "--grace", "NSIGHTKIT_RENDEZVOUS", "NCCL_NVLS_ENABLE=0",
                     "exit status"):
            self.assertIn(word, text)


if __name__ == "__main__":
    unittest.main()
