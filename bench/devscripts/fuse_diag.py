"""Device script (EXPERIMENTS.md H17): where the taus of the fused column steps differ from
two exchanges a step, against the spread any change of summation order gives.

One random (B, n, n) batch, factored by the Householder path with the CUDA C panel fused
(the default), unfused (``cuda_panel_fuse=False``) and by the Triton panel
(``cuda_panel=False``), and by torch.geqrf in float64. Printed per band of 32 columns: the
largest |tau| difference of each pair, and of each against float64.

Run there: ``python3 bench/devscripts/fuse_diag.py 160 512``.
"""

from __future__ import annotations

import dataclasses
import sys

import torch

from adaptqr.paths import schedules
from adaptqr.paths.householder import factor_householder


class _Info:
    features: dict = {}


def factor(A, **fields):
    B, m, n = A.shape
    H = torch.empty_strided((B, m, n), (m * n, 1, m), dtype=A.dtype, device=A.device)
    H.copy_(A)
    tau = torch.empty((B, n), dtype=A.dtype, device=A.device)
    s = dataclasses.replace(schedules.schedule_for(m, n), **fields)
    factor_householder(H, tau, _Info(), schedule=s)
    return H, tau


def main() -> None:
    B, n = int(sys.argv[1]), int(sys.argv[2])
    torch.manual_seed(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    A = torch.randn(B, n, n, device="cuda")
    runs = {"fused": factor(A)[1], "unfused": factor(A, cuda_panel_fuse=False)[1],
            "triton": factor(A, cuda_panel=False)[1], "f64": torch.geqrf(A.double())[1].float()}
    pairs = [("fused", "unfused"), ("unfused", "triton"), ("fused", "f64"), ("unfused", "f64"),
             ("triton", "f64")]
    print(f"{B}x{n}: max |tau difference| per band of 32 columns")
    print("cols      " + "".join(f"{a[:5]}-{b[:5]:<9}" for a, b in pairs))
    for c0 in range(0, n, 32):
        row = [float((runs[a][:, c0:c0 + 32] - runs[b][:, c0:c0 + 32]).abs().max()) for a, b in pairs]
        print(f"{c0:4d}-{c0 + 31:<4d} " + "".join(f"{v:<16.2e}" for v in row))
    for a, b in pairs:
        d = (runs[a] - runs[b]).abs()
        i = int(d.argmax())
        print(f"{a}-{b}: max {float(d.max()):.2e} at matrix {i // n} column {i % n}")


if __name__ == "__main__":
    main()
