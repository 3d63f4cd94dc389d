"""Issue 8 (FP16-resident trailing matrix): what FP16 storage or FP16 operands do to the
qr_v2 factor residual, simulated on the CPU (EXPERIMENTS.md N1; no GPU needed).

Blocked Householder in float64 (panels of 32 by LAPACK, each panel's compact WY applied to
the trailing matrix), with one rounding added per panel update:

* ``fp32``: the trailing matrix rounded to float32 (what the FP32 path stores);
* ``fp16_resident``: rounded to float16 after a per-matrix power-of-two scale (max entry at
  2^14: no overflow, no subnormals for these cases);
* ``fp16_operands``: the update's products from float16 operands (V, the trailing matrix,
  and ``Y = T^T V^T C``), accumulated in float64 (FP16 tensor cores with FP32 accumulation,
  minus the FP32 accumulation's own rounding); the matrix itself stays float64;
* ``bf16_operands``: the same with bfloat16 operands.

Printed: the worst scaled factor residual ``||R - Q^T A||_1 / (n eps32 ||A||_1)`` (qr_v2's
check; gate 20, this project's bar 10) over the batch, per case and mode.

``--groups``: the float16 storage rounded once a group of G columns (32, 64, 128: the far
columns go back to float16 after the group's last panel, the group's own columns and the
next panel stay float32, the copy starts as float16 past the first group), with the far
update's products exact (``exact``: the "f16x3" products, whose error is float32's), from
float16 operands a panel (``panel``: the FP16 route's products), or from float16 operands
once a group through the group's merged ``V`` and ``T`` (``merged``); EXPERIMENTS.md N32.

Run: ``python bench/devscripts/fp16_sim.py [out.json]`` (seconds on 2 cores);
``--batch640``: the worst of 640 dense 512 x 512 matrices, FP16 modes only (minutes);
``--groups [out.json]``: the group modes (a minute).
"""

from __future__ import annotations

import json
import sys

import torch

from adaptqr.paths.reference import _larft  # LAPACK's larft, as the reference path makes T
from adaptqr.testing.generators import generate

EPS32 = 2.0 ** -23
NB = 32


def _pow2_scale(C):
    amax = C.abs().amax(dim=(-2, -1), keepdim=True).clamp_min(1e-300)
    return torch.exp2(14 - torch.ceil(torch.log2(amax)))


def _round(x, dt):
    s = _pow2_scale(x)
    return (x * s).to(dt).double() / s


def factor(A, mode):
    B, m, n = A.shape
    H = A.double().clone()
    tau = torch.zeros(B, n, dtype=torch.float64)
    for k in range(0, n, NB):
        Hp, tp = torch.geqrf(H[:, k:, k:k + NB])
        H[:, k:, k:k + NB] = Hp
        tau[:, k:k + NB] = tp
        if k + NB >= n:
            break
        V = _reflectors(Hp)
        T = _larft(V, tp)
        C = H[:, k:, k + NB:]
        if mode in ("fp16_operands", "bf16_operands"):
            C = _apply(V, T, C, torch.float16 if mode == "fp16_operands" else torch.bfloat16)
        else:
            C = _apply(V, T, C)
            if mode == "fp32":
                C = C.float().double()
            elif mode == "fp16_resident":
                C = _round(C, torch.float16)
        H[:, k:, k + NB:] = C
    return H, tau


def _reflectors(Hp):
    """A panel's unit lower-trapezoidal ``V`` from geqrf's output ``Hp``."""
    V = torch.tril(Hp, -1)
    V[:, range(V.shape[-1]), range(V.shape[-1])] = 1.0
    return V


def _apply(V, T, C, dt=None):
    """``C`` after the panel's ``I - V T^T V^T``: exact, or with ``V``, ``C`` and ``Y = T^T V^T
    C`` rounded to ``dt`` (its products from ``dt`` operands, a wide accumulator)."""
    if dt is None:
        return C - V @ (T.mT @ (V.mT @ C))
    Vr = _round(V, dt)
    return C - Vr @ _round(T.mT @ (Vr.mT @ _round(C, dt)), dt)


def factor_grouped(A, G, ops):
    """``--groups``' model: float16 storage rounded once a group of ``G`` columns, the far
    update's products as ``ops`` says (module docstring)."""
    B, m, n = A.shape
    H = A.double().clone()
    H[:, :, G:] = _round(H[:, :, G:], torch.float16)
    tau = torch.zeros(B, n, dtype=torch.float64)
    for g0 in range(0, n, G):
        g1 = min(n, g0 + G)
        for k in range(g0, g1, NB):
            Hp, tp = torch.geqrf(H[:, k:, k:k + NB])
            H[:, k:, k:k + NB] = Hp
            tau[:, k:k + NB] = tp
            V = _reflectors(Hp)
            T = _larft(V, tp)
            H[:, k:, k + NB:g1] = _apply(V, T, H[:, k:, k + NB:g1])
            if g1 < n and ops != "merged":
                H[:, k:, g1:] = _apply(V, T, H[:, k:, g1:], None if ops == "exact" else torch.float16)
        if g1 >= n:
            break
        if ops == "merged":
            V = _reflectors(H[:, g0:, g0:g1])
            H[:, g0:, g1:] = _apply(V, _larft(V, tau[:, g0:g1]), H[:, g0:, g1:], torch.float16)
        if g1 + NB < n:
            H[:, g1:, g1 + NB:] = _round(H[:, g1:, g1 + NB:], torch.float16)
    return H, tau


def scaled_residual(A, H, tau):
    A = A.double()
    n = A.shape[-1]
    Q = torch.linalg.householder_product(H, tau)
    R = torch.triu(H)
    res = torch.linalg.matrix_norm(R - Q.mT @ A, ord=1)
    return (res / (n * EPS32 * torch.linalg.matrix_norm(A, ord=1))).max().item()


def worst_over(batch, n, cond, seed, case, mode, chunk=32):
    """Worst scaled residual over ``batch`` matrices, factored ``chunk`` at a time (memory)."""
    worst = 0.0
    for i in range(0, batch, chunk):
        A = generate(min(chunk, batch - i), n, cond, seed + i, case, "cpu")
        worst = max(worst, scaled_residual(A, *factor(A, mode)))
    return worst


def main():
    out = {}
    if "--groups" in sys.argv:
        for B, n, cond, seed, case in ((8, 512, 2, 1029, "dense"), (8, 512, 0, 1030, "dense"),
                                       (8, 512, 0, 770003, "rankdef"), (8, 512, 0, 770004, "clustered"),
                                       (2, 1024, 0, 770005, "nearrank"), (2, 1024, 2, 75342, "dense")):
            A = generate(B, n, cond, seed, case, "cpu")
            row = {f"{ops} G{G}": scaled_residual(A, *factor_grouped(A, G, ops))
                   for ops in ("exact", "panel", "merged") for G in (32, 64, 128)}
            out[f"{B}x{n} {case} cond={cond}"] = row
            print(f"{B}x{n} {case} cond={cond}:", {k: round(v, 2) for k, v in row.items()}, flush=True)
        path = [a for a in sys.argv[1:] if not a.startswith("--")]
        json.dump(out, open(path[0], "w") if path else sys.stdout, indent=1)
        return
    if "--batch640" in sys.argv:
        # The tail over a benchmark-sized batch: 640 dense 512 x 512 matrices (cond 2).
        for mode in ("fp16_resident", "fp16_operands"):
            r = worst_over(640, 512, 2, 1029, "dense", mode)
            out[f"640x512 dense {mode}"] = r
            print(f"640x512 dense cond=2: {mode:14s} worst scaled factor residual {r:8.3f}",
                  flush=True)
        json.dump(out, sys.stdout, indent=1)
        return
    for B, n, cond, seed, case in ((4, 512, 2, 1029, "dense"), (2, 1024, 2, 75342, "dense"),
                                   (4, 512, 0, 901, "rowscale"), (4, 512, 0, 902, "clustered"),
                                   (4, 512, 0, 903, "nearcollinear"), (4, 512, 0, 904, "band")):
        A = generate(B, n, cond, seed, case, "cpu")
        for mode in ("fp32", "fp16_resident", "fp16_operands", "bf16_operands"):
            r = scaled_residual(A, *factor(A, mode))
            out[f"{B}x{n} {case} {mode}"] = r
            print(f"{B}x{n} {case} cond={cond}: {mode:14s} worst scaled factor residual {r:8.3f}",
                  flush=True)
    json.dump(out, sys.stdout if len(sys.argv) < 2 else open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
