"""Does the register panel kernel alone keep its reflectors exact on subnormal columns?
One launch on (B, m, 32) tiles scaled to 1e-30 (normal) and 1e-41 (subnormal), and the
fused small kernel on repeated columns; prints the worst |tau (1 + |v|^2) / 2 - 1|."""

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


torch.manual_seed(0)
for scale in (1.0, 1e-30, 1e-38, 1e-41, 1e-43):
    A = (torch.randn(4, 512, 32, dtype=torch.float64) * scale).float().cuda()
    H, tau = panel(A, 32)
    print(f"tile 512x32 scale {scale:g}: worst |c-1| {worst(H[:, :32], tau[:, :32]):.3g}")
for n in (16, 32, 64):
    A = torch.stack([degenerate("repeated", n, seed=s) for s in range(4)]).cuda()
    H, tau = panel(A, n)
    print(f"fused repeated n={n}: worst |c-1| {worst(H, tau):.3g}")
