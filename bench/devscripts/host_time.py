"""Session 8 (EXPERIMENTS.md D4): the host's share of one eager public call, FP16 route on
and off (ADAPTQR_FP16 toggled in-process: the route probe reads it at each call).

Per setting: 3 warm-up calls, then 7 calls timed as host enqueue time (perf_counter until
geqrf returns, GPU idle before) and whole-call time (until synchronized), medians; then one
call under cProfile (top functions by own time). Run there:
``python3 bench/devscripts/host_time.py [--shape 640x512] [--case clustered --cond 0]``.
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
import adaptqr.paths.householder as hh
from adaptqr.testing.generators import generate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="640x512")
    ap.add_argument("--case", default="dense")
    ap.add_argument("--cond", type=float, default=2)
    ap.add_argument("--fp16", default="1,0")
    args = ap.parse_args()
    B, n = map(int, args.shape.split("x"))
    A = generate(B, n, args.cond, 1029, args.case)
    rt = importlib.import_module("adaptqr.detectors.route")
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
        # Host time from the call's start to the path's entry and to its first panel launch
        # (the GPU idles from the route kernel's end until that launch: D4's trace).
        marks = {}
        orig_feature, orig_panel, orig_probe = hh._feature, hh._panel, rt._route_triton

        def probe(*a, **k):
            marks.setdefault("probe", time.perf_counter())
            return orig_probe(*a, **k)

        def feature(*a, **k):
            marks.setdefault("path", time.perf_counter())
            return orig_feature(*a, **k)

        def panel(*a, **k):
            marks.setdefault("panel", time.perf_counter())
            return orig_panel(*a, **k)

        hh._feature, hh._panel, rt._route_triton = feature, panel, probe
        steps = {"probe": [], "path": [], "panel": []}
        for _ in range(5):
            marks.clear()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            adaptqr.geqrf(A)
            torch.cuda.synchronize()
            for key in steps:
                steps[key].append((marks[key] - t0) * 1e3)
        hh._feature, hh._panel, rt._route_triton = orig_feature, orig_panel, orig_probe
        print(f"   host ms from the call's start: to the probe {statistics.median(steps['probe']):.3f}, "
              f"to the path {statistics.median(steps['path']):.3f}, "
              f"to the first panel launch {statistics.median(steps['panel']):.3f}")
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
