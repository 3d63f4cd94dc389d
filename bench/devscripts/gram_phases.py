"""Where a Gram panel's time goes (device script; EXPERIMENTS.md H46).

Every CUDA C panel build is compiled with ``PHASE_MARKS=1`` (``panel_cuda_src.py``'s
instrument): thread 0 of matrix 0's CTA writes ``clock64()`` where each phase of the Gram
build ends and ``%globaltimer`` at the panel's start and end. For each shape, one call of
``adaptqr.geqrf`` on a dense input (cond 1, seed 1) is captured in a CUDA graph (as the
bench replays its calls), the marks are zeroed, the graph is replayed once, and for each
panel the script prints its time (ns, by the global timer), the phases' shares of its SM
cycles, and the gap since the panel before ended (the update and launch the chain waits
for).

The marks are one CTA's: a phase's cycles include the waits of that CTA at its barriers,
and matrix 0's panels stand for the others. Every CTA's start and exit (``cta_ns``, by the
global timer) give each panel's launch as a whole (OC49's family 2): from the first CTA's
start to the last one's exit, how far the CTAs' starts and exits spread, the median
CTA's lifetime, and the gap from the panel before's last exit to this one's first start.

Run there: ``python3 bench/devscripts/gram_phases.py --shapes 40x176,40x352``.
"""

from __future__ import annotations

import argparse
import json
import os

import cupy as cp
import torch

os.environ["ADAPTQR_GRAPHS"] = "0"  # the capture below is the only graph

from hp_host import capture  # noqa: E402  (this script's folder is on the path when it is run)
from panel_builds import use  # noqa: E402

import adaptqr  # noqa: E402
from adaptqr.testing.generators import generate  # noqa: E402

# MARK(i) in the kernel: the phase that ends at mark i (mark 0 is the panel's start).
PHASES = ("load", "gram1", "chol1", "solve1", "gram2", "chol2", "solve2", "lu", "solve_u",
          "t_r", "store", "t_store")


CTA_MARKS = 1024  # the kernel's CTA_MARKS


def _marks(modules: list, zero: bool = False):
    """``(clk, ns, cta)``: every module's ``phase_clk`` ``(128, 16)``, ``phase_ns``
    ``(128, 2)`` and ``cta_ns`` ``(128, CTA_MARKS, 2)`` summed (a panel's row is written by
    the one build it ran), or zeroed."""
    out = [None, None, None]
    for mod in modules:
        arrays = (cp.ndarray((128, 16), cp.int64, memptr=mod.get_global("phase_clk")),
                  cp.ndarray((128, 2), cp.uint64, memptr=mod.get_global("phase_ns")),
                  cp.ndarray((128, CTA_MARKS, 2), cp.uint64, memptr=mod.get_global("cta_ns")))
        for i, x in enumerate(arrays):
            if zero:
                x.fill(0)
                continue
            v = x.get().astype("int64")
            out[i] = v if out[i] is None else out[i] + v
    return tuple(out)


def _launch(cta):
    """One panel's CTAs ``(CTA_MARKS, 2)`` (start, exit; 0 where none ran): ``(first start,
    last exit, start spread, exit spread, median lifetime)`` in ns, or None."""
    ran = cta[(cta[:, 0] > 0) & (cta[:, 1] > 0)]
    if not len(ran):
        return None
    life = sorted(int(x) for x in ran[:, 1] - ran[:, 0])
    return (int(ran[:, 0].min()), int(ran[:, 1].max()), int(ran[:, 0].max() - ran[:, 0].min()),
            int(ran[:, 1].max() - ran[:, 1].min()), life[len(life) // 2])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="40x176,40x352")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    modules: list = []
    use("marks", "#define PHASE_MARKS 1\n", {}, modules)  # the modules' globals hold the marks
    report = {}
    for shape in args.shapes.split(","):
        b, n = (int(x) for x in shape.split("x"))
        A = generate(b, n, 1.0, 1, "dense")
        g = capture(lambda: adaptqr.geqrf(A), 1)
        torch.cuda.synchronize()
        _marks(modules, zero=True)
        cp.cuda.runtime.deviceSynchronize()  # cupy's fills before torch's stream replays
        g.replay()
        torch.cuda.synchronize()
        clk, ns, cta = _marks(modules)
        rows, prev_end, prev_last = [], None, None
        print(f"{shape}: panel, ns (global timer), gap since the panel before (ns), "
              f"phases' share of its cycles (%)")
        for p in range(128):
            if ns[p, 0] == 0 or ns[p, 1] == 0:  # not run, or past n_active (no end mark)
                continue
            marks = clk[p]
            total = int(marks[12] - marks[0])
            shares, last = {}, 0
            for i in range(1, len(PHASES) + 1):
                if not marks[i]:
                    continue
                # Column-step panels (no Gram build, or one its tests rejected) skip marks
                # 2-10: the phase from the last mark set is named by its ends.
                name = PHASES[i - 1] if last == i - 1 else f"{PHASES[last]}..{PHASES[i - 1]}"
                if total > 0:
                    shares[name] = round(100.0 * (marks[i] - marks[last]) / total, 1)
                last = i
            span = int(ns[p, 1] - ns[p, 0])
            gap = None if prev_end is None else int(ns[p, 0] - prev_end)
            prev_end = ns[p, 1]
            rows.append({"panel": p, "ns": span, "gap_ns": gap, "cycles": total, "shares": shares})
            print(f"  {p:3d} {span:7d} {'' if gap is None else gap:>7}  cycles {total:7d}  "
                  + " ".join(f"{k} {v}" for k, v in shares.items()), flush=True)
            launch = _launch(cta[p])
            if launch is not None:
                first, last, s_spread, e_spread, life = launch
                lgap = None if prev_last is None else first - prev_last
                prev_last = last
                rows[-1]["launch"] = {"span_ns": last - first, "gap_ns": lgap, "start_spread_ns": s_spread,
                                      "exit_spread_ns": e_spread, "median_cta_ns": life}
                print(f"      all CTAs: span {last - first} ns, gap {lgap}, starts spread {s_spread}, "
                      f"exits spread {e_spread}, median CTA {life}", flush=True)
        report[shape] = rows
        del g
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "shapes": report}, f, indent=1)


if __name__ == "__main__":
    main()
