"""One public ``adaptqr.geqrf`` call of a qr_v2-like batch, inside an NVTX range ``profile``
(device script; a target for ncu, after one warm-up call that compiles everything).

``python3 bench/devscripts/one_call.py 640x512 [cond] [case]``: batch x n, the generator's
column scaling ``cond`` (default 2 for n <= 1024, else 1) and profile (default dense).
With ``ONE_CALL_OP=householder_product`` in the environment, the profiled call is
``adaptqr.householder_product`` of the batch's factors instead. ``ONE_CALL_KNOBS=k=v[,k=v]``
sets experiment knobs (integers) for both calls.
"""

import os
import sys

import torch

import adaptqr
from adaptqr import config
from adaptqr.testing import generate

B, n = (int(x) for x in sys.argv[1].split("x"))
cond = float(sys.argv[2]) if len(sys.argv) > 2 else (2 if n <= 1024 else 1)
case = sys.argv[3] if len(sys.argv) > 3 else "dense"
A = generate(B, n, cond, 7, case, "cuda")
if os.environ.get("ONE_CALL_OP", "geqrf") == "householder_product":
    H, tau = adaptqr.geqrf(A)
    call = lambda: adaptqr.householder_product(H, tau)  # noqa: E731
else:
    call = lambda: adaptqr.geqrf(A)  # noqa: E731
knobs = dict(kv.split("=") for kv in filter(None, os.environ.get("ONE_CALL_KNOBS", "").split(",")))
with config.experiment(**{k: int(v) for k, v in knobs.items()}):
    call()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("profile")
    call()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
print(f"{B}x{n} cond {cond} {case}: done")
