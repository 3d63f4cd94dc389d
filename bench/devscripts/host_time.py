"""Session 8 (EXPERIMENTS.md D4): the host's share of one eager public call, FP16 route on
and off (ADAPTQR_FP16 toggled in-process: the route probe reads it at each call).

Per setting: 3 warm-up calls, then 7 calls timed as host enqueue time (perf_counter until
geqrf returns, GPU idle before) and whole-call time (until synchronized), medians; the
host time from the call's start to each of ``MARKS`` (medians of 5 calls); then one call
under cProfile (top functions by own time, then by cumulative time). Run there:
``python3 bench/devscripts/host_time.py [--shape 640x512] [--case clustered --cond 0] [--fp16 1]``.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import io
import os
import pstats
import statistics
import time

import torch

import adaptqr
from adaptqr.testing.generators import generate

#: Where the marks go: (label, module, function), each wrapped to note its first entry.
MARKS = [
    ("runner", "adaptqr.dispatch", "_Runner.__call__"),
    ("body", "adaptqr.dispatch", "_Runner.body"),
    ("probe", "adaptqr.detectors.route", "_route_triton"),
    ("codes", "adaptqr.detectors.route", "route_codes"),
    ("factor", "adaptqr.dispatch", "factor"),
    ("call", "adaptqr.dispatch", "_call"),
    ("path", "adaptqr.paths.householder", "_feature"),
    ("prescale", "adaptqr.paths.householder", "prescale"),
    ("blocked", "adaptqr.paths.householder", "_factor"),
    ("lanes", "adaptqr.paths.householder", "_lookahead_lanes"),
    ("Lanes", "adaptqr.paths.lanes", "Lanes.__init__"),
    ("fork", "adaptqr.paths.lanes", "Lanes.fork"),
    ("group", "adaptqr.paths.householder", "_group_panels"),
    ("panel", "adaptqr.paths.householder", "_panel"),
    ("cuda launch", "adaptqr.paths.kernels.panel_cuda", "launch"),
]


def _mark(marks: dict, name: str, module_name: str, fn: str):
    """Wrap ``module.fn`` (``fn`` may be ``Class.method``) to note the time of its first call
    in ``marks[name]``; returns what puts it back."""
    module = importlib.import_module(module_name)
    if "." in fn:
        cls, fn = fn.split(".")
        module = getattr(module, cls)
    orig = getattr(module, fn)

    def wrapped(*a, **k):
        marks.setdefault(name, time.perf_counter())
        return orig(*a, **k)

    setattr(module, fn, wrapped)
    return module, fn, orig


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="640x512")
    ap.add_argument("--case", default="dense")
    ap.add_argument("--cond", type=float, default=2)
    ap.add_argument("--fp16", default="1,0")
    args = ap.parse_args()
    B, n = map(int, args.shape.split("x"))
    A = generate(B, n, args.cond, 1029, args.case)
    for fp16 in args.fp16.split(","):
        os.environ["ADAPTQR_FP16"] = fp16
        for _ in range(3):
            adaptqr.geqrf(A)
        torch.cuda.synchronize()
        host, total = [], []
        for _ in range(7):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            adaptqr.geqrf(A)
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            host.append((t1 - t0) * 1e3)
            total.append((time.perf_counter() - t0) * 1e3)
        print(f"{args.shape} ADAPTQR_FP16={fp16}: host enqueue {statistics.median(host):.3f} ms, "
              f"whole call {statistics.median(total):.3f} ms")
        # Host time from the call's start to each mark's first entry (the GPU idles from
        # the probe's end until the first panel launch where the host is late: run 1622's
        # replay trace of 640x512, EXPERIMENTS.md G5).
        times = {name: [] for name, _, _ in MARKS}
        for _ in range(5):
            marks = {}
            saved = [_mark(marks, name, module, fn) for name, module, fn in MARKS]
            try:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                adaptqr.geqrf(A)
                torch.cuda.synchronize()
            finally:
                for module, fn, orig in saved:
                    setattr(module, fn, orig)
            for name in times:
                if name in marks:
                    times[name].append((marks[name] - t0) * 1e3)
        print("   host ms from the call's start to the first: " + ", ".join(
            f"{name} {statistics.median(v):.3f}" for name, v in times.items() if v))
        torch.cuda.synchronize()
        pr = cProfile.Profile()
        pr.enable()
        adaptqr.geqrf(A)
        pr.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(12)
        print("\n".join(s.getvalue().splitlines()[:30]))
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(30)
        print("\n".join(s.getvalue().splitlines()[:45]))


if __name__ == "__main__":
    main()
