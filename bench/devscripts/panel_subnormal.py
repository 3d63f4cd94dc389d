"""Does the one-launch small QR (the register panel kernel with NB >= n) keep its reflectors
exact on repeated columns, whose residual runs into the subnormal range? Prints the worst
|tau (1 + |v|^2) / 2 - 1| (EXPERIMENTS.md R4: 2.5e-7 on the H200)."""

import sys

import torch

from adaptqr.paths.kernels.panel import panel_reg_kernel
from adaptqr.testing.degenerate import degenerate


def worst(H, tau):
    h, t = H.double(), tau.double()
    v2 = (torch.tril(h, -1) ** 2).sum(-2)
    c = (t * (1 + v2) / 2 - 1).abs()
    return float(torch.where(t != 0, c, torch.zeros_like(c)).max())


def panel(A, nb):
    B, m, n = A.shape
    H = A.mT.contiguous().mT.clone()
    tau = torch.zeros(B, n, device=A.device)
    TW = torch.zeros(B, 1, nb, nb, device=A.device)
    na = torch.full((B,), n, dtype=torch.int32, device=A.device)
    MB = 1 << (m - 1).bit_length()
    panel_reg_kernel[(B,)](H.mT, tau, TW, na, 0, m, n, min(nb, n), 0, 1, NB=nb, MB=MB,
                           HAS_NA=True, WRITE_T=True, WRITE_S=False, LOG2NB=0,
                           num_warps=int(sys.argv[1]) if len(sys.argv) > 1 else 8)
    return H, tau


for n in (16, 32, 64):
    A = torch.stack([degenerate("repeated", n, seed=s) for s in range(4)]).cuda()
    H, tau = panel(A, n)
    print(f"fused repeated n={n}: worst |c-1| {worst(H, tau):.3g}")
