"""Degenerate inputs for geqrf (issue 22): the structures where a column becomes exactly zero,
tiny or huge on the way, built from a seed on any device.

:func:`degenerate` makes one ``m x n`` float32 matrix of a named structure; :func:`judge`
(geqrf's ``(H, tau)``) and :func:`judge_qr` (``linalg.qr``'s ``(Q, R)``) check a
factorization of a batch of them the way the degenerate-input tests do:

- finite input with representable factors: the half gate (factor residual 10, orthogonality
  50, in units of ``n * eps32``);
- finite input whose factors are not representable to float32's relative precision
  (subnormal entries, so R is on the subnormal grid): what torch.geqrf gives (on the CPU,
  LAPACK) or better;
- a NaN or Inf entry: that matrix's outputs hold a NaN or Inf, as torch's do.

Example::

    >>> import torch
    >>> from adaptqr.testing.degenerate import STRUCTURES, degenerate, judge
    >>> A = torch.stack([degenerate("repeated", 8, seed=1), degenerate("nan", 8, seed=2)])
    >>> H, tau = torch.geqrf(A)
    >>> [v.ok for v in judge(A, H, tau)]
    [True, True]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from adaptqr import originals
from adaptqr.testing.check import check_geqrf, check_qr

#: The structures, by name. ``rankK``: rank K (0 to 3); ``repeated``: one column repeated;
#: ``duplicated``: random columns, a third of them copies of others; ``cancel``: integer
#: columns with ``a_j = a_i + a_k`` exactly; ``zero_rows``: a third of the rows zero;
#: ``single``: one nonzero entry; ``subnormal``: ``randn * 1e-40``; ``huge``: ``randn``
#: near float32's largest (its R still representable); ``mixed_scale``: columns scaled 1e-30
#: and 1e30 in one matrix; ``nan`` / ``inf``: a random matrix with one such entry.
STRUCTURES = ("rank0", "rank1", "rank2", "rank3", "repeated", "duplicated", "cancel",
              "zero_rows", "single", "subnormal", "huge", "mixed_scale", "nan", "inf")

#: Half the public gate (spec/qr_v2.md), the project's bar.
BAR_FACTOR = 10.0
BAR_ORTH = 50.0
#: Largest entry of ``huge`` inputs over ``sqrt(m)``: column norms stay below about 1e38.
HUGE_SCALE = 2.0e37


def degenerate(structure: str, n: int, m: int | None = None, *, seed: int,
               device: str | torch.device = "cpu") -> torch.Tensor:
    """One ``m x n`` (``m`` defaults to ``n``) float32 matrix of ``structure``, from ``seed``."""
    if structure not in STRUCTURES:
        raise ValueError(f"unknown structure {structure!r}; known: {STRUCTURES}")
    m = n if m is None else m
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float32)

    def pick(k, hi):
        return torch.randint(0, hi, (k,), generator=g)

    if structure.startswith("rank"):
        r = int(structure[4:])
        A = randn(m, r) @ randn(r, n) if r else torch.zeros(m, n)
    elif structure == "repeated":
        A = randn(m, 1).expand(m, n).clone()
    elif structure == "duplicated":
        A = randn(m, n)
        dst = pick(max(1, n // 3), n)
        A[:, dst] = A[:, pick(dst.numel(), n)]
    elif structure == "cancel":
        # Small integers: every sum is exact, so the dependent columns cancel exactly.
        A = torch.randint(-8, 9, (m, n), generator=g).float()
        for j in pick(max(1, n // 4), n).tolist():
            i, k = pick(2, n).tolist()
            A[:, j] = A[:, i] + A[:, k]
    elif structure == "zero_rows":
        A = randn(m, n)
        A[pick(max(1, m // 3), m)] = 0.0
    elif structure == "single":
        A = torch.zeros(m, n)
        i, j = int(pick(1, m)), int(pick(1, n))
        A[i, j] = float(randn(1)) * 10.0 ** float(torch.randint(-30, 31, (1,), generator=g))
    elif structure == "subnormal":
        A = (randn(m, n).double() * 1e-40).float()
    elif structure == "huge":
        A = randn(m, n).clamp(-4, 4) * (HUGE_SCALE / 4 / math.sqrt(m))
    elif structure == "mixed_scale":
        A = randn(m, n)
        big = torch.rand(n, generator=g) < 0.5
        A = A * torch.where(big, 1e30, 1e-30)
    else:  # nan, inf
        A = randn(m, n)
        A[int(pick(1, m)), int(pick(1, n))] = float("nan") if structure == "nan" else float("inf")
    return A.contiguous().to(device)


@dataclass
class Verdict:
    """One matrix's outcome under :func:`judge`: ``ok``, and ``why`` for the record."""

    ok: bool
    why: str


def representable(A: torch.Tensor) -> bool:
    """Whether geqrf's factors of the finite matrix ``A`` can hold float32's relative precision:
    every nonzero entry normal (R, like the entries, would otherwise sit on the subnormal
    grid, whose spacing exceeds ``n * eps32 * ||A||_1``)."""
    a = A.abs()
    return bool(((a == 0) | (a >= torch.finfo(torch.float32).tiny)).all())


def judge(A: torch.Tensor, H: torch.Tensor, tau: torch.Tensor) -> list[Verdict]:
    """A :class:`Verdict` for each matrix of the ``(B, m, n)`` batch ``A`` factored as ``(H,
    tau)`` (see the module docstring)."""
    return _judge(A, (H, tau), check_geqrf, originals.geqrf)


def judge_qr(A: torch.Tensor, Q: torch.Tensor, R: torch.Tensor) -> list[Verdict]:
    """:func:`judge` for a reduced ``(Q, R)`` of ``A`` (``linalg.qr``); the subnormal grid's
    reference is torch's ``linalg.qr`` on the CPU (LAPACK).

    >>> import torch
    >>> A = degenerate("rank1", 6, seed=3)[None]
    >>> [v.ok for v in judge_qr(A, *torch.linalg.qr(A))]
    [True]
    """
    return _judge(A, (Q, R), check_qr, originals.linalg_qr)


def _judge(A: torch.Tensor, outs: tuple, check, reference) -> list[Verdict]:
    """Verdicts of ``check(a, *outs)`` a matrix, ``reference(a)``'s check the bound on the
    subnormal grid."""
    out = []
    for b in range(A.shape[0]):
        a, mine = A[b:b + 1], [t[b:b + 1] for t in outs]
        finite_out = all(bool(torch.isfinite(t).all()) for t in mine)
        if not bool(torch.isfinite(a).all()):  # (checks run where the tensors are)
            out.append(Verdict(not finite_out, "non-finite input: non-finite output expected"))
            continue
        if not finite_out:
            out.append(Verdict(False, "finite input, non-finite output"))
            continue
        r = check(a, *mine)
        f, o = r.worst_factor, r.worst_orth
        if representable(a):
            out.append(Verdict(f <= BAR_FACTOR and o <= BAR_ORTH,
                               f"factor {f:.3g} (bar {BAR_FACTOR}), orth {o:.3g} (bar {BAR_ORTH})"))
            continue
        # Subnormal R: at least as good as LAPACK's of the same matrix, rounding aside.
        rt = check(a.cpu(), *reference(a.cpu()))
        fb = max(BAR_FACTOR, 1.5 * rt.worst_factor)
        ob = max(BAR_ORTH, 1.5 * rt.worst_orth)
        out.append(Verdict(f <= fb and o <= ob,
                           f"subnormal grid: factor {f:.3g} (torch {rt.worst_factor:.3g}), "
                           f"orth {o:.3g} (torch {rt.worst_orth:.3g})"))
    return out
