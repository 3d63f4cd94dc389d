"""Issue 9 (EXPERIMENTS.md C11): where a 32-column Cholesky leaf's ~22 us go. Variants of
paths/kernels/cholqr_leaf.py's chol_leaf_kernel, built here from its helpers: the kernel as
it is, without the doubling inverse, with ``rsqrt`` instead of ``1 / sqrt``, and an empty
leaf (load and store only: the launch and memory floor).

Timed as warp_leaf.py: 64 leaves of 8 Gram matrices of 2048 columns, one launch each,
replayed as a CUDA graph, L2 flushed.

Run there: ``python3 bench/devscripts/leaf_parts.py`` (JSON to ``$OUT/leaf_parts.json``).
"""

from __future__ import annotations

import importlib.util
import json
import os

import torch
import triton
import triton.language as tl

from adaptqr.paths.kernels.cholqr_leaf import (CHOL_MIN_REL_PIVOT, LEAF, LOG2_LEAF, _inv_upper,
                                               _load_block, _load_sym_block, _store_block)

_here = os.path.dirname(__file__)
_spec = importlib.util.spec_from_file_location("devmicro", os.path.join(_here, "micro.py"))
_micro = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_micro)


@triton.jit
def leaf_variant(G, R, RI, GREF, BAD, off, sr, sc, n, c0, w, NB: tl.constexpr,
                 LOG2NB: tl.constexpr, STEPS: tl.constexpr, INV: tl.constexpr,
                 RSQRT: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    base = b * n * n
    ii = tl.arange(0, NB)
    Gp = G + base + off
    Rp = R + base + off
    Gb = _load_sym_block(G + base, off, sr, sc, w, NB)
    live = (ii[:, None] < w) & (ii[None, :] < w)
    bad = tl.program_id(0) * 0
    if STEPS:
        for i in range(0, w):
            tl.debug_barrier()
            row = tl.load(Gp + i * sr + ii * sc, mask=(ii >= i) & (ii < w), other=0.0)
            col = tl.load(Gp + i * sr + ii[:, None] * sc,
                          mask=(ii[:, None] >= i) & (ii[:, None] < w), other=0.0)
            d = tl.load(Gp + i * sr + i * sc)
            g0 = tl.load(GREF + b * n + c0 + i)
            good = (d > CHOL_MIN_REL_PIVOT * g0) & (d < float("inf"))
            bad = tl.where(good, bad, 1)
            if RSQRT:
                rs = tl.math.rsqrt(tl.where(good, d, 1.0))
            else:
                rs = 1.0 / tl.sqrt(tl.where(good, d, 1.0))
            r_row = row * rs
            tl.store(Rp + i * sr + ii * sc, r_row, mask=ii < w)
            Gb = Gb - (col * rs) * r_row[None, :]
            nxt = (ii[:, None] == i + 1) & (ii[None, :] >= i + 1) & live
            tl.store(Gp + ii[:, None] * sr + ii[None, :] * sc, Gb, mask=nxt)
    else:
        _store_block(R + base, off, sr, sc, w, Gb, NB)
    tl.debug_barrier()
    Rb = _load_block(R + base, off, sr, sc, w, NB)
    if INV:
        Rb = _inv_upper(Rb, NB, LOG2NB)
    _store_block(RI + base, off, sr, sc, w, Rb, NB)
    old = tl.load(BAD + b)
    tl.store(BAD + b, tl.maximum(old, bad))


def main():
    B, n = 8, 2048
    X = torch.randn(B, n + 16, n, dtype=torch.float64, device="cuda")
    G0 = X.mT @ X
    gref = G0.diagonal(dim1=-2, dim2=-1).contiguous()
    leaves = n // LEAF
    out = {"device": torch.cuda.get_device_name(), "git": os.environ.get("ADAPTQR_COMMIT")}
    variants = {"as_is": dict(STEPS=True, INV=True, RSQRT=False),
                "no_inverse": dict(STEPS=True, INV=False, RSQRT=False),
                "rsqrt": dict(STEPS=True, INV=True, RSQRT=True),
                "inverse_only": dict(STEPS=False, INV=True, RSQRT=False),
                "empty": dict(STEPS=False, INV=False, RSQRT=False)}
    for warps in (4, 1):
        for name, kw in variants.items():
            G = G0.clone()
            R, Ri = torch.zeros_like(G0), torch.zeros_like(G0)
            bad = torch.zeros(B, dtype=torch.int32, device="cuda")

            def run():
                for i in range(leaves):
                    c0 = i * LEAF
                    leaf_variant[(B,)](G, R, Ri, gref, bad, c0 * (n + 1), n, 1, n, c0, LEAF,
                                       NB=LEAF, LOG2NB=LOG2_LEAF, num_warps=warps, **kw)

            us = round(1000 * _micro.gpu_ms(run, graph=True) / leaves, 2)
            out[f"{name}_w{warps}_us"] = us
            print(name, warps, us, flush=True)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "leaf_parts.json"), "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
