"""The reference path: blocked Householder QR with compact WY, in plain torch ops.

Device-agnostic (CPU and CUDA), batched over B, float32 and float64, any ``m, n >= 1``
(``min(m, n)`` reflectors). It is the oracle of the test suite, not a fast path: one
column at a time, a handful of small launches per column.

Algorithm, per panel of ``nb`` columns (LAPACK dgeqrf / dgeqr2 / dlarft / dlarfb):

1. Factor the panel column by column with dlarfg semantics: ``beta = -sign(alpha) *
   ||x||`` (sign(0) = +), ``tau = (beta - alpha) / beta``, ``v = x_below / (alpha -
   beta)``; ``tau = 0`` and ``beta = alpha`` when ``x_below`` is zero. Norms are taken
   after dividing by the column's max-abs, so inputs scaled by 1e30 or 1e-30 neither
   overflow nor underflow when squared. Each reflector is applied to the rest of the
   panel with elementwise products and sums (never TF32, which would corrupt the
   reflectors: docs/DESIGN.md, "A low-precision panel corrupts the reflectors").
2. Build T (``Q_panel = I - V T V^T``) by the larft recurrence
   ``T[:i, i] = -tau_i T[:i, :i] (V^T V)[:i, i]``, which needs no 1/tau, so tau = 0 gives
   an all-zero row and column of T.
3. Trailing update ``A -= V (T^T (V^T A))``: three batched matmuls.

Precision: never touches global flags. For float32 CUDA inputs while TF32 matmuls are
allowed globally (``torch.backends.cuda.matmul.allow_tf32`` or a float32 matmul
precision other than "highest"), the matmuls of steps 2-3 run in float64 instead.

NaN/Inf propagate; there is no data-dependent loop, so nothing can hang.

Example::

    >>> import torch
    >>> from adaptqr.paths.reference import geqrf_reference
    >>> A = torch.randn(3, 40, 40, dtype=torch.float64)
    >>> H, tau = geqrf_reference(A, nb=16)
    >>> H0, tau0 = torch.geqrf(A)
    >>> torch.allclose(H, H0, rtol=1e-10, atol=1e-10), torch.allclose(tau, tau0)
    (True, True)
    >>> H.mT.is_contiguous()
    True
"""

from __future__ import annotations

import torch

from adaptqr.registry import Path

__all__ = ["DEFAULT_NB", "factor_reference", "geqrf_reference"]

#: Panel width. Any width gives the same result to rounding; 32 keeps the per-column
#: panel work (O(m * nb) a column) small next to the trailing matmuls.
DEFAULT_NB = 32


def _tf32_active(t: torch.Tensor) -> bool:
    """Whether a float32 matmul on ``t``'s device may silently run in TF32 (read, never set)."""
    if not t.is_cuda or t.dtype != torch.float32:
        return False
    return bool(torch.backends.cuda.matmul.allow_tf32) or torch.get_float32_matmul_precision() != "highest"


def _n_active(info, H: torch.Tensor) -> torch.Tensor | None:
    features = getattr(info, "features", None) or {}
    na = features.get("n_active") if hasattr(features, "get") else None
    if na is None:
        return None
    B = H.shape[0]
    if na.shape != (B,):
        raise ValueError(f"info.features['n_active'] must have shape ({B},), got {tuple(na.shape)}")
    if na.device != H.device:
        raise ValueError(f"info.features['n_active'] must be on {H.device}, got {na.device}")
    return na


def _house_column(Ht: torch.Tensor, tau: torch.Tensor, j: int, active: torch.Tensor | None) -> torch.Tensor:
    """Generate reflector j in place (dlarfg); returns the full vector ``[1, v]`` ``(B, m - j)``.

    ``Ht`` is ``(B, n, m)`` (row j = column j of the matrix). ``active`` (B,) bool or None:
    where False, no reflector is generated (tau = 0, the column is left unchanged).
    """
    x = Ht[:, j, j:]
    alpha = x[:, 0]
    below = x[:, 1:]
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    one = torch.ones((), dtype=x.dtype, device=x.device)
    if below.shape[1] > 0:
        below_max = below.abs().amax(dim=1)
    else:
        below_max = torch.zeros_like(alpha)
    # Scale by the column's max-abs before squaring: no overflow at 1e30, no underflow
    # at 1e-30.
    s = torch.maximum(alpha.abs(), below_max)
    s_safe = torch.where(s > 0, s, one)
    norm = s * torch.sqrt(((x / s_safe[:, None]) ** 2).sum(dim=1))
    beta = torch.where(alpha >= 0, -norm, norm)
    # Not (below_max > 0): a NaN column must take the reflector branch and propagate.
    skip = below_max == 0
    if active is not None:
        skip = skip | ~active
    beta_safe = torch.where(skip, one, beta)
    denom = torch.where(skip, one, alpha - beta)
    t = torch.where(skip, zero, (beta - alpha) / beta_safe)
    v = torch.where(skip[:, None], below, below / denom[:, None])
    below.copy_(v)
    x[:, 0] = torch.where(skip, alpha, beta)
    tau[:, j] = t
    vfull = torch.empty_like(x)
    vfull[:, 0] = 1.0
    vfull[:, 1:] = v
    return vfull


def _panel(Ht, tau, j0: int, jb: int, active_of) -> None:
    """Factor columns j0 .. j0+jb-1 (unblocked, dgeqr2), updating the rest of the panel."""
    for j in range(j0, j0 + jb):
        vfull = _house_column(Ht, tau, j, active_of(j))
        if j + 1 < j0 + jb:
            rest = Ht[:, j + 1:j0 + jb, j:]  # (B, c, m - j): the panel's later columns
            w = (rest * vfull[:, None, :]).sum(dim=2)  # v^T a for each later column
            rest.sub_((tau[:, j, None] * w)[:, :, None] * vfull[:, None, :])


def _panel_V(Ht: torch.Tensor, j0: int, jb: int) -> torch.Tensor:
    """The panel's unit lower-trapezoidal V, ``(B, m - j0, jb)``, as a fresh tensor."""
    V = Ht[:, j0:j0 + jb, j0:].mT.clone()
    rows = torch.arange(V.shape[1], device=V.device)[:, None]
    cols = torch.arange(jb, device=V.device)[None, :]
    V = V.masked_fill(rows < cols, 0.0)
    V.diagonal(dim1=-2, dim2=-1).fill_(1.0)
    return V


def _larft(V: torch.Tensor, tau_p: torch.Tensor) -> torch.Tensor:
    """T ``(B, jb, jb)`` upper triangular with ``I - V T V^T = H_1 ... H_jb`` (dlarft, forward).

    Works in V's dtype (the caller picks it); tau = 0 yields a zero row and column.
    """
    B, _, jb = V.shape
    G = V.mT @ V  # (B, jb, jb); only its strict upper triangle is used
    T = torch.zeros((B, jb, jb), dtype=V.dtype, device=V.device)
    for i in range(jb):
        if i > 0:
            # Elementwise matvec: exact in V's dtype whatever the matmul flags say.
            T[:, :i, i] = -tau_p[:, i, None] * (T[:, :i, :i] * G[:, None, :i, i]).sum(dim=2)
        T[:, i, i] = tau_p[:, i]
    return T


def factor_reference(H: torch.Tensor, tau: torch.Tensor, info=None, *, nb: int = DEFAULT_NB) -> None:
    """Factor ``H`` in place (the path contract of docs/INTERNALS.md): ``impl(H, tau, info)``.

    H: ``(B, m, n)`` float32/float64, normally column-major (``H.mT`` contiguous), any
    strides work; on exit R above and Householder vectors below the diagonal.
    tau: ``(B, min(m, n))``, same dtype and device, written.
    info: None or an object with ``.features``; ``features["n_active"]`` (int32 ``(B,)``,
    optional) limits reflectors to columns ``j < n_active[b]``: later columns get
    tau = 0 and keep what the earlier reflectors made of them.
    No host synchronization.

    >>> import torch
    >>> A = torch.randn(2, 5, 3)
    >>> H = A.mT.contiguous().mT.clone(); tau = torch.empty(2, 3)
    >>> factor_reference(H, tau)
    >>> torch.allclose(H, torch.geqrf(A)[0], atol=1e-5)
    True
    """
    if H.dim() != 3:
        raise ValueError(f"reference path: H must be (B, m, n), got shape {tuple(H.shape)}")
    if H.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"reference path: H must be float32 or float64, got {H.dtype}")
    B, m, n = H.shape
    k = min(m, n)
    if tuple(tau.shape) != (B, k) or tau.dtype != H.dtype or tau.device != H.device:
        raise ValueError(
            f"reference path: tau must be ({B}, {k}) {H.dtype} on {H.device}, "
            f"got {tuple(tau.shape)} {tau.dtype} on {tau.device}")
    if nb < 1:
        raise ValueError(f"reference path: nb must be >= 1, got {nb}")
    if B == 0 or k == 0:
        return
    n_active = _n_active(info, H)
    active_of = (lambda j: None) if n_active is None else (lambda j: n_active > j)
    wide = torch.float64 if _tf32_active(H) else H.dtype
    Ht = H.mT  # (B, n, m): row j is column j
    for j0 in range(0, k, nb):
        jb = min(nb, k - j0)
        _panel(Ht, tau, j0, jb, active_of)
        if j0 + jb >= n:
            continue
        V = _panel_V(Ht, j0, jb).to(wide)
        T = _larft(V, tau[:, j0:j0 + jb].to(wide))
        C = Ht[:, j0 + jb:, j0:]  # (B, n_trail, m - j0) = A_trail^T
        # A -= V (T^T (V^T A)), transposed: C -= ((C V) T) V^T
        W = (C.to(wide) @ V) @ T
        C.sub_((W @ V.mT).to(H.dtype))


def geqrf_reference(A: torch.Tensor, nb: int = DEFAULT_NB) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.geqrf(A)`` by the reference path: ``(H, tau)`` in torch.geqrf's layout.

    A: ``(..., m, n)`` float32/float64, any device; not modified. H: ``(..., m, n)`` with
    column-major matrices; tau: ``(..., min(m, n))`` contiguous.

    >>> import torch
    >>> H, tau = geqrf_reference(torch.randn(4, 6, 6))
    >>> H.shape, tau.shape, H.mT.is_contiguous()
    (torch.Size([4, 6, 6]), torch.Size([4, 6]), True)
    """
    if not isinstance(A, torch.Tensor) or A.dim() < 2:
        raise ValueError(f"geqrf_reference: A must be a tensor of shape (..., m, n), got "
                         f"{tuple(A.shape) if isinstance(A, torch.Tensor) else type(A).__name__}")
    if A.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"geqrf_reference: A must be float32 or float64, got {A.dtype}")
    *batch, m, n = A.shape
    B = 1
    for d in batch:
        B *= d
    Hbuf = torch.empty((B, n, m), dtype=A.dtype, device=A.device)
    H = Hbuf.mT
    H.copy_(A.reshape(B, m, n))
    tau = torch.empty((B, min(m, n)), dtype=A.dtype, device=A.device)
    factor_reference(H, tau, None, nb=nb)
    return H.reshape(*batch, m, n), tau.reshape(*batch, min(m, n))


#: Below torch's: never chosen automatically (adaptqr.builtin_paths says why); the test oracle.
PRIORITY = -10


def supports(spec) -> str | None:
    if spec.dtype not in (torch.float32, torch.float64):
        return f"reference handles float32/float64 only, not {spec.dtype}"
    return None


# Every class, not capturable, not routed (it ignores info and factors every matrix in full).
PATH = Path(
    name="reference",
    impl=factor_reference,
    supports=supports,
    priority=PRIORITY,
    description="blocked Householder in torch ops, runs anywhere; the test oracle (force it by name)",
)
