#!/usr/bin/env python3
"""Tests of scripts/gpu/compare_cupti_ncu.py, which judges the report's CUPTI numbers per path
against Nsight Compute's, on crafted inputs: a summary as the report writes it and ncu's CSV
(`--nvtx --csv --metrics gpu__time_duration.sum`, the form of ncu 2025).

  test_compare_cupti_ncu.py [--script PATH/TO/compare_cupti_ncu.py] [unittest args]

The case that matters: a kernel NCCL's own thread launched is outside every range for ncu, while
the report counts it for the range that made its stream current (`delegated_kernels`). The
script takes it out of the report's per-path counts and times, does not judge busy time on such
paths, and compares the delegated total with ncu's kernels outside every range.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "gpu", "compare_cupti_ncu.py")

HEADER = ('"ID","Process ID","Process Name","Host Name","thread Domain:Push/Pop_Range:PL_Type:PL_Value:'
          'CLR_Type:Color:Msg_Type:Msg","Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:'
          'Msg_Type:Msg","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC",'
          '"Section Name","Metric Name","Metric Unit","Metric Value"')


def ncu_row(i, stack, kernel, stream, usecond):
    """One CSV row: `stack` the thread's nsightkit push/pop ranges, outermost first."""
    entries = "  ".join(f'""nsightkit:{n}:none:none:none:none:REGISTERED:{n}""' for n in stack)
    thread = f'"100  {entries} "' if stack else '"101 "'
    cells = [f'"{i}"', '"100"', '"train"', '"127.0.0.1"', thread, '" "', f'"{kernel}"', '"1"',
             f'"{stream}"', '"(256, 1, 1)"', '"(8, 1, 1)"', '"0"', '"9.0"', '"Command line profiler metrics"',
             '"gpu__time_duration.sum"', '"usecond"', f'"{usecond}"']
    return ",".join(cells)


def time_obj(count, total_ns):
    mean = total_ns / count if count else 0.0
    return {"count": count, "total_ns": total_ns, "mean_ns": mean, "min_ns": int(mean),
            "p50_ns": int(mean), "p95_ns": int(mean), "max_ns": int(mean), "exact": True}


def work(kernels, kernel_ns, busy_ns, delegated=0, delegated_ns=0):
    return {"kernels": kernels, "self_kernels": kernels, "kernel_ns": kernel_ns, "busy_ns": busy_ns,
            "self_busy_ns": busy_ns, "span_ns": busy_ns, "idle_ns": 0, "calls_with_work": 1,
            "streams": 1, "launch_latency": time_obj(kernels, 1000), "top_kernels": [],
            "allocations": 0, "allocated_bytes": 0, "freed_bytes": 0, "peak_bytes": 0,
            "delegated_kernels": delegated, "delegated_kernel_ns": delegated_ns}


def row(path, depth, gpu_work):
    r = {"path": path, "name": path.split("/")[-1], "domain": "nsightkit", "depth": depth}
    r.update(time_obj(1, 1_000_000))
    r["self_ns"] = 1_000_000
    r["gpu"] = None
    r["gpu_work"] = gpu_work
    return r


def summary(rows):
    return {"format": "nsightkit-report", "version": 1, "nsightkit_version": "0.1.0", "rank": 0,
            "pid": 100, "forked_from": None, "run_ns": 10_000_000, "captured_only": True,
            "paths": rows, "threads": [], "marks": [], "start_end_ranges": [],
            "gpu": {"source": "cupti", "records": 3, "records_delegated": 1}}


# ncu: backward's own GEMM (400 us), its conv (200 us), and NCCL's all-reduce kernel (150 us)
# launched by NCCL's thread, outside every range.
NCU = [HEADER,
       ncu_row(0, ["step 5", "backward"], "gemm", 14, "400"),
       ncu_row(1, ["step 5", "backward", "conv"], "conv", 14, "200"),
       ncu_row(2, [], "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 20, "150")]


def gpu_slice(ts_us, dur_us, name):
    """A kernel, copy or memset as the trace of a gpu=cupti run shows it (CUPTI's record)."""
    return {"ph": "X", "cat": "nsightkit gpu", "name": name, "pid": 1, "tid": 1342177280,
            "ts": ts_us, "dur": dur_us, "args": {"path": "?", "cpu_thread": 7}}


# CUPTI's records of NCU's three kernels, 1 us shorter each (as measured on the H100), in launch
# order, spelled as the C++ runtime demangles; a copy between them, which ncu does not profile.
TRACE = [gpu_slice(10.0, 399.0, "void ns::(anonymous namespace)::gemm<true>(float const*)"),
         gpu_slice(409.5, 0.5, "Memcpy HtoD"),
         gpu_slice(410.0, 199.0, "conv"),
         gpu_slice(415.0, 149.0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")]


class CompareTest(unittest.TestCase):
    def run_script(self, rows, trace=None):
        with tempfile.TemporaryDirectory() as d:
            rep = os.path.join(d, "cupti.json")
            ncu = os.path.join(d, "ncu.csv")
            with open(rep, "w") as f:
                json.dump(summary(rows), f)
            with open(ncu, "w") as f:
                f.write("\n".join(NCU) + "\n")
            extra = []
            if trace is not None:
                extra = ["--trace", os.path.join(d, "trace.json")]
                with open(extra[1], "w") as f:
                    json.dump({"traceEvents": trace}, f)
            p = subprocess.run([sys.executable, SCRIPT, "--report", rep, "--ncu", ncu] + extra,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return p

    def test_the_trace_gives_each_ncu_path_cuptis_records(self):
        # backward/conv: the report's 199 us is CUPTI's record of the kernel ncu puts there;
        # backward holds the delegated kernel and is not judged.
        rows = [row("backward", 0, work(3, 399_000 + 199_000 + 149_000, 1, 1, 149_000)),
                row("backward/allreduce bucket0", 1, work(1, 149_000, 149_000, 1, 149_000)),
                row("backward/conv", 1, work(1, 199_000, 199_000))]
        p = self.run_script(rows, TRACE)
        self.assertIn("CUPTI's records (trace): 3 kernel slices matched to ncu's kernels in launch "
                      "order, 3 with the same base name, 0 not", p.stdout)
        self.assertIn("CUPTI summed kernel time vs CUPTI's records per ncu path: 1/1 paths >= 100 us "
                      "within 2%, median |diff| 0.000%", p.stdout)
        self.assertIn("CUPTI busy vs CUPTI's records per ncu path: 1/1 paths", p.stdout)

    def test_a_kernel_given_to_the_wrong_path_differs_from_cuptis_records(self):
        # The report gives backward/conv the all-reduce's 149 us instead of the conv's 199 us.
        rows = [row("backward", 0, work(3, 747_000, 1, 1, 149_000)),
                row("backward/conv", 1, work(1, 149_000, 149_000))]
        p = self.run_script(rows, TRACE)
        self.assertIn("CUPTI summed kernel time vs CUPTI's records per ncu path: 0/1 paths", p.stdout)

    def test_a_trace_of_another_step_is_not_compared(self):
        rows = [row("backward", 0, work(2, 598_000, 598_000)),
                row("backward/conv", 1, work(1, 199_000, 199_000))]
        p = self.run_script(rows, TRACE[:2])
        self.assertIn("CUPTI's records (trace): 1 kernel slices for ncu's 3 kernels: not compared",
                      p.stdout)
        renamed = [TRACE[0], gpu_slice(410.0, 199.0, "other"), TRACE[3]]
        p = self.run_script(rows, renamed)
        self.assertIn("2 with the same base name, 1 not", p.stdout)

    def test_delegated_kernels_are_taken_out_and_matched_with_ncus_outside_ones(self):
        rows = [row("backward", 0, work(3, 396_000 + 198_000 + 150_000, 1, 1, 150_000)),
                row("backward/allreduce bucket0", 1, work(1, 150_000, 150_000, 1, 150_000)),
                row("backward/conv", 1, work(1, 198_000, 198_000))]
        p = self.run_script(rows)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("ncu: 3 kernels, 1 outside any nsightkit range", p.stdout)
        self.assertIn("kernel counts: 3 of 3 paths exact", p.stdout)
        self.assertIn("the report gave 1 to the ranges that made their streams current; ncu has 1 "
                      "outside any nsightkit range (equal)", p.stdout)
        # backward's summed kernel time without the NCCL kernel: 594 us against ncu's 600 us.
        self.assertIn("CUPTI summed kernel time vs ncu: 2/2 paths >= 100 us within 2%", p.stdout)
        # backward's busy (1 ns here) is not judged: it holds a delegated kernel.
        self.assertIn("CUPTI busy vs ncu: 1/1 paths >= 100 us within 2%", p.stdout)
        line = next(x for x in p.stdout.splitlines() if x.startswith("backward "))
        self.assertIn("(+1 delegated)", line)

    def test_a_report_without_the_delegated_kernel_differs(self):
        # The NCCL kernel unattributed, as before delegation: counts still match per path, and
        # the totals say the report gave none where ncu has one outside every range.
        rows = [row("backward", 0, work(2, 594_000, 594_000)),
                row("backward/conv", 1, work(1, 198_000, 198_000))]
        p = self.run_script(rows)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("the report gave 0 to the ranges that made their streams current; ncu has 1 "
                      "outside any nsightkit range (differ)", p.stdout)

    def test_a_delegated_kernel_counted_as_the_ranges_own_is_a_count_difference(self):
        # A report that counts NCCL's kernel for backward without saying it was delegated.
        rows = [row("backward", 0, work(3, 744_000, 744_000)),
                row("backward/conv", 1, work(1, 198_000, 198_000))]
        p = self.run_script(rows)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("kernel counts: 1 of 2 paths exact, 1 differ", p.stdout)


def main():
    global SCRIPT
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", default=SCRIPT)
    args, rest = ap.parse_known_args()
    SCRIPT = args.script
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
