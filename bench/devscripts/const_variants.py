"""Schedule constants that no knob reaches, measured as the bench measures (device script):
one variant a process, ``schedules.NAME=VALUE`` assignments set before the first call (the
constants are module state, and a graph captured under one value must not serve another),
then each case of a case file timed with L2 flushed, inputs rotated and CUDA events
(graph replays where the public call takes them), every output checked at the bar first.

Run there: ``python3 bench/devscripts/const_variants.py LABEL [NAME=VALUE ...] --cases
FILE`` (``NAME`` a ``adaptqr.paths.schedules`` constant, ``VALUE`` an int), e.g. ``for s in
2 3 4; do python3 bench/devscripts/const_variants.py st$s TRAILING_STAGES=$s --cases
bench/devscripts/cases_h29.json; done``.
"""

import argparse
import json

import adaptqr
from adaptqr.bench.timing import StopRule, time_calls
from adaptqr.paths import schedules
from adaptqr.testing import check_geqrf, generate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("assign", nargs="*", help="NAME=VALUE, a schedules constant")
    ap.add_argument("--cases", required=True)
    ap.add_argument("--inputs", type=int, default=2)
    args = ap.parse_args()
    for a in args.assign:
        name, value = a.split("=")
        if not hasattr(schedules, name):
            raise SystemExit(f"schedules has no constant {name}")
        setattr(schedules, name, int(value))
    for c in json.load(open(args.cases)):
        B, n, cond, seed, case = c["batch"], c["n"], c["cond"], c["seed"], c.get("case", "dense")
        inputs = [generate(B, n, cond, seed + 42 * (i + 1), case) for i in range(args.inputs)]
        worst = 0.0
        for A in inputs:
            H, tau = adaptqr.geqrf(A)
            r = check_geqrf(A, H, tau)
            if not r.passes_bar:
                raise SystemExit(f"{args.label} {B}x{n} {case}: FAILED the bar ({r.summary()})")
            worst = max(worst, r.worst_factor)
        t = time_calls(lambda A: adaptqr.geqrf(A), inputs, StopRule(max_repeats=60, budget_s=3.0))
        ts = sorted(t.times_ms)
        print(f"{args.label:8s} {B}x{n} {case} cond={cond}: median {ts[len(ts) // 2]:.3f} ms "
              f"({len(ts)} repeats), worst factor {worst:.2f}", flush=True)


if __name__ == "__main__":
    main()
