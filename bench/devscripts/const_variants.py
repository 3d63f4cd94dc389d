"""Schedule constants that no knob reaches, measured as the bench measures (device script):
one variant a process, ``schedules.NAME=VALUE`` assignments set before the first call (the
constants are module state, and a graph captured under one value must not serve another),
then each case of a case file checked at the bar and timed by the bench's own
``run_variant`` (L2 flushed, inputs rotated, CUDA events, graph replays after its warm-up).

Run there: ``python3 bench/devscripts/const_variants.py LABEL [NAME=VALUE ...] --cases
FILE`` (``NAME`` a ``adaptqr.paths.schedules`` constant, ``VALUE`` an int), e.g. ``for s in
2 3 4; do python3 bench/devscripts/const_variants.py st$s TRAILING_STAGES=$s --cases
bench/devscripts/cases_h29.json; done``.
"""

import argparse
import json

import adaptqr
from adaptqr.bench.runner import run_variant
from adaptqr.bench.timing import StopRule
from adaptqr.paths import schedules
from adaptqr.testing import make_inputs


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
        # The bench's own check, warm-up and timing (adaptqr.bench.runner.run_variant).
        r = run_variant(adaptqr.geqrf, None, make_inputs(c, args.inputs),
                        StopRule(max_repeats=60, budget_s=3.0))
        head = f"{args.label:8s} {c['batch']}x{c['n']} {c.get('case', 'dense')} cond={c['cond']}"
        if r["status"] != "ok":
            raise SystemExit(f"{head}: {r['status']} (factor {r['worst_factor']}, {r['error']})")
        print(f"{head}: median {r['median_ms']:.3f} ms ({r['repeats']} repeats), worst factor "
              f"{r['worst_factor']:.2f}", flush=True)


if __name__ == "__main__":
    main()
