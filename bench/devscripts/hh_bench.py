"""Device script for the Householder path: accuracy on the qr_v2 cases, timing, variants.

Run on the GPU machine (one call does everything; summary on stdout, JSON under $OUT)::

    pip install -q --no-deps --no-build-isolation -e . && \
        PYTHONUNBUFFERED=1 python bench/devscripts/hh_bench.py --budget 300

Smoke-test the script itself on a CPU (tiny shapes, Triton interpreter)::

    TRITON_INTERPRET=1 python bench/devscripts/hh_bench.py --smoke

Sections (each skipped once ``--budget`` seconds are spent): ``check`` (every benchmark and
test case at full batch, worst scaled residuals against the half gate), ``time`` (default
schedule per benchmark case, CUDA-graph replay, L2 flushed, k rotating inputs as qr_v2),
``parts`` (panel-only / trailing-only time, to see where the time goes), ``panels``
(register-panel variants on every benchmark case: ``PANEL_VARIANTS``), ``small`` (the
one-launch kernel against blocked nb 16 for n = 80..128), ``variants``
(schedules and precisions on the large cases, timing and accuracy), ``split`` (row-split
panel/trailing knobs on 8x2048 and 2x4096; not in the default sections), ``split_panels``
(row-split panel kernels compared, ``SPLIT_PANEL_VARIANTS``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import sys
import time

import torch

try:
    import adaptqr  # noqa: F401
except Exception as e:  # another layer mid-edit must not cost a device run
    import types
    print("adaptqr/__init__ failed to import, stubbing it:", repr(e)[:200])
    _stub = types.ModuleType("adaptqr")
    _stub.__path__ = [os.path.join(os.path.dirname(__file__), "..", "..", "adaptqr")]
    sys.modules["adaptqr"] = _stub

from adaptqr.paths import householder, schedules
from adaptqr.paths.prescale import Given
from adaptqr.testing import bench_cases, case_name, check_geqrf, make_inputs, test_cases
from adaptqr.testing.cases import baseline_us

T0 = time.time()


def left(budget):
    return budget - (time.time() - T0)


def factor(A, sched=None):
    B, m, n = A.shape
    H = torch.empty_strided((B, m, n), (m * n, 1, m), dtype=A.dtype, device=A.device)
    H.copy_(A)
    tau = torch.empty((B, n), dtype=A.dtype, device=A.device)
    # Exponents 0, as the probe gives them for ordinary inputs: without a feature the path
    # would read the batch once more for its own (EXPERIMENTS.md R7).
    zero = torch.zeros(B, dtype=torch.int32, device=A.device)
    householder.factor_householder(H, tau, Given(zero), schedule=sched)
    return H, tau


#: Variants compared by the ``panels`` section on every benchmark case (EXPERIMENTS.md H9,
#: P8, N2, OC4): the default, the T kernel forced off, T by the recurrence, one-pass TF32
#: trailing products, trailing groups of 2 and 4 panels.
PANEL_VARIANTS = {"base": {}, "t_in_panel": {"t_kernel": False},
                  "t_steps": {"t_doubling": False},
                  "prec_tf32": {"prec": "tf32"},
                  # Fewer passes over the trailing matrix: the far update of 2 or 4 panels in
                  # one pass (EXPERIMENTS.md OC4, family 1).
                  "group2": {"group": 2}, "group4": {"group": 4}}
#: Variants for the cases with row-split panels (``--sections split_panels``; EXPERIMENTS.md
#: S3; C2's CholeskyQR2 panel was removed in issue 22's session).
SPLIT_PANEL_VARIANTS = {"base": {}, "pairs": {"split_pairs": True}, "no_pairs": {"split_pairs": False}}


def timed(fn, inputs, reps, graph):
    """Mean ms per input over reps (L2 flushed before each rep)."""
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    if graph:
        statics = [a.clone() for a in inputs]
        fn(statics[0])  # compile + warm
        torch.cuda.synchronize()
        graphs = []
        for a in statics:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn(a)
            graphs.append(g)
        run = [g.replay for g in graphs]
    else:
        fn(inputs[0])
        run = [(lambda a=a: fn(a)) for a in inputs]
    times = []
    for _ in range(reps):
        flush.zero_()
        torch.cuda.synchronize()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        for r in run:
            r()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / len(run))
    return statistics.median(times)


def check(A, sched=None):
    H, tau = factor(A, sched)
    r = check_geqrf(A, H, tau)
    return r.worst_factor, r.worst_orth, r.passes_bar


def measure(tag, ins, sched):
    """``(ms, factor, orth, passes)`` of schedule ``sched`` on ``ins`` (time over all of them,
    accuracy on the first); None, with the error printed, when the variant fails to compile
    or run (a result too)."""
    try:
        ms = timed(lambda a: factor(a, sched), ins, 3, graph=True)
        return (ms,) + tuple(check(ins[0], sched))
    except Exception as e:
        print(tag, "ERROR", repr(e)[:300])
        return None


def measure_row(res, tag, case, ins, sched, **keys):
    """:func:`measure`, then one row in ``res["variants"]`` (``case`` plus ``keys``) and one
    printed line; the ms, or None when the variant failed."""
    got = measure(f"{tag} {case} {keys}", ins, sched)
    if got is None:
        return None
    ms, wf, wo, ok = got
    res["variants"].append({"case": case, **keys, "ms": ms, "factor": wf, "orth": wo, "bar": ok})
    label = " ".join(str(v) for v in keys.values())
    print(f"{tag} {case:34s} {label:14s} {ms:8.3f} ms factor {wf:6.3f} orth {wo:6.3f} "
          f"{'ok' if ok else 'FAIL'}")
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=300.0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--panels-max-n", type=int, default=1 << 30, help="panels section: largest n")
    ap.add_argument("--panels-variants", default=",".join(PANEL_VARIANTS),
                    help="panels section: which PANEL_VARIANTS, comma-separated")
    ap.add_argument("--panels-dense", action="store_true",
                    help="panels section: only the dense benchmark cases")
    ap.add_argument("--split-n", type=int, default=0,
                    help="split_panels section: only the cases of this n (0: all)")
    ap.add_argument("--split-variants", default=",".join(SPLIT_PANEL_VARIANTS),
                    help="split_panels section: which SPLIT_PANEL_VARIANTS, comma-separated")
    ap.add_argument("--sections", default="check_bench,time,parts,check_tests,variants")
    args = ap.parse_args()
    out = os.environ.get("OUT", "/tmp")
    res = {"device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "torch": torch.__version__, "check": [], "time": [], "parts": [], "variants": []}
    secs = args.sections.split(",")

    if args.smoke:
        for B, n in [(2, 32), (2, 160)]:
            A = torch.randn(B, n, n)
            print("smoke", B, n, check(A))
        return

    def save():
        with open(os.path.join(out, "hh_bench.json"), "w") as f:
            json.dump(res, f, indent=1)

    def run_check(cases):
        for c in cases:
            if left(args.budget) < 0:
                print("budget spent, stopping check"); break
            A = make_inputs(c, k=1)[0]
            t = time.time()
            wf, wo, ok = check(A)
            res["check"].append({"case": case_name(c), "factor": wf, "orth": wo, "bar": ok})
            print(f"check {case_name(c):40s} factor {wf:7.3f} orth {wo:7.3f} "
                  f"{'ok' if ok else 'FAIL'} ({time.time() - t:.1f}s)")
            del A
        save()

    if "check_bench" in secs:
        run_check(bench_cases())

    if "time" in secs:
        geo = []
        for c in bench_cases():
            if left(args.budget) < 0:
                print("budget spent, stopping time"); break
            ins = make_inputs(c)
            ms = timed(factor, ins, args.reps, graph=True)
            base = baseline_us(c) / 1e3
            geo.append(ms)
            res["time"].append({"case": case_name(c), "ms": ms, "baseline_ms": base})
            print(f"time {case_name(c):40s} {ms:8.3f} ms  torch {base:8.2f} ms  x{base / ms:6.1f}")
            del ins
        if len(geo) == 12:
            g = math.exp(sum(map(math.log, geo)) / 12)
            res["geomean_ms"] = g
            print(f"geomean {g:.3f} ms")
        save()

    big = [c for c in bench_cases() if c.get("case", "dense") == "dense" and c["n"] >= 512]
    if "parts" in secs:
        real_p, real_t = householder._panel, householder._trailing
        for c in big:
            if left(args.budget) < 0:
                break
            ins = make_inputs(c, k=1)
            row = {"case": case_name(c)}
            householder._trailing = lambda *a, **k: None
            row["panel_only_ms"] = timed(factor, ins, 3, graph=True)
            householder._trailing = real_t
            householder._panel = lambda *a, **k: None
            row["trailing_only_ms"] = timed(factor, ins, 3, graph=True)
            householder._panel = real_p
            res["parts"].append(row)
            print("parts", row)
        householder._panel, householder._trailing = real_p, real_t
        save()

    if "panels" in secs:
        variants = {v: PANEL_VARIANTS[v] for v in args.panels_variants.split(",")}
        geo: dict[str, list[float]] = {v: [] for v in variants}
        for c in bench_cases():
            if c["n"] > args.panels_max_n or (args.panels_dense and c["case"] != "dense"):
                continue
            ins = make_inputs(c)
            base_s = schedules.schedule_for(c["n"], c["n"])
            for name, kw in variants.items():
                if left(args.budget) < 0:
                    break
                ms = measure_row(res, "panel", case_name(c), ins,
                                 dataclasses.replace(base_s, **kw), panel=name)
                if ms is not None:
                    geo[name].append(ms)
            del ins
            save()  # a run cut short by its timeout keeps what it measured
        for name, v in geo.items():
            if len(v) == 12 and len(bench_cases()) == 12:
                g = math.exp(sum(map(math.log, v)) / 12)
                res.setdefault("panel_geomean_ms", {})[name] = g
                print(f"panel geomean {name:9s} {g:.3f} ms")
        save()

    if "small" in secs:
        # One-launch kernel against the blocked nb 16 schedule for n = 65..128 (candidate 4:
        # the [128, 128] register tile spills 11.9 KB a thread).
        blocked = schedules.Schedule(small=False, nb=16, group=1, bn=64, bm=64, small_n_nb=0)
        for B, n in ((24, 128), (32, 96), (40, 128), (64, 80)):
            if left(args.budget) < 0:
                break
            c = {"batch": B, "n": n, "cond": 1, "seed": 4242 + n, "case": "dense"}
            ins = make_inputs(c)
            for name, sv in (("small", schedules.Schedule(True, 0, 1, 0, 0)),
                             ("blocked_nb16", blocked)):
                measure_row(res, "small", case_name(c), ins, sv, schedule=name)
            save()

    if "split_panels" in secs:
        # Cases whose panels are row-split: one column a barrier (base), two (S3), CholeskyQR2
        # panels at 8 and 4 warps (C2); whole path in a graph, with accuracy.
        split_cases = [c for c in bench_cases() if c["batch"] <= 60 and c["n"] >= 1024]
        split_cases.append({"batch": 3, "n": 1100, "cond": 1, "seed": 77, "case": "dense"})
        split_cases = [c for c in split_cases if args.split_n in (0, c["n"])]
        for c in split_cases:
            ins = make_inputs(c)
            base_s = schedules.schedule_for(c["n"], c["n"])
            for name in args.split_variants.split(","):
                kw = SPLIT_PANEL_VARIANTS[name]
                if left(args.budget) < 0:
                    break
                measure_row(res, "split", case_name(c), ins,
                            dataclasses.replace(base_s, **kw), split_panel=name)
            del ins
            save()

    if "check_tests" in secs:
        run_check(test_cases())

    if "split" in secs:
        # Row-split panel and trailing knobs on the small-batch large cases (EXPERIMENTS.md S2).
        split_defaults = schedules.SPLIT_MIN_ROWS, schedules.TRAILING_SPLIT_PROGRAMS
        for c in [c for c in big if c["batch"] <= 8]:
            ins = make_inputs(c, k=1)
            for smr in (64, 128, 256):
                for tsp in (256, 512, 1024):
                    if left(args.budget) < 0:
                        break
                    schedules.SPLIT_MIN_ROWS, schedules.TRAILING_SPLIT_PROGRAMS = smr, tsp
                    ms = timed(factor, ins, 3, graph=True)
                    wf, wo, ok = check(ins[0])
                    res["variants"].append({"case": case_name(c), "split_min_rows": smr,
                                            "trailing_split_programs": tsp, "ms": ms,
                                            "factor": wf, "orth": wo})
                    print(f"split {case_name(c):26s} min_rows {smr:4d} trailing_programs {tsp:5d} "
                          f"{ms:8.3f} ms factor {wf:6.3f} orth {wo:6.3f}")
        schedules.SPLIT_MIN_ROWS, schedules.TRAILING_SPLIT_PROGRAMS = split_defaults
        save()

    if "variants" in secs:
        for c in big:
            base_s = schedules.schedule_for(c["n"], c["n"])
            for nb, group, prec, bn in [(32, 1, base_s.prec, 64), (32, 2, base_s.prec, 64),
                                        (32, 8, base_s.prec, 64), (32, 4, base_s.prec, 32),
                                        (32, 4, base_s.prec, 128), (64, 2, base_s.prec, 64),
                                        (32, 4, "ieee", 64), (32, 4, "tf32", 64)]:
                if left(args.budget) < 0:
                    break
                s = dataclasses.replace(base_s, nb=nb, group=group, prec=prec, bn=bn)
                got = measure(f"variant {case_name(c)} {s}", make_inputs(c, k=1), s)
                if got is None:
                    continue
                ms, wf, wo, ok = got
                res["variants"].append({"case": case_name(c), "nb": nb, "group": group, "bn": bn,
                                        "prec": prec, "ms": ms, "factor": wf, "orth": wo})
                print(f"variant {case_name(c):30s} nb {nb:3d} group {group} bn {bn:3d} {prec:6s} "
                      f"{ms:8.3f} ms factor {wf:6.3f} orth {wo:6.3f}")
        save()
    print(f"total {time.time() - T0:.0f}s")


if __name__ == "__main__":
    sys.exit(main())
