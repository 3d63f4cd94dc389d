"""Which stored reflectors of a factorization are not orthogonal: ``c_j = tau_j (1 +
||v_j||^2) / 2`` is 1 for an exact reflector (tau = 0 aside). Prints the worst columns with
their panel, |v|, tau and the column's norm below the diagonal.

Usage: python3 bench/devscripts/reflector_consistency.py STRUCTURE N BATCH [ENV=VALUE ...]
"""

import os
import sys

import torch

for kv in sys.argv[4:]:
    k, v = kv.split("=", 1)
    os.environ[k] = v

import adaptqr  # noqa: E402
from adaptqr.testing.degenerate import degenerate  # noqa: E402

st, n, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
A = torch.randn(batch, n, n, device="cuda")
A[0] = degenerate(st, n, seed=n, device="cuda")
H, tau = adaptqr.geqrf(A)
h, t = H[0].double(), tau[0].double()
v2 = (torch.tril(h, -1) ** 2).sum(0)
c = t * (1 + v2) / 2
dev = torch.where(t != 0, (c - 1).abs(), torch.zeros_like(c))
worst = torch.argsort(dev, descending=True)[:12]
print(f"{st} n={n} batch={batch} {sys.argv[4:]}: reflectors {int((t != 0).sum())}, "
      f"deviating > 1e-5: {int((dev > 1e-5).sum())}")
for j in worst.tolist():
    print(f"  col {j:5d} (panel {j // 32}, +{j % 32}) |c-1| {float(dev[j]):.3g} tau {float(t[j]):.6g} "
          f"|v|^2 {float(v2[j]):.6g} |R_jj| {float(h[j, j].abs()):.3g} "
          f"max|v| {float(torch.tril(h, -1)[:, j].abs().max()):.3g}")
