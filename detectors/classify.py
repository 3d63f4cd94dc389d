"""Per-matrix route from the probe's features, in torch ops on the device (no host sync).

Routes (codes are positions in ``adaptqr.registry.ROUTE_CLASSES``):

- ``"upper"``: the strictly-lower part is exactly zero. Nothing to factor
  (``n_active = 0``): torch/LAPACK give ``tau = 0`` and ``H = A`` for such a matrix.
- ``"lowrank"``: a suffix of columns is negligible (``n_active < min(m, n)``); only the
  leading ``n_active`` columns get reflectors, :func:`adaptqr.detectors.finish_tail` clears
  the rest.
- ``"dense"``: everything else, and every matrix holding a NaN or Inf (``n_active = k``,
  so NaN propagates exactly as the full factorization propagates it).

The bound behind the negligible test (docs/DETECTORS.md has the long form). Let the path
factor the leading ``r`` columns (reflectors ``Q1``), apply ``Q1^T`` to the trailing
columns, and let :func:`finish_tail` zero rows ``i > j`` of every column ``j >= r`` with
``tau_j = 0``. Then ``Q = Q1`` (tau = 0 reflectors are identities, so orthogonality is
untouched) and column ``j >= r`` of ``R - Q^T A`` is, besides the usual rounding, exactly
the dropped part ``-(Q1^T a_j)[j+1:]``, whose 1-norm is at most
``sqrt(m) * ||(Q1^T a_j)[r:]||_2 <= sqrt(m) * ||a_j||_2``. In the acceptance check's units
(``n * eps32 * ||A||_1``) that adds at most ``sqrt(m) ||a_j||_2 / (n eps32 ||A||_1)``, so

    column j is negligible when  ||a_j||_2 <= TAIL_BUDGET * eps32 * ||A||_1 * n / sqrt(m)

(``sqrt(n)`` for square matrices) keeps the added scaled residual <= ``TAIL_BUDGET``.

Example::

    >>> import torch
    >>> from adaptqr.detectors import probe, classify
    >>> A = torch.randn(3, 8, 8)
    >>> A[0] = torch.triu(A[0]); A[1, :, 6:] = 0
    >>> H = A.mT.contiguous().mT
    >>> f = probe(H)
    >>> classify(f).tolist(), f["n_active"].tolist()
    ([2, 1, 0], [0, 6, 8])
"""

from __future__ import annotations

import math

import torch

# Scaled factor residual (units of n * eps32 * ||A||_1) that dropping a negligible tail may
# add. The project's bar is 10 (half the gate of 20) and a good Householder factorization
# uses about 1-3 of it (measured on the qr_v2 cases), so 1 leaves a wide margin. With 1 the
# qr_v2 "clustered" columns at 4*eps32 fall below the bound by a factor ~n/5 and the
# sqrt(eps32) ones stay above it up to n ~ 4000 (docs/DETECTORS.md).
TAIL_BUDGET = 1.0

def route_codes() -> dict[str, int]:
    """Name -> int code of every route class (``adaptqr.registry.ROUTE_CLASSES``)."""
    from adaptqr.registry import ROUTE_CLASSES

    return {name: i for i, name in enumerate(ROUTE_CLASSES)}


def tail_bound_scale(m: int, n: int, dtype: torch.dtype = torch.float32) -> float:
    """``TAIL_BUDGET * eps * n / sqrt(m)``: the tail bound per unit of ``||A||_1``.

    eps of ``dtype`` (eps32 for float32 input, which is the acceptance check's unit).
    """
    return TAIL_BUDGET * torch.finfo(dtype).eps * n / math.sqrt(max(m, 1))


def tail_bound(norm1: torch.Tensor, m: int, n: int) -> torch.Tensor:
    """``(B,)`` column 2-norm at or below which a trailing column is negligible:
    ``||A||_1 * tail_bound_scale(m, n)``."""
    return norm1 * tail_bound_scale(m, n, norm1.dtype)


def active_columns(features: dict[str, torch.Tensor], m: int, n: int) -> torch.Tensor:
    """``(B,)`` int32 ``n_active``: ``min(m, n)`` minus the longest negligible column suffix.

    0 for an upper triangular (or zero) matrix; ``min(m, n)`` for one holding NaN/Inf.
    """
    k = min(m, n)
    bound = features["tail_bound"]
    norm2 = features["col_norm2"]
    # NaN compares False: a NaN column is never negligible (and the matrix goes dense). A
    # bound that overflowed to inf (||A||_1 past float32's range, entries near 1e36) proves
    # nothing negligible either.
    keep = ~((norm2 <= bound[:, None]) & torch.isfinite(bound)[:, None])
    pos = torch.arange(1, n + 1, device=norm2.device, dtype=torch.int32)
    if n:
        last_kept = torch.where(keep, pos, torch.zeros_like(pos)).amax(dim=-1)
    else:
        last_kept = torch.zeros(norm2.shape[:1], dtype=torch.int32, device=norm2.device)
    n_active = last_kept.clamp_max(k)
    n_active = torch.where(features["lower_zero"], torch.zeros_like(n_active), n_active)
    n_active = torch.where(features["nonfinite"], torch.full_like(n_active, k), n_active)
    return n_active.to(torch.int32)


def nonzero_columns(features: dict[str, torch.Tensor], n: int) -> torch.Tensor:
    """``(B,)`` int32 ``n_nonzero``: one past the last column that is not exactly zero (NaN
    and Inf count as nonzero); ``n`` for a matrix holding NaN/Inf. Columns from it on are
    exactly zero, so every reflector leaves them exactly zero: a path may skip their update
    (for a non-finite matrix torch turns them into NaN: no skipping there)."""
    norm2 = features["col_norm2"]
    pos = torch.arange(1, n + 1, device=norm2.device, dtype=torch.int32)
    if n:
        last = torch.where(norm2 != 0, pos, torch.zeros_like(pos)).amax(dim=-1)
    else:
        last = torch.zeros(norm2.shape[:1], dtype=torch.int32, device=norm2.device)
    last = torch.where(features["nonfinite"], torch.full_like(last, n), last)
    return last.to(torch.int32)


def classify(features: dict[str, torch.Tensor]) -> torch.Tensor:
    """``(B,)`` int32 route codes from :func:`adaptqr.detectors.probe`'s features.

    Uses ``features["n_active"]`` (computed by ``probe``); when absent, computes it and
    stores it in ``features`` so the dispatcher can hand it to the path.
    """
    norm2 = features["col_norm2"]
    B, n = norm2.shape
    m = features["row_norm2"].shape[-1]
    if "n_active" not in features:
        features["n_active"] = active_columns(features, m, n)
    n_active = features["n_active"]
    codes = route_codes()
    k = min(m, n)
    routes = torch.where(
        n_active < k,
        torch.full_like(n_active, codes["lowrank"]),
        torch.full_like(n_active, codes["dense"]),
    )
    upper = features["lower_zero"] & ~features["nonfinite"]
    routes = torch.where(upper, torch.full_like(n_active, codes["upper"]), routes)
    return routes.to(torch.int32)
