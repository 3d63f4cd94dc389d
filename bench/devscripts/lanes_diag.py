"""EXPERIMENTS.md N19's check: which matrices differ between one stream and route lanes.

For batches of both routes (dense on FP16, rankdef on FP32), prints per matrix the relative
difference of H against the first eager call, for route_lanes 0 (the control: the same
three calls, the third a graph replay), 1 and 2, and whether each output passes the half
gate. Run on the device: ``python3 bench/devscripts/lanes_diag.py``.
"""
import torch

import adaptqr
from adaptqr import config
from adaptqr.testing import check_geqrf, generate


def rel(H, H0):
    d = (H - H0).flatten(1).norm(dim=1) / H0.flatten(1).norm(dim=1)
    return " ".join(f"{x:.1e}" for x in d.tolist())


for n, dense, seed in [(768, 5, 1), (2048, 1, 2), (4096, 1, 3), (768, 5, 11), (2048, 3, 12)]:
    A = torch.cat([generate(dense, n, 2, 68 + n + seed, "dense"),
                   generate(1, n, 0, 69 + n + seed, "rankdef")])
    H0, t0 = adaptqr.geqrf(A)
    for lanes in (0, 0, 1, 2, 2):
        with config.experiment(route_lanes=lanes):
            outs = [adaptqr.geqrf(A) for _ in range(4)]
        torch.cuda.synchronize()
        line = []
        for H, tau in outs:
            r = check_geqrf(A, H, tau)
            line.append(f"[{rel(H, H0)}] {'ok' if r.passes_bar else 'FAIL'}")
        print(f"n={n} dense={dense} seed={seed} lanes={lanes}: " + " | ".join(line), flush=True)
