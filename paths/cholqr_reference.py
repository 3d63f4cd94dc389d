"""CholeskyQR2 rebuilt into geqrf's Householder form, in plain torch ops (issue 9's numerics).

Not a registered path: the reference that a fast CholeskyQR path (issue 9) is checked
against, and the prototype the device measures first (EXPERIMENTS.md C5). Batched,
device-agnostic, float64 inside whatever the input dtype.

Per matrix ``A`` (``m x n``, ``m >= n``):

1. CholeskyQR, ``passes`` times: ``G = A^T A``, ``R_i = chol(G)^T``, ``A <- A R_i^{-1}``.
   A Gram matrix squares the condition number, so pass 1 is float64 (a float32 input's
   products are exact there). With ``shift`` pass 1 factors ``G + s I`` with Fukaya et
   al.'s ``s = 11 (m n + n (n + 1)) u ||A||_F^2`` (u = 2^-53), which keeps it from breaking
   down up to ``cond(A)`` about ``u^-1/2``; the passes after it restore orthogonality
   (shifted CholeskyQR3 is ``passes=3, shift=True``).
2. ``Q`` (orthonormal columns) and ``R = R_p ... R_1`` (upper, positive diagonal).
3. Householder reconstruction (LAPACK ``dorhr_col``; Ballard et al., "Reconstructing
   Householder vectors from tall-skinny QR", 2015): the unpivoted LU ``Q - S = L U`` with
   ``S = diag(s)`` chosen a column at a time, ``s_i = -sign(u_ii before the shift)``
   (sign(0) = +), so ``|U_ii| >= 1`` and the LU is stable. Then ``V = L`` (unit lower),
   ``tau_i = -s_i U_ii`` (in ``[1, 2]``: LAPACK's range) and ``Q = (I - V T V^T)[:, :n] S``.
   A square matrix's last column is geqrf's exception: no reflector (``tau = 0``),
   ``s_n = sign(u_nn)``.
4. geqrf's output: ``R_out = S R`` above and on the diagonal, ``V`` below; ``tau``.
   ``s_i`` is the sign Householder QR gives ``R_ii`` (``-sign(alpha)``), so ``R_out`` and
   ``V`` are those of Householder QR on the same matrix, up to rounding.

``ok`` (bool ``(B,)``) is False where a Cholesky broke down or the result is not finite,
or, with ``orth_tol``, where ``||Q^T Q - I||_max`` exceeds it: those matrices need the
Householder path (issue 9's per-matrix fallback). No host synchronization.

Example::

    >>> import torch
    >>> from adaptqr.paths.cholqr_reference import geqrf_cholqr
    >>> A = torch.randn(2, 60, 40, dtype=torch.float64)
    >>> H, tau, ok = geqrf_cholqr(A)
    >>> H0, tau0 = torch.geqrf(A)
    >>> bool(ok.all()), torch.allclose(H, H0, atol=1e-9), torch.allclose(tau, tau0, atol=1e-9)
    (True, True, True)
"""

from __future__ import annotations

import torch

__all__ = ["cholesky_qr", "householder_from_q", "geqrf_cholqr"]

#: float64 unit roundoff (the shift's u).
U64 = 2.0 ** -53


def _shift(A: torch.Tensor) -> torch.Tensor:
    """Fukaya et al.'s shift ``11 (m n + n (n + 1)) u ||A||_F^2`` per matrix, ``(B, 1, 1)``."""
    m, n = A.shape[-2:]
    return (11.0 * (m * n + n * (n + 1)) * U64 * A.square().sum((-2, -1))).view(-1, 1, 1)


def cholesky_qr(A: torch.Tensor, passes: int = 2, shift: bool = False
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(Q, R, ok)`` of ``A`` ``(B, m, n)`` by ``passes`` CholeskyQR passes in float64.

    ``Q`` ``(B, m, n)`` and ``R`` ``(B, n, n)`` (upper, positive diagonal) in float64;
    ``ok`` False where a Cholesky factorization broke down (its matrix's Q and R are then
    not meaningful). ``shift``: pass 1 factors the shifted Gram matrix (module docstring).
    """
    if A.dim() != 3 or A.shape[-2] < A.shape[-1]:
        raise ValueError(f"cholesky_qr: needs (B, m, n) with m >= n, got shape {tuple(A.shape)}")
    if passes < 1:
        raise ValueError(f"cholesky_qr: needs at least one pass, got {passes}")
    Q = A.double()
    B, m, n = Q.shape
    eye = torch.eye(n, dtype=torch.float64, device=Q.device)
    R = eye.expand(B, n, n).clone()
    ok = torch.ones(B, dtype=torch.bool, device=Q.device)
    for p in range(passes):
        G = Q.mT @ Q
        if p == 0 and shift:
            G = G + _shift(Q) * eye
        L, info = torch.linalg.cholesky_ex(G)
        ok &= info == 0
        Ri = L.mT
        Q = torch.linalg.solve_triangular(Ri, Q, upper=True, left=False)
        R = Ri @ R
    return Q, R, ok


def householder_from_q(Q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(V, tau, s)`` with ``Q = (I - V T V^T)[:, :n] diag(s)`` (LAPACK's ``dorhr_col``).

    ``Q`` ``(B, m, n)`` float64 with orthonormal columns. ``V`` ``(B, m, n)`` holds the unit
    lower reflectors below its diagonal (``U`` of the LU on and above it); ``tau`` ``(B, n)``
    and the signs ``s`` ``(B, n)`` (+1 / -1). Unblocked, a column a step: a reference.
    """
    W = Q.clone()
    B, m, n = W.shape
    tau = W.new_empty(B, n)
    s = W.new_empty(B, n)
    for i in range(n):
        d = W[:, i, i]
        if i == m - 1:
            # The last row of a square matrix: geqrf leaves it unreflected (tau 0, R_nn keeps
            # its sign), and here d is +-1 up to rounding: s_i = sign(d) makes U_ii about 0.
            s[:, i] = torch.where(d >= 0, 1.0, -1.0).to(W.dtype)
            tau[:, i] = 0.0
            break
        si = torch.where(d >= 0, -1.0, 1.0).to(W.dtype)
        u = d - si  # |u| = |d| + 1 >= 1
        W[:, i, i] = u
        s[:, i] = si
        tau[:, i] = -si * u
        W[:, i + 1:, i] /= u.unsqueeze(-1)
        if i + 1 < n:
            W[:, i + 1:, i + 1:] -= W[:, i + 1:, i:i + 1] * W[:, i:i + 1, i + 1:]
    return W, tau, s


def geqrf_cholqr(A: torch.Tensor, passes: int = 2, shift: bool = False,
                 orth_tol: float | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(H, tau, ok)`` in torch.geqrf's convention for ``A`` ``(B, m, n)``, ``m >= n``, by
    CholeskyQR (``passes``, ``shift``: :func:`cholesky_qr`) and Householder reconstruction.

    ``H`` and ``tau`` in ``A``'s dtype (``H`` with geqrf's strides, ``H.mT`` contiguous);
    ``ok`` as in the module docstring (``orth_tol``: also ``||Q^T Q - I||_max <= orth_tol``).
    """
    B, m, n = A.shape
    Q, R, ok = cholesky_qr(A, passes, shift)
    if orth_tol is not None:
        eye = torch.eye(n, dtype=torch.float64, device=Q.device)
        ok &= (Q.mT @ Q - eye).abs().amax((-2, -1)) <= orth_tol
    V, tau, s = householder_from_q(Q)
    Rout = (s.unsqueeze(-1) * R).triu()
    H64 = torch.cat([Rout + V[:, :n].tril(-1), V[:, n:]], dim=-2)
    ok &= torch.isfinite(H64).all(-1).all(-1) & torch.isfinite(tau).all(-1)
    H = H64.to(A.dtype).mT.contiguous().mT
    return H, tau.to(A.dtype), ok
