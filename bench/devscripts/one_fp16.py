"""One FP16-routed 640x512 factorization, path alone (device script; a target for ncu).

The input has qr_v2's cond=2 column scaling, so the route probe sends every matrix to the
FP16 route (issue 8). Run there: ``ncu ... python3 bench/devscripts/one_fp16.py``.
"""

import torch

from adaptqr.detectors import route
from adaptqr.paths import householder


class Info:
    def __init__(self, f):
        self.features = f


B, n = 640, 512
A = torch.randn(B, n, n, device="cuda") * torch.logspace(0, -2, n, device="cuda")
H = torch.empty_strided(A.shape, (n * n, 1, n), device="cuda")
_, f = route(H, src=A)
print("routed", int((f["fp16_scale"] > 0).sum()))
tau = torch.empty(B, n, device="cuda")
householder.factor_householder(H, tau, Info(f))
torch.cuda.synchronize()
