"""The resident CUDA C QR's kernel alone against the householder path's blocked schedule
alone (EXPERIMENTS.md H26), device script: CUDA events around each launch sequence, inputs
rotated over 8 copies (past L2 at these sizes), median of ``REPEATS``.

``python3 bench/devscripts/resident_diag.py 40x176 132x176 16x256x128 ...``: batch x n
(square) or batch x m x n. For each shape: the blocked schedule, then the kernel at each of
``RESIDENT_WARPS`` (default "8,16") warps where the matrix fits; each output is checked at
the half gate first.
"""

import dataclasses
import os
import sys

import torch

from adaptqr.paths import householder, schedules
from adaptqr.paths.kernels import resident_cuda
from adaptqr.testing import check_geqrf

REPEATS = 30
COPIES = 8


class _Info:
    routes = None
    features: dict = {}


def _shape(arg):
    parts = [int(x) for x in arg.split("x")]
    return (parts[0], parts[1], parts[1]) if len(parts) == 2 else tuple(parts)


def _time(fn, inputs, H):
    times = []
    for r in range(REPEATS + 2):
        H.copy_(inputs[r % COPIES])
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        if r >= 2:
            times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main():
    warps = [int(w) for w in os.environ.get("RESIDENT_WARPS", "8,16").split(",")]
    for arg in sys.argv[1:]:
        B, m, n = _shape(arg)
        inputs = [torch.randn(B, m, n, device="cuda").mT.contiguous().mT for _ in range(COPIES)]
        H = torch.empty_strided((B, m, n), (m * n, 1, m), device="cuda")
        tau = torch.empty(B, n, device="cuda")
        na = torch.full((B,), n, dtype=torch.int32, device="cuda")
        s = dataclasses.replace(schedules.schedule_for(m, n), resident_max_batch=0)
        row = {}

        def blocked():
            householder.factor_householder(H, tau, _Info(), schedule=s)

        variants = [("blocked", blocked)]
        for w in warps:
            if resident_cuda.shape_for(m, n, w) is None:
                continue
            variants.append((f"w{w}", lambda w=w: resident_cuda.launch(H.mT, tau, na, m, n,
                                                                        False, 0.0, w)))
        for name, fn in variants:
            H.copy_(inputs[0])
            fn()
            r = check_geqrf(inputs[0], H, tau)
            ok = "ok" if r.passes_bar else f"FAIL {r.summary()}"
            row[name] = f"{_time(fn, inputs, H):.4f} ms ({ok})"
        print(f"{B}x{m}x{n}: " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
