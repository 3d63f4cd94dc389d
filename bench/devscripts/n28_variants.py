"""N28's variants that need the split pair's constants changed (device script): the pair
rest updates' sums by cuBLAS (``pair_blas``) with the update launch over other tiles and
slices than ``PAIR_SPLIT_BN`` x ``pair_split`` (64 x 128): whole columns of 128-wide tiles,
as the pair kernel's second sweep runs them. One variant a process (the constants are
module state), each timed as the bench times (L2 flushed, inputs rotated, CUDA events;
graph replays where the bench's call takes them), its outputs checked at the bar first.

Run there: ``for v in main pb pb_bn128 pb_whole; do python3 bench/devscripts/n28_variants.py
$v; done``.
"""

import sys

import adaptqr
from adaptqr import config
from adaptqr.bench.timing import StopRule, time_calls
from adaptqr.paths import schedules
from adaptqr.testing import check_geqrf, generate

VARIANTS = {
    "main": ({}, {}),
    "pb": ({"pair_blas": 1}, {}),
    "pb_bn128": ({"pair_blas": 1}, {"PAIR_SPLIT_BN": 128}),
    "pb_whole": ({"pair_blas": 1}, {"PAIR_SPLIT_BN": 128, "PAIR_SPLIT_ROWS": 1024}),
}
CASES = ((640, 512, 1029, "dense"), (640, 512, 770001, "mixed"), (60, 1024, 75342, "dense"),
         (100, 768, 12, "dense"))


def main():
    name = sys.argv[1]
    knobs, constants = VARIANTS[name]
    for k, v in constants.items():
        setattr(schedules, k, v)
    with config.experiment(**knobs):
        for B, n, seed, case in CASES:
            inputs = [generate(B, n, 2, seed + 42 * (i + 1), case) for i in range(2)]
            for a in inputs:
                H, tau = adaptqr.geqrf(a)
                r = check_geqrf(a, H, tau)
                assert r.passes_bar, r.summary()
            t = time_calls(lambda a: adaptqr.geqrf(a), inputs,
                           StopRule(max_repeats=60, budget_s=3.0))
            ts = sorted(t.times_ms)
            print(f"{name:9s} {B}x{n} {case}: median {ts[len(ts) // 2]:.3f} ms "
                  f"({len(ts)} repeats), worst factor {r.worst_factor:.2f}", flush=True)


if __name__ == "__main__":
    main()
