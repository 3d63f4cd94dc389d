"""The CholeskyQR path for large square matrices (issue 9), rebuilt into geqrf's form.

``factor_cholqr(H, tau, info)`` factors ``H`` (``(B, n, n)`` float32, column-major, holding
the input) in place, as :func:`~adaptqr.paths.householder.factor_householder` does, by:

1. ``A`` in float64 (a float32 product is exact there), the Gram matrix ``G = A^T A``
   (upper block triangle, batched DGEMM: FP64 tensor cores), its Cholesky factor ``R`` and
   ``R^-1`` (:func:`~adaptqr.paths.cholqr_blocks.chol_inv`), ``Q = A R^-1``. One pass in
   float64 loses ``~ u64 cond(A)^2`` of orthogonality: about 1e-7 at cond 3e4 (a 4096 qr_v2
   matrix), far inside the float32 gate, so no second pass is needed where the checks below
   pass; where they do not, the matrix goes to Householder (a second pass would not save a
   matrix whose Gram matrix broke down anyway).
2. Checks per matrix, on the device: a Cholesky pivot breakdown (``FAIL_BREAKDOWN``);
   ``Q``'s loss of orthogonality estimated from ``PROBES`` fixed random vectors and its
   column norms (``FAIL_ORTH``, over ``ORTH_COEF sqrt(n) eps32``); anything non-finite
   (``FAIL_NONFINITE``).
3. Householder reconstruction (LAPACK ``dorhr_col``; Ballard et al. 2015): the unpivoted LU
   ``Q - S = L U`` with ``S_ii = -sign`` of the pivot gives ``V = L``, ``tau_i = -S_ii U_ii``
   and ``R_out = S R``: the reflectors, taus and R of Householder QR on the same matrix (a
   square matrix's last column is geqrf's exception: tau 0). Same numerics as
   :func:`~adaptqr.paths.cholqr_reference.geqrf_cholqr`, blocked.
4. The matrices that failed a check are redone by the blocked Householder path (``fallback``;
   on the CPU, where the Triton leaves run interpreted, the torch reference): one host sync
   to count them, then a gather, the factorization and a scatter. They are recorded in
   ``info.notes["fallback"]`` for the decisions log.

Steps 1-3 (:func:`run_body`) are replayed on CUDA from a graph cached per shape: eager they
are ~900 launches, host-bound (C12).

Workspace: at most four ``(B, n, n)`` float64 tensors at a time (8x the input's bytes;
``adaptqr bench`` measured 1120 MiB extra for 8x2048, C8). They stay reserved in the body
graph's pool until ``adaptqr.graphs.clear()``.

Example::

    >>> import torch
    >>> from adaptqr.paths.cholqr import capable
    >>> capable(2, 4096, 4096, torch.float32, "cuda") is None
    True
    >>> capable(2, 4096, 2048, torch.float32, "cuda")
    'cholqr: needs square matrices, got 4096x2048'
"""

from __future__ import annotations

import functools
import math
import threading
from typing import Any, Callable

import torch

from adaptqr.graphs.cache import InPlacePlan
from adaptqr.paths import cholqr_blocks as cb
from adaptqr.registry import ALL_CLASSES, Path

__all__ = ["factor_cholqr", "cholqr_body", "capable", "supports", "NAME", "CHOLQR_MIN_N",
           "FAIL_BREAKDOWN", "FAIL_ORTH", "FAIL_NONFINITE", "FAIL_REASONS"]

NAME = "cholqr"

FAIL_BREAKDOWN = 1
FAIL_ORTH = 2
FAIL_NONFINITE = 4
FAIL_REASONS = {FAIL_BREAKDOWN: "cholesky breakdown", FAIL_ORTH: "orthogonality estimate",
                FAIL_NONFINITE: "non-finite result"}

#: Smallest n the path takes when ADAPTQR_CHOLQR=1 (issue 9 asks for n >= 2048). It does not
#: pay there: 0.61x / 0.79x of householder at 8x2048 / 2x4096 (C13); larger sizes unmeasured.
CHOLQR_MIN_N = 2048

#: Random probe vectors of the orthogonality estimate ``||(Q^T Q - I) X|| / ||X||``.
PROBES = 4
#: Largest accepted estimate, in units of ``sqrt(n) eps32``: ``orth_loss(Q) <= ORTH_COEF *
#: sqrt(n) * eps32``. Measured (C7, runs 2015 and 2019, no fallback): 2048-matrices with a
#: prescribed, log-spaced spectrum gave a final scaled orthogonality of about 3e5 times
#: the estimate (cond 1e5: 2.7e-7 -> 0.11; 3e5: 2.6e-6 -> 0.86; 1e6: 3.2e-5 -> 8.8; the
#: bar is 50), i.e. ``||E||_1 ~ 1.5 sqrt(n) estimate``; 3 keeps that shape under 5, a
#: tenth of the bar. 36 dense qr_v2 matrices (estimates 4e-10 .. 2e-5) all ended at the
#: float32 floor (0.017-0.025): their loss is of a harmless shape, so this is conservative.
ORTH_COEF = 3.0
EPS32 = 2.0 ** -23


def capable(batch: int, m: int, n: int, dtype: torch.dtype, device_type: str) -> str | None:
    """None when this path takes ``batch`` matrices ``m x n`` of ``dtype`` on ``device_type``,
    else the reason it declines."""
    if device_type != "cuda":
        return f"cholqr: needs a CUDA tensor, got device type {device_type!r}"
    if dtype != torch.float32:
        return f"cholqr: needs float32, got {dtype}"
    if m != n:
        return f"cholqr: needs square matrices, got {m}x{n}"
    if n < 2:
        return f"cholqr: needs n >= 2, got {n}"
    return None


def supports(batch: int, m: int, n: int, dtype: torch.dtype, device_type: str) -> str | None:
    """:func:`capable`, plus the opt-in (``ADAPTQR_CHOLQR=1``) and ``n >= CHOLQR_MIN_N``: what
    the registry asks before it lets the dispatcher choose (or force) this path."""
    from adaptqr import config
    if not config.cholqr():
        return "cholqr: off (set ADAPTQR_CHOLQR=1 to use it)"
    if n < CHOLQR_MIN_N:
        return f"cholqr: n = {n} < {CHOLQR_MIN_N} (CHOLQR_MIN_N)"
    return capable(batch, m, n, dtype, device_type)


@functools.lru_cache(maxsize=16)
def _probes(n: int, device: torch.device) -> torch.Tensor:
    """Fixed ``(n, PROBES)`` float64 probe vectors (the same for every call and matrix)."""
    gen = torch.Generator(device="cpu").manual_seed(0x5EED)
    return torch.randn(n, PROBES, generator=gen, dtype=torch.float64).to(device)


def orth_loss(Q: torch.Tensor) -> torch.Tensor:
    """Estimate of ``||Q^T Q - I||`` per matrix (``(B,)`` float64; NaN if ``Q`` is not finite):
    the larger of the probes' relative residual and the worst column norm's distance to 1."""
    X = _probes(Q.shape[-1], Q.device)
    Z = Q.mT @ (Q @ X)
    probe = (Z - X).norm(dim=(-2, -1)) / X.norm()
    cols = (Q.square().sum(-2) - 1.0).abs().amax(-1)
    return torch.maximum(probe, cols)


def cholqr_fp64(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One float64 CholeskyQR pass, in place: ``A`` (``(B, n, n)`` float64) becomes ``Q``.

    Returns ``(R, fail)``: ``R`` upper (``(B, n, n)`` float64), ``fail`` (``(B,)`` int32,
    ``FAIL_BREAKDOWN`` where a pivot broke down).
    """
    B, _, n = A.shape
    opts = dict(dtype=torch.float64, device=A.device)
    G = torch.empty(B, n, n, **opts)
    cb.gram_upper(A, G)
    gref = G.diagonal(dim1=-2, dim2=-1).clone()
    R = torch.zeros(B, n, n, **opts)
    Ri = torch.zeros(B, n, n, **opts)
    bad = torch.zeros(B, dtype=torch.int32, device=A.device)
    cb.chol_inv(G, R, Ri, gref, bad)
    del G
    cb.right_upper_mul(A, Ri)
    return R, bad * FAIL_BREAKDOWN


def householder_form(Q: torch.Tensor, R: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(Hc, tau)`` in geqrf's convention from ``Q`` (``(B, n, n)`` float64, overwritten by
    its LU) and ``R``: ``Hc`` float64 ``(B, n, n)`` (``S R`` on and above the diagonal, ``V``
    below), ``tau`` float64 ``(B, n)``."""
    B, _, n = Q.shape
    LI = torch.zeros_like(Q)
    UI = torch.zeros_like(Q)
    S = torch.empty(B, n, dtype=torch.float64, device=Q.device)
    cb.lu_signs(Q, LI, UI, S, last=n - 1)
    del LI, UI
    tau = -S * Q.diagonal(dim1=-2, dim2=-1)
    tau[:, n - 1] = 0.0
    lower = torch.ones(n, n, dtype=torch.bool, device=Q.device).tril_(-1)
    return torch.where(lower, Q, S.unsqueeze(-1) * R), tau


def cholqr_body(H: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Steps 1-3 on ``H`` (read only): ``(Hc, tau, fail)``, float64 ``(B, n, n)`` and ``(B, n)``
    in geqrf's convention, ``fail`` int32 ``(B,)`` (0 or ``FAIL_*`` bits). No host sync."""
    A = H.double()  # keeps H's column-major strides
    R, fail = cholqr_fp64(A)
    orth_max = ORTH_COEF * math.sqrt(A.shape[-1]) * EPS32
    fail |= torch.where(orth_loss(A) <= orth_max, 0, FAIL_ORTH).to(torch.int32)
    Hc, tau_c = householder_form(A, R)
    finite = torch.isfinite(Hc).all(-1).all(-1) & torch.isfinite(tau_c).all(-1)
    return Hc, tau_c, fail | torch.where(finite, 0, FAIL_NONFINITE).to(torch.int32)


def _body_into(Hin: torch.Tensor, tau: torch.Tensor, fail: torch.Tensor) -> None:
    """:func:`cholqr_body` on ``Hin`` (float32 ``(b, n, n)``), written back in place where a
    matrix passed its checks (``Hin`` is left as it was elsewhere), ``tau`` ``(b, n)`` (0 for
    the failed), ``fail`` ``(b,)`` int32."""
    Hc, tau_c, f = cholqr_body(Hin)
    ok = f == 0
    Hin.copy_(torch.where(ok.view(-1, 1, 1), Hc, Hin))
    tau.copy_(torch.where(ok.view(-1, 1), tau_c, 0.0))
    fail.copy_(f)


class _BodyPlan(InPlacePlan):
    """The body as an in-place plan of :mod:`adaptqr.graphs`: ``outs = (H, tau, fail)``."""

    def alloc(self, A: torch.Tensor) -> tuple:
        B, n, _ = A.shape
        H = torch.empty_strided(A.shape, A.stride(), dtype=A.dtype, device=A.device)
        return (H, torch.empty(B, n, dtype=A.dtype, device=A.device),
                torch.empty(B, dtype=torch.int32, device=A.device))

    def load(self, A: torch.Tensor, outs: tuple) -> None:
        outs[0].copy_(A)

    def body(self, outs: tuple) -> None:
        _body_into(*outs)


#: Byte bound of the body's graph cache. A body graph's pool holds its float64 workspaces
#: (about 9x the input: ~1.1 GiB for 8x2048, C8), so the library-wide default (4 GiB over
#: all plans) would not keep two of them.
BODY_GRAPH_BYTES = 16 << 30

_body_cache = None
_body_cache_lock = threading.Lock()


def _body_graph_settings():
    from adaptqr import config
    cfg = config.graph_settings()
    # No input bound: eager, the body is host-bound at any n (C6), so every size replays.
    return cfg._replace(graph_bytes=BODY_GRAPH_BYTES, graph_max_input=BODY_GRAPH_BYTES)


def _body_graphs():
    """The cache of body graphs (one capture a key: outputs never leave it, ``out=``)."""
    global _body_cache
    if _body_cache is None:
        with _body_cache_lock:
            if _body_cache is None:
                from adaptqr import graphs
                _body_cache = graphs.new_cache(_body_graph_settings)
    return _body_cache


def run_body(H: torch.Tensor, tau: torch.Tensor, fail: torch.Tensor) -> None:
    """Steps 1-3 on ``H`` in place (matrices that fail a check keep their input), ``tau``,
    ``fail`` (``(B,)`` int32). No host sync. On CUDA the body is replayed from a graph
    cached per shape (captured on the second call): eager, its ~900 launches make it
    host-bound (8x2048: 39 -> 14.9 ms, 2x4096: 77 -> 27.0 ms, C12)."""
    if not H.is_cuda:
        _body_into(H, tau, fail)
        return
    key = (NAME, tuple(H.shape), H.stride(), H.device, cb.LEAF, cb.LEAF_WARPS)
    _body_graphs().run(key, _BodyPlan(), H, out=(H, tau, fail))


def _default_fallback(device: torch.device) -> tuple[str, Callable]:
    if device.type == "cuda":
        from adaptqr.paths.householder import NAME as HH
        from adaptqr.paths.householder import factor_householder
        return HH, factor_householder
    from adaptqr.paths.reference import factor_reference
    return "reference", factor_reference


def factor_cholqr(H: torch.Tensor, tau: torch.Tensor, info: Any = None, *,
                  fallback: tuple[str, Callable] | None = None) -> None:
    """Factor ``H`` (``(B, n, n)`` float32, ``H.mT`` contiguous) in place; write ``tau``
    (``(B, n)``). ``fallback``: ``(name, impl)`` for the matrices CholeskyQR cannot take
    (default: householder on CUDA, the torch reference elsewhere). Module docstring: steps."""
    if H.dim() != 3 or H.shape[-1] != H.shape[-2] or H.dtype != torch.float32:
        raise ValueError(f"cholqr: needs (B, n, n) float32, got shape {tuple(H.shape)} "
                         f"dtype {H.dtype}")
    if H.stride()[1:] != (1, H.shape[-2]) or tau.shape != H.shape[:2]:
        raise ValueError(f"cholqr: needs column-major H and tau (B, n), got strides {H.stride()} "
                         f"and tau shape {tuple(tau.shape)}")
    B, _, n = H.shape
    fail = torch.empty(B, dtype=torch.int32, device=H.device)
    run_body(H, tau, fail)
    # The path's one host sync (why it is not capturable): the fail codes, read once, give
    # the fallback's batch and the note, before any fallback kernel is queued.
    reasons = fail.tolist()
    matrices = [b for b, f in enumerate(reasons) if f]
    note = None
    if matrices:
        name, impl = fallback if fallback is not None else _default_fallback(H.device)
        redo = torch.tensor(matrices, dtype=torch.int64, device=H.device)
        Hs = H.mT.index_select(0, redo).mT  # still the input there; stays column-major
        taus = torch.empty(len(matrices), n, dtype=tau.dtype, device=tau.device)
        impl(Hs, taus, None)
        H.mT.index_copy_(0, redo, Hs.mT)
        tau.index_copy_(0, redo, taus)
        note = {"from": NAME, "to": name, "matrices": matrices,
                "reasons": [reasons[b] for b in matrices]}
    if info is not None and hasattr(info, "notes"):
        info.notes["fallback"] = note


#: Above householder's: where it takes an input (opt-in, n >= 2048) it wins.
PRIORITY = 110

PATH = Path(
    name=NAME,
    impl=factor_cholqr,
    supports=lambda spec: supports(spec.batch, spec.m, spec.n, spec.dtype, spec.device_type),
    classes=ALL_CLASSES,
    priority=PRIORITY,
    # One host sync counts the matrices that fall back to householder.
    capturable=False,
    routed=False,  # takes every matrix; hands the ones it cannot take to householder
    description="float64 CholeskyQR rebuilt into Householder form, square CUDA float32, n >= 2048; "
                "opt-in (ADAPTQR_CHOLQR=1); per-matrix fallback to householder",
)
