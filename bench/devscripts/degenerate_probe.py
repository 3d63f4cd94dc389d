"""Issue 22 on the device: the degenerate structures at the given sizes, each through the
public call under several settings (default, no FP16 route, no probes) and through
``factor_householder`` with and without column pairs; one verdict line each.

Usage: python3 bench/devscripts/degenerate_probe.py STRUCTURE[,STRUCTURE] N[,N] [BATCH]
"""

import dataclasses
import os
import sys

import torch

import adaptqr
from adaptqr.paths import schedules
from adaptqr.paths.householder import factor_householder
from adaptqr.testing import check_geqrf
from adaptqr.testing.degenerate import degenerate, judge


class Info:
    features: dict = {}


def direct(A, **fields):
    B, m, n = A.shape
    H = torch.empty_strided((B, m, n), (m * n, 1, m), device=A.device)
    H.copy_(A)
    tau = torch.empty(B, n, device=A.device)
    s = dataclasses.replace(schedules.schedule_for(m, n), **fields)
    factor_householder(H, tau, Info(), schedule=s)
    return H, tau


structures, sizes = sys.argv[1].split(","), [int(x) for x in sys.argv[2].split(",")]
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 2
for st in structures:
    for n in sizes:
        A = torch.randn(batch, n, n, device="cuda")
        A[0] = degenerate(st, n, seed=n, device="cuda")
        runs = {}
        for name, env in (("default", {}), ("fp32", {"ADAPTQR_FP16": "0"}),
                          ("nodetect", {"ADAPTQR_DETECT": "0"})):
            old = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            runs[name] = adaptqr.geqrf(A)
            for k, v in old.items():
                os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        runs["pairs"] = direct(A, split_pairs=True)
        runs["nopairs"] = direct(A, split_pairs=False)
        for name, (H, tau) in runs.items():
            v = judge(A.cpu(), H.cpu(), tau.cpu())[0]
            r = check_geqrf(A[:1], H[:1], tau[:1]) if torch.isfinite(H[0]).all() else None
            extra = ""
            if r is not None and not v.ok:
                d = H[0].diagonal()
                bad = (d.abs() < 0).nonzero()
                extra = f" |diag| min {float(d.abs().min()):.3g} max {float(d.abs().max()):.3g}, " \
                        f"tau>0 {int((tau[0] != 0).sum())}"
            print(f"{st:10s} n={n:5d} {name:9s} ok={v.ok} {v.why}{extra}", flush=True)
