"""``adaptqr.linalg.qr``: a drop-in for ``torch.linalg.qr`` through adaptqr's dispatcher
(issue 25).

On CUDA, R comes from :func:`adaptqr.geqrf`'s dispatcher (the decisions log records
``op="qr"``) and Q from :func:`adaptqr.householder_product` (blocked compact WY for
float32). A few float32 matrices of 512-2048 columns (:data:`QR_AUGMENTED_MAX_BATCH`)
instead factor ``[s A | I]`` on the wide path, which applies ``Q^T`` to the identity
while the factorization runs (:func:`_qr_augmented`; the decisions log shows that
``m x (n + m)`` shape). The signs are LAPACK's, as torch's: ``R``'s diagonal may be
negative. Off CUDA no path is faster than torch's own ``linalg.qr`` (LAPACK's geqrf and
orgqr in one call), which then runs as it is.

Autograd: the backward is torch's ``linalg_qr_backward`` formula (reduced mode, and
complete mode when ``m <= n``; no derivative for mode ``"r"``, nor for complete mode of a
tall matrix, as in torch).

Example::

    >>> import torch, adaptqr
    >>> A = torch.randn(4, 6, 3)
    >>> Q, R = adaptqr.linalg.qr(A)
    >>> Q.shape, R.shape, bool(torch.allclose(Q @ R, A, atol=1e-5))
    (torch.Size([4, 6, 3]), torch.Size([4, 3, 3]), True)
"""

from __future__ import annotations

import math

import torch

from adaptqr import config, dispatch, originals, validate
from adaptqr.qform import form_q

MODES = ("reduced", "complete", "r")
#: What torch.linalg.qr factors.
DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)
#: Small batches of CUDA float32 matrices form Q by factoring ``[s A | I]``
#: (:func:`_qr_augmented`): the wide path applies ``Q^T`` to the identity beside the
#: factorization, on the SMs a small batch leaves idle, instead of forming Q after it:
#: one matrix of ``QR_AUGMENTED_MIN_K`` to ``QR_AUGMENTED_MAX_K_ONE`` columns (``k = min(m,
#: n)``), up to ``QR_AUGMENTED_MAX_BATCH`` of at most ``QR_AUGMENTED_MAX_K``. EXPERIMENTS.md
#: QF14, H200, ms, today's route / augmented: run 1352-1353 1x512 0.977 / 0.944, 1x640 1.388
#: / 1.212, 1x768 1.664 / 1.470, 1x1024 2.281 / 2.058, 1x1536 3.81 / 3.40, 1x2048 5.45 /
#: 5.24, 2x768 1.84 / 1.58, 2x1024 2.75 / 2.25, 4x768 1.93 / 1.73; but run 1347 1x3072 8.94
#: / 10.38, 1x4096 14.08 / 19.02, 8x2048 11.06 / 14.69, 2x4096 22.07 / 30.87 (``Q^T I``'s
#: ``4 m^2 k`` flops then compete with the factorization's). Rank-deficient matrices lost
#: the low-rank skipping (1x1024 rankdef 1.98 -> 2.21) until the wide path probed its
#: block (W6). Knobs ``qr_augmented`` (the batch bound, 0: never) and ``qr_augmented_max_k``
#: (one matrix's bound).
QR_AUGMENTED_MAX_BATCH = 4
QR_AUGMENTED_MIN_K = 512
QR_AUGMENTED_MAX_K = 1024
QR_AUGMENTED_MAX_K_ONE = 2048


def qr(A: torch.Tensor, mode: str = "reduced", *, out=None):
    """``(Q, R)`` with ``A = Q R`` (``A``: ``(*, m, n)``; ``k = min(m, n)``): reduced ``Q``
    ``(*, m, k)``, ``R`` ``(*, k, n)``; complete ``Q`` ``(*, m, m)``, ``R`` ``(*, m, n)``;
    ``"r"``: an empty ``Q`` and the reduced ``R``. Returns ``torch.return_types.linalg_qr``.

    >>> import torch, adaptqr
    >>> Q, R = adaptqr.linalg.qr(torch.randn(3, 5), mode="complete")
    >>> Q.shape, R.shape
    (torch.Size([3, 3]), torch.Size([3, 5]))
    """
    if not isinstance(A, torch.Tensor):
        raise TypeError(f"linalg.qr(): argument 'A' must be Tensor, not {type(A).__name__}")
    if torch.compiler.is_compiling():
        # Traced: the op (adaptqr.custom_ops) is opaque to the compiler; its fake
        # implementation is torch's, with torch's checks.
        Q, R = torch.ops.adaptqr.qr(A, mode)
    else:
        if not (dispatched(A) and mode in MODES and A.dim() >= 2 and A.dtype in DTYPES):
            # torch's own call: off CUDA, and for what torch rejects (its errors, its words).
            return originals.linalg_qr(A, mode=mode, out=out)
        if A.requires_grad and torch.is_grad_enabled():
            Q, R = _QRFunction.apply(A, mode)
        else:
            Q, R = _qr(A, mode)
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError("linalg.qr(): out must be a tuple of two tensors (Q, R)")
        for name, dst, src in (("Q", out[0], Q), ("R", out[1], R)):
            validate.write_out(dst, src, name, A.dtype)
        return torch.return_types.linalg_qr(tuple(out))
    return torch.return_types.linalg_qr((Q, R))


def dispatched(A: torch.Tensor) -> bool:
    """Whether ``qr(A)`` goes through adaptqr's dispatcher (CUDA) rather than torch's
    ``linalg.qr``."""
    return A.is_cuda


def _qr(A: torch.Tensor, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(Q, R)`` of a CUDA ``A`` (``mode`` as :func:`qr`)."""
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    if _augmented_applies(A, mode):
        return _qr_augmented(A.detach())
    a, tau = dispatch.run(A.detach(), None, op="qr")
    src = a if mode == "complete" else a[..., :k, :]
    R = _upper(src, src.shape[:-2])
    if mode == "r":
        return A.new_empty(0), R
    if mode == "complete" and m > n:
        # Q is m x m: the k vectors in the leading columns of an m x m matrix.
        H = torch.zeros(*A.shape[:-1], m, dtype=A.dtype, device=A.device)
        H[..., :, :k] = a[..., :, :k]
        Q = form_q(H, tau, queued=True)
    else:
        Q = form_q(a[..., :, :k], tau, queued=True)
    return Q, R


def _augmented_applies(A: torch.Tensor, mode: str) -> bool:
    m, n = A.shape[-2], A.shape[-1]
    knobs = config.snapshot().knobs
    B = math.prod(A.shape[:-2])
    k_max = knobs.get("qr_augmented_max_k", QR_AUGMENTED_MAX_K_ONE) if B == 1 else QR_AUGMENTED_MAX_K
    return (A.is_cuda and A.dtype == torch.float32 and mode != "r"
            and 0 < B <= knobs.get("qr_augmented", QR_AUGMENTED_MAX_BATCH)
            and QR_AUGMENTED_MIN_K <= min(m, n) <= k_max and not (mode == "complete" and m > n))


def _qr_augmented(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Reduced ``(Q, R)`` of ``A`` ``(*, m, n)`` from one geqrf of ``X = [s A | I_m]``
    ``(*, m, n + m)``: ``X``'s reflectors are ``s A``'s, and the rows ``:k`` of its last ``m``
    columns hold ``Q^T``'s (``k = min(m, n)``; for ``m > n`` the reflectors after ``n``,
    which only the identity's columns make, leave ``Q``'s first ``n`` columns alone).
    ``X`` is wide, so the dispatcher sends it to the wide path, which applies ``Q^T`` to
    the identity panel by panel beside the factorization (EXPERIMENTS.md QF14).

    ``s = 2^-e`` a matrix, ``e`` the exponent of ``max |A|``: ``A``'s block and the
    identity's are at one scale, whatever ``A``'s, for the wide path takes one prescale
    exponent a matrix and probes its leading block (for a tall ``A``, ``A``'s columns
    beside identity columns) against the block's largest entry. (With the identity scaled
    to ``A`` instead, within ±100 binades, a subnormal ``A`` sat 2^31 under it and failed the
    half gate, EXPERIMENTS.md D6.) Scaling by ``s`` and ``R``'s back are exact but where
    ``R`` is subnormal; each is two multiplies, as ``2^e`` spans more than float32's range.

    >>> import torch
    >>> A = torch.randn(2, 6, 4, dtype=torch.float64)
    >>> Q, R = _qr_augmented(A)
    >>> bool(torch.allclose(Q @ R, A)), bool(torch.allclose(Q, torch.linalg.qr(A).Q))
    (True, True)
    """
    *batch, m, n = A.shape
    k = min(m, n)
    A3 = A.reshape(-1, m, n)
    B = A3.shape[0]
    amax = torch.linalg.vector_norm(A3, ord=float("inf"), dim=(-2, -1))
    e = torch.frexp(amax).exponent
    # Zero, Inf or NaN: no scaling (a NaN spreads through the factorization as it would alone).
    e = torch.where(torch.isfinite(amax) & (amax > 0), e, 0).to(A.dtype).view(B, 1, 1)
    half = torch.floor(e / 2)
    X = torch.zeros(B, n + m, m, dtype=A.dtype, device=A.device).mT  # column-major
    torch.mul(A3, torch.pow(2.0, -half), out=X[..., :n])
    X[..., :n].mul_(torch.pow(2.0, half - e))
    X[..., n:].diagonal(dim1=-2, dim2=-1).fill_(1.0)
    a, _ = dispatch.run(X, None, op="qr")
    Qt = torch.empty(*batch, k, m, dtype=A.dtype, device=A.device)
    Qt.view(B, k, m).copy_(a[..., :k, n:])
    R = _upper(a[..., :k, :n], batch)
    R.view(B, k, n).mul_(torch.pow(2.0, half)).mul_(torch.pow(2.0, e - half))
    return Qt.mT, R


def _upper(x: torch.Tensor, batch) -> torch.Tensor:
    """``x.triu()`` ``(*batch, k, n)`` (``x``: any batch shape of as many matrices) with each
    matrix column-major (torch.linalg.qr's layout of R), in one launch."""
    k, n = x.shape[-2:]
    R = x.new_empty(*batch, n, k)
    torch.triu(x, out=R.view(*x.shape[:-2], n, k).mT)
    return R.mT


class _QRFunction(torch.autograd.Function):
    """Forward by :func:`_qr`, backward by torch's ``linalg_qr_backward`` formula."""

    @staticmethod
    def forward(ctx, A, mode):
        Q, R = _qr(A, mode)
        ctx.mode = mode
        ctx.save_for_backward(Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        Q, R = ctx.saved_tensors
        return qr_backward(gQ, gR, Q, R, ctx.mode), None


def qr_backward(gQ, gR, Q, R, mode: str) -> torch.Tensor:
    """``dL/dA`` from ``dL/dQ`` and ``dL/dR`` (either may be None) of ``A = Q R`` (real
    dtypes), as torch's ``linalg_qr_backward``."""
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                           "differentiate through linalg.qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    if gQ is None and gR is None:
        return torch.zeros(*Q.shape[:-2], m, n, dtype=Q.dtype, device=Q.device)
    if gQ is not None:
        M = -(Q.mT @ gQ) if gR is None else gR @ R.mT - Q.mT @ gQ
    else:
        M = gR @ R.mT
    if m >= n:
        sym = M.triu()
        sym = sym + sym.mT
        sym = sym - torch.diag_embed(sym.diagonal(dim1=-2, dim2=-1) * 0.5)
        gA = Q @ sym
        if gQ is not None:
            gA = gA + gQ
        return torch.linalg.solve_triangular(R.mT, gA, upper=False, left=False)
    X = -M
    skew = (X - X.mT).tril()
    gA = torch.linalg.solve_triangular(R[..., :, :m].mT, Q @ skew, upper=False, left=False)
    gA = torch.cat([gA, gA.new_zeros(*gA.shape[:-1], n - m)], dim=-1)
    if gR is not None:
        gA = gA + Q @ gR
    return gA


def foreach_qr(tensors, mode: str = "reduced") -> list:
    """``[qr(t, mode) for t in tensors]``, one batched call a shape (:mod:`adaptqr.foreach`):
    a list of ``torch.return_types.linalg_qr``.

    >>> import torch, adaptqr
    >>> outs = adaptqr.linalg.foreach_qr([torch.randn(5, 3), torch.randn(5, 3)])
    >>> outs[1].Q.shape, outs[1].R.shape
    (torch.Size([5, 3]), torch.Size([3, 3]))
    """
    from adaptqr.foreach import apply_grouped

    def unstack(out, j, t):
        Q = t.new_empty(0) if mode == "r" else out.Q[j]
        return torch.return_types.linalg_qr((Q, out.R[j]))

    return apply_grouped(tensors, "foreach_qr", lambda t: originals.check(originals.linalg_qr, t, mode=mode),
                         lambda x: qr(x, mode), unstack)
