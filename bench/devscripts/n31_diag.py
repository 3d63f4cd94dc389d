"""N31's failure at 8x2048 rankdef cond 1 (run 0711): where the non-finite entries of the
composed route's output are (matrix, first column, rows), and the same input without the
knob and with it at smaller n. Run on the device: ``python3 bench/devscripts/n31_diag.py``."""

from __future__ import annotations

import torch

import adaptqr
from adaptqr import config
from adaptqr.testing.generators import generate


def _span(idx):
    """``first..last (count)`` of a 1-D index tensor, ``-`` where it is empty."""
    return f"{idx.min().item()}..{idx.max().item()} ({idx.numel()})" if idx.numel() else "-"


def report(tag, A, knobs):
    with config.experiment(**knobs):
        H, tau = adaptqr.geqrf(A)
    torch.cuda.synchronize()
    bad, badt = ~torch.isfinite(H), ~torch.isfinite(tau)
    print(f"{tag}: non-finite H {int(bad.sum())}, tau {int(badt.sum())}")
    for b in range(A.shape[0]):
        if bad[b].any() or badt[b].any():
            print(f"  matrix {b}: H cols {_span(bad[b].any(0).nonzero().flatten())}, rows "
                  f"{_span(bad[b].any(1).nonzero().flatten())}, tau cols "
                  f"{_span(badt[b].nonzero().flatten())}")


for B, n, cond, case in ((8, 2048, 1, "rankdef"), (4, 2048, 2, "rankdef"), (8, 1536, 1, "rankdef"),
                         (16, 1024, 1, "rankdef"), (2, 4096, 1, "rankdef")):
    A = generate(B, n, cond, 5205, case, "cuda")
    report(f"{B}x{n} {case} cond={cond} default", A, {})
    report(f"{B}x{n} {case} cond={cond} fp16_compose=1", A, {"fp16_compose": 1})
    report(f"{B}x{n} {case} cond={cond} compose, lookahead=0", A, {"fp16_compose": 1, "lookahead": 0})
