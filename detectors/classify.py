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

# A square or tall matrix's negligible tail is dropped whole: its columns are zero in the
# result (``n_kept``), so no update touches them. The same bound as dropping only their
# rows below the diagonal (docs/DETECTORS.md, "Dropping the tail"). H100 run 1149
# (EXPERIMENTS.md N33), off / on: 640x512 clustered 5.367 / 3.693 ms, 60x1024 mixed 3.932 /
# 3.844; dense, rankdef, nearrank within 0.5 %. Knob ``drop_tail``.
DROP_TAIL = True

# The FP16 route (issue 8; docs/NUMERICS.md "FP16 route"). A dense matrix whose trailing
# matrix is kept in float16 (one rounding, relative 2^-11, each time a panel update writes
# it) and updated from float16 operands adds to the scaled factor residual about
#
#     est = FP16_EST_COEF * 2^12 * sqrt(m) / n * max_j sqrt(j / FP16_EST_NB + 1) ||a_j||_2 / ||A||_1
#
# (2^12 = 2^-11 / eps32; column j is rounded about j / nb times, the errors add like a
# random walk, and its 1-norm is about sqrt(m) times its 2-norm: trailing columns never
# outgrow ||a_j||_2). The coefficient is the measured ratio of the residual to the rest
# (EXPERIMENTS.md N3). A matrix takes the route when est <= FP16_BUDGET.
FP16_EST_COEF = 0.5
FP16_BUDGET = 6.0
# The panel width the estimate counts roundings with: the Householder schedules' nb for
# n >= FP16_MIN_N (paths/schedules.py, BLOCKED_BY_N).
FP16_EST_NB = 32
# Smallest n the FP16 route is offered for (smaller ones are faster than their probe's
# gain and their gate, 20 n eps32, is tighter: 40x176 measured 17 with float16 products).
FP16_MIN_N = 512
# Largest n the FP16 route is offered for. N7 (run 1805, one panel a pass) measured it slower
# through the public call at 8x2048 (16.38 against 11.58 ms) and 2x4096 (24.79 / 22.11).
# With the pair update (N9) that changed (G3, run 2019): 8x2048 9.59 ms against 11.49
# eager (9.22 / 11.16 through a graph), factor residual 1.46 (bar 10); 2x4096 still slower
# (23.58 / 22.12), so the route stopped at 2048. Since the CUDA C panels, the look-ahead and
# the Gram panels, the updates set 4096's time and the route wins (run 0027-0028, FP32 /
# FP16 to 4096, ms: 2x4096 13.43 / 10.59, factor residual 1.34; 1x4096 9.44 / 8.66; 1x3072
# 6.156 / 6.157; EXPERIMENTS.md N18); larger n is not measured.
FP16_MAX_N = 4096
# The float16 copy's unit: a routed matrix is scaled by a power of two that brings its
# largest column 2-norm to at most this, so no entry, W = C^T V or product overflows 65504.
FP16_TARGET = 16384.0
# Largest-column norms outside [2^-FP16_EXP_RANGE, 2^FP16_EXP_RANGE] (7.9e-31 .. 1.3e30)
# keep the FP32 route: the scale and its inverse stay normal float32 numbers.
FP16_EXP_RANGE = 100.0


def fp16_est_scale(m: int, n: int, max_n: int | None = None) -> float:
    """``FP16_EST_COEF * 2^12 * sqrt(m) / n``: the estimate's factor besides the norms, or 0
    (no matrix takes the FP16 route) outside ``FP16_MIN_N <= n <= max_n`` (default: the
    snapshot's ``fp16_max_n`` knob, else ``FP16_MAX_N``)."""
    if max_n is None:
        from adaptqr import config

        max_n = config.snapshot().knobs.fp16_max_n
    if not FP16_MIN_N <= n <= (max_n or FP16_MAX_N) or m < n:
        return 0.0
    return FP16_EST_COEF * 4096.0 * math.sqrt(m) / n


# Per-matrix prescaling (issue 22, adaptqr.paths.prescale). A matrix whose largest column
# 2-norm has floor(log2) outside [PRESCALE_MIN_EXP, PRESCALE_MAX_EXP) is multiplied by a power
# of two before it is factored (its largest column norm then in [2^PRESCALE_TARGET_EXP,
# 2^(PRESCALE_TARGET_EXP + 1))) and R is multiplied back after: V and tau do not change under
# such a scaling. Two reasons for the window:
# - no intermediate of the trailing updates is subnormal or overflows (the tensor-core
#   products lost randn * 1e-40: factor residual 7e3 n eps32 on the H200, against LAPACK's
#   1.9), which needed [2^-40, 2^40) (issue 22);
# - the "f16x3" products (paths.kernels.products._dot, EXPERIMENTS.md T10) take the trailing
#   matrix's entries as float16 halves: they must stay below 65504 (entries are at most the
#   largest column norm, < 2^12), and well above float16's subnormals, where the halves keep
#   an absolute accuracy of 2^-36 (largest column norm >= 2^-2).
# An overflowed norm (inf: at least 2^128, at most 2^128 sqrt(m) for entries below float32's
# largest) counts as 2^128, which lands the scaled norm in [2^4, 2^12] for m up to 2^16.
# Power-of-two scaling leaves every rounding where it was: results of matrices scaled or
# not are the same but for entries that were subnormal.
PRESCALE_MIN_EXP = -2
PRESCALE_MAX_EXP = 12
PRESCALE_TARGET_EXP = 4
PRESCALE_INF_EXP = 128


def prescale_exponents(n2max: torch.Tensor, finite: torch.Tensor) -> torch.Tensor:
    """``(B,)`` int32 exponents ``e``: matrix b is factored as ``A * 2^e``. ``n2max``: its
    largest column 2-norm (inf where that overflowed); 0 inside the window, for a zero matrix
    and for a non-finite one (``finite`` False).

    >>> import torch
    >>> prescale_exponents(torch.tensor([20.0, 1e-3, 1e6]), torch.ones(3, dtype=torch.bool)).tolist()
    [0, 14, -15]
    """
    _, ex = torch.frexp(n2max.to(torch.float32))
    lg = (ex - 1).to(torch.int32)  # floor(log2(n2max)), subnormals included
    lg = torch.where(torch.isinf(n2max), torch.full_like(lg, PRESCALE_INF_EXP), lg)
    out = (n2max > 0) & ((lg < PRESCALE_MIN_EXP) | (lg >= PRESCALE_MAX_EXP))
    return torch.where(out & finite, PRESCALE_TARGET_EXP - lg, torch.zeros_like(lg)).to(torch.int32)


def fp16_scales(norm1: torch.Tensor, norm2: torch.Tensor, routes: torch.Tensor,
                n_active: torch.Tensor, n_kept: torch.Tensor, m: int,
                prescale: torch.Tensor | None = None) -> torch.Tensor:
    """``(B,)`` float32 FP16 storage scales from the column 1- and 2-norms ``(B, n)``: a power
    of two for a matrix that takes the FP16 route, 0 for the FP32 route. With ``prescale``
    (:func:`prescale_exponents`) the scale is that of the prescaled matrix.

    The route needs a finite "dense" or "lowrank" matrix with ``n_active == n_kept``
    (:func:`kept_columns`) and the estimate above within ``FP16_BUDGET``. The trailing
    kernels then run every tile up to ``n_kept`` at every update, so nothing ``H`` needs
    stays in the float16 copy, and the columns from ``n_kept`` on are never read or written
    (:func:`adaptqr.detectors.finish_tail` zeros them). A wide matrix's negligible nonzero
    tail (``n_active < n_kept``) would stay in the copy: FP32 route. Routes composed this
    way (issue 24 item 4, EXPERIMENTS.md N31, N33) took 9-17 % off rankdef cond=2 on an
    H100 (run 0853, session 56). Same result as the route kernel's.
    """
    B, n = norm2.shape
    coef = fp16_est_scale(m, n)
    if coef == 0.0 or n == 0:
        return torch.zeros(B, dtype=torch.float32, device=norm2.device)
    j = torch.arange(n, dtype=torch.float32, device=norm2.device)
    weighted = (torch.sqrt(j / FP16_EST_NB + 1.0) * norm2).amax(dim=-1)
    est = weighted * coef / norm1.amax(dim=-1)
    n2max = norm2.amax(dim=-1)
    codes = route_codes()
    ok = ((routes == codes["dense"]) | (routes == codes["lowrank"])) & (n_active == n_kept)
    ok &= (est <= FP16_BUDGET) & (n2max >= 2.0 ** -FP16_EXP_RANGE) \
        & (n2max <= 2.0 ** FP16_EXP_RANGE)
    if prescale is not None:
        from adaptqr.paths.prescale import times_pow2

        n2max = times_pow2(n2max, prescale)
    scale = torch.exp2(torch.floor(torch.log2(FP16_TARGET / n2max.clamp_min(1e-30))))
    return torch.where(ok, scale, torch.zeros_like(scale)).to(torch.float32)


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


def kept_columns(features: dict[str, torch.Tensor], m: int, n: int, drop: bool = DROP_TAIL) -> torch.Tensor:
    """``(B,)`` int32 ``n_kept``: columns from it on are zero in the result. For a finite
    matrix with ``m >= n`` that is not upper triangular, ``min(n_nonzero, n_active)``: the
    negligible tail is dropped whole (docs/DETECTORS.md, "Dropping the tail"), so a path
    need not update it and :func:`adaptqr.detectors.finish_tail` zeros it. Otherwise
    ``n_nonzero`` (a wide matrix's columns past ``min(m, n)`` are R's, never negligible; an
    upper matrix is returned as it is; a non-finite one propagates NaN as torch does).

    Uses ``features["n_active"]`` and ``features["n_nonzero"]``."""
    n_nonzero = features["n_nonzero"]
    if m < n or not drop:
        return n_nonzero
    dropping = ~features["lower_zero"].bool() & ~features["nonfinite"].bool()
    return torch.where(dropping, torch.minimum(n_nonzero, features["n_active"]), n_nonzero).to(torch.int32)


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
