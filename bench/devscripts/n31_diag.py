"""N31's failure at 8x2048 rankdef cond 1 (run 0711): where the non-finite entries of the
composed route's output are (matrix, first column, rows), and the same input without the
knob and with it at smaller n. Run on the device: ``python3 bench/devscripts/n31_diag.py``."""

from __future__ import annotations

import torch

import adaptqr
from adaptqr import config
from adaptqr.testing.generators import generate


def report(tag, A, knobs):
    with config.experiment(**knobs):
        H, tau = adaptqr.geqrf(A)
    torch.cuda.synchronize()
    bad = ~torch.isfinite(H)
    badt = ~torch.isfinite(tau)
    print(f"{tag}: non-finite H {int(bad.sum())}, tau {int(badt.sum())}")
    for b in range(A.shape[0]):
        if bad[b].any() or badt[b].any():
            cols = bad[b].any(0).nonzero().flatten()
            rows = bad[b].any(1).nonzero().flatten()
            tc = badt[b].nonzero().flatten()
            print(f"  matrix {b}: H cols {cols.min().item() if cols.numel() else '-'}.."
                  f"{cols.max().item() if cols.numel() else '-'} ({cols.numel()}), rows "
                  f"{rows.min().item() if rows.numel() else '-'}..{rows.max().item() if rows.numel() else '-'}, "
                  f"tau cols {tc[:4].tolist()}..{tc[-1:].tolist()} ({tc.numel()})")


for B, n, cond, case in ((8, 2048, 1, "rankdef"), (4, 2048, 2, "rankdef"), (8, 1536, 1, "rankdef"),
                         (16, 1024, 1, "rankdef"), (2, 4096, 1, "rankdef")):
    A = generate(B, n, cond, 5205, case, "cuda")
    report(f"{B}x{n} {case} cond={cond} default", A, {})
    report(f"{B}x{n} {case} cond={cond} fp16_compose=1", A, {"fp16_compose": 1})
    report(f"{B}x{n} {case} cond={cond} compose, lookahead=0", A, {"fp16_compose": 1, "lookahead": 0})
