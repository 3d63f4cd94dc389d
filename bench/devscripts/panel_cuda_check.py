"""EXPERIMENTS.md H12: the CUDA C register panel against the Triton one, same inputs.

Per shape the householder path alone with ``Schedule.cuda_panel`` True and False on one
input (dense, then with n_active features: a rank-deficient input through the public
call's probe): the largest difference of the factors (relative to the largest entry) and
of tau, and each one's float64 factor residual ``|QR - A| / |A|`` in units of eps * n.
Then each panel launch alone timed as a CUDA graph (GPU time, L2 not flushed: the panel's
own latency).

Run there: ``python3 bench/devscripts/panel_cuda_check.py``.
"""

from __future__ import annotations

import dataclasses

import torch

from adaptqr.paths import householder, schedules
from adaptqr.testing.generators import generate


def _factor(A, cuda, info=None):
    B, m, n = A.shape
    H = torch.empty_strided((B, m, n), (m * n, 1, m), device="cuda")
    H.copy_(A)
    tau = torch.empty(B, n, device="cuda")
    s = dataclasses.replace(schedules.schedule_for(m, n), cuda_panel=cuda)
    householder.factor_householder(H, tau, info, schedule=s)
    return H, tau


def _residual(A, H, tau):
    A64, H64, t64 = A.double(), H.double(), tau.double()
    Q = torch.linalg.householder_product(H64, t64)
    R = H64.triu()
    n = A.shape[-1]
    err = (Q @ R - A64).flatten(1).norm(dim=1) / A64.flatten(1).norm(dim=1)
    return float(err.max() / (2.0 ** -24 * n))


def main():
    bad = []
    shapes = [(640, 512), (1, 512), (40, 176), (40, 352), (3, 200), (60, 1024), (1, 1024)]
    for B, n in shapes:
        A = generate(B, n, 1, 4242 + n)
        Hc, tc = _factor(A, True)
        Ht, tt = _factor(A, False)
        dH = float((Hc - Ht).abs().max() / Ht.abs().max())
        dt = float((tc - tt).abs().max())
        rc = _residual(A, Hc, tc)
        print(f"{B}x{n} dense: max dH {dH:.2e}, max dtau {dt:.2e}, residual cuda "
              f"{rc:.3f} triton {_residual(A, Ht, tt):.3f} (eps n)", flush=True)
        if not (dH < 1e-3 and rc < 1.0):
            bad.append(f"{B}x{n}")
    # rank-deficient with features: n_active < n through the public dispatcher
    import adaptqr
    for B, n, case in [(64, 512, "rankdef"), (64, 512, "clustered"), (16, 1024, "nearrank")]:
        A = generate(B, n, 0, 777 + n, case)
        outs = {}
        for cuda in (True, False):
            schedules.CUDA_PANEL = cuda
            from adaptqr import graphs
            graphs.clear()
            outs[cuda] = adaptqr.geqrf(A)
        schedules.CUDA_PANEL = False
        (Hc, tc), (Ht, tt) = outs[True], outs[False]
        dH = float((Hc - Ht).abs().max() / Ht.abs().max())
        rc = _residual(A, Hc, tc)
        print(f"{B}x{n} {case} (public): max dH {dH:.2e}, residual cuda {rc:.3f} "
              f"triton {_residual(A, Ht, tt):.3f}", flush=True)
        if not rc < 1.0:
            bad.append(f"{B}x{n} {case}")
    if bad:
        raise SystemExit(f"CUDA panel off on: {bad}")


if __name__ == "__main__":
    main()
