"""OC26 family 2, an upper bound first (device script, EXPERIMENTS.md N30): what one-pass
TF32 in place of tf32x3 for the blocked schedule's products is worth on the FP16-routed
cases, where the only float32 updates are the in-group ones (the update of a pair's second
panel by its first) and the products of ``Y = W T``. One variant a process (the schedule is
patched in ``householder._with_knobs``); each timed as the bench times (L2 flushed, inputs
rotated, CUDA events, graph replays), every output checked first, its worst factor
residual printed (the FP32-routed matrices of the mixed case take TF32 too here, which a
built variant would not give them).

Run there: ``for v in x3 tf32; do python3 bench/devscripts/prec_probe.py $v; done``.
"""

import dataclasses
import sys

import adaptqr
from adaptqr.bench.timing import StopRule, time_calls
from adaptqr.paths import householder as hh
from adaptqr.testing import check_geqrf, generate

CASES = ((640, 512, 1029, "dense"), (60, 1024, 75342, "dense"), (640, 512, 770001, "mixed"),
         (160, 512, 11, "dense"))


def main():
    prec = {"x3": "tf32x3", "tf32": "tf32"}[sys.argv[1]]
    orig = hh._with_knobs

    def with_prec(s, info, n=0):
        r = orig(s, info, n)
        return r if r.small else dataclasses.replace(r, prec=prec)

    hh._with_knobs = with_prec
    for B, n, seed, case in CASES:
        inputs = [generate(B, n, 2, seed + 42 * (i + 1), case) for i in range(2)]
        worst = 0.0
        for a in inputs:
            H, tau = adaptqr.geqrf(a)
            worst = max(worst, check_geqrf(a, H, tau).worst_factor)
        t = time_calls(lambda a: adaptqr.geqrf(a), inputs, StopRule(max_repeats=60, budget_s=3.0))
        ts = sorted(t.times_ms)
        print(f"{sys.argv[1]:5s} {B}x{n} {case}: median {ts[len(ts) // 2]:.3f} ms "
              f"({len(ts)} repeats), worst factor {worst:.2f}", flush=True)


if __name__ == "__main__":
    main()
