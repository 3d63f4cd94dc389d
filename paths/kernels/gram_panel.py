"""Triton Gram panel: CholeskyQR2 of a panel, rebuilt into geqrf's Householder form.

Same storage and outputs as :func:`adaptqr.paths.kernels.panel.panel_reg_kernel` (``Ht =
H.mT``, one program a matrix; the panel's reflectors and R in ``Ht``, its taus in ``TAU``, its
compact-WY ``T`` in ``TW``). What differs is how the column chain is spent (issue 24,
EXPERIMENTS.md G4):

* the register panel's NB column steps each sweep its whole ``[NB, MB]`` register tile
  several times on the CUDA cores (a column extracted, its norm, ``w = P^T v``, the rank-1
  update), and that tile keeps one or two programs on an SM: at 640x512 the panels are
  3.5 ms, throughput-bound on those sweeps;
* here the panel is streamed through L2 three times in ``[NB, CH]`` chunks on the tensor
  cores (``G1 = P^T P``, ``G2 = Q1^T Q1``, ``V = P N``; tf32x3), and the serial steps work
  on ``[NB, NB]`` tiles only: two Cholesky factorizations, the unpivoted LU of ``Q_top - S``
  (LAPACK ``orhr_col``; Ballard et al., "Reconstructing Householder vectors from tall-skinny
  QR", 2015), and triangular inverses by doubling
  (:func:`~adaptqr.paths.kernels.panel.join_upper_blocks`). Small registers, many programs
  an SM.

The algebra, per matrix (``P`` the panel, ``m' x NB``; ``S = diag(s)``):

1. ``G1 = P^T P = R1^T R1``; ``Q1 = P R1^-1``; ``G2 = Q1^T Q1 = R2^T R2``; ``Q = Q1 R2^-1``,
   ``R = R2 R1`` (CholeskyQR2).
2. ``Q_top - S = L U`` (``NB x NB``, a column a step, ``s_i = -sign(d_i)`` so ``|U_ii| >= 1``).
3. ``V = [L; Q_below U^-1]`` (unit lower; ``Q_below U^-1 = P_below N`` with ``N = R1^-1
   R2^-1 U^-1``), ``tau_i = -s_i U_ii``, ``R_out = S R``, and
   ``T = -U S L^-T`` (from ``Q S = (I - V T V^T)[:, :NB]``): geqrf's reflectors and signs, as
   Householder QR of the same panel gives them up to rounding.

Per matrix, the program leaves the panel as it is (``DONE[b] = 0``) for the register
panel launched after it (its column steps, :func:`~adaptqr.paths.kernels.panel.panel_reg_kernel`
with ``DONE``, which skips the matrices done here) when the Gram route is not safe:

* a Cholesky pivot below :data:`PIVOT_MIN` of its column's squared norm, or a column norm
  below ``2^-50`` (the Gram squares: a tiny column's products leave float32's range);
* ``G2`` further than :data:`ORTH_MAX` from the identity (the panel's condition number is
  beyond what one CholeskyQR pass repairs in float32), or anything non-finite;
* a column with nothing below its diagonal (geqrf gives tau = 0 there, the reconstruction
  would not), or ``n_active`` inside the panel.

``GC[b]`` (int32) counts the panels of matrix ``b`` that took the Gram route (for the
decisions log); the launcher zeroes it once a call.

Example (see :mod:`adaptqr.paths.householder` for the launcher)::

    >>> import torch
    >>> from adaptqr.paths.householder import factor_householder
    >>> A = torch.randn(2, 256, 64)
    >>> H = A.mT.contiguous().mT; tau = A.new_empty(2, 64)
    >>> if torch.cuda.is_available():
    ...     factor_householder(H.cuda(), tau.cuda(), None)
"""

from __future__ import annotations

import triton
import triton.language as tl

from adaptqr.paths.kernels.panel import _store_t, join_upper_blocks, program_matrix

#: Smallest Cholesky pivot, relative to its column's squared norm (the squared sine of the
#: column's angle to the columns before it), that the Gram route accepts: 2^-16. Below it
#: the panel's condition number may exceed ~250, where float32 CholeskyQR's first pass
#: leaves Q1 too far from orthonormal for the second to repair (orthogonality error about
#: eps32 * cond^2).
PIVOT_MIN = tl.constexpr(1.52587890625e-05)  # 2^-16
#: Smallest column squared norm the Gram route accepts (2^-100: the products of a column
#: below 2^-50 lose bits to float32's subnormals).
GRAM_MIN_SQ = tl.constexpr(7.888609052210118e-31)  # 2^-100
#: Largest ``|G2 - I|`` entry the second pass accepts: 2^-4.
ORTH_MAX = tl.constexpr(0.0625)


@triton.jit
def _chol_upper(G, NB: tl.constexpr):
    """``(R, d)``: upper ``R`` with ``G = R^T R`` for the symmetric ``[NB, NB]`` ``G``, and the
    pivots ``d`` (before their square roots). A pivot that is not positive gives a row of
    garbage: the caller tests ``d``."""
    ii = tl.arange(0, NB)
    R = tl.zeros((NB, NB), dtype=tl.float32)
    d = tl.zeros((NB,), dtype=tl.float32)
    for j in range(0, NB):
        row = tl.sum(tl.where(ii[:, None] == j, G, 0.0), axis=0)
        dj = tl.sum(tl.where(ii == j, row, 0.0), axis=0)
        rrow = tl.where(ii >= j, row * tl.rsqrt(tl.where(dj > 0.0, dj, 1.0)), 0.0)
        R = tl.where(ii[:, None] == j, rrow[None, :], R)
        G = G - rrow[:, None] * rrow[None, :]
        d = tl.where(ii == j, dj, d)
    return R, d


@triton.jit
def _upper_inverse(R, NB: tl.constexpr, LOG2NB: tl.constexpr, STEPS: tl.constexpr):
    """``R^-1`` of the upper triangular ``[NB, NB]`` ``R`` with a nonzero diagonal: by
    doubling (``log2 NB`` levels of two ``[NB, NB]`` products), or with ``STEPS`` a column a
    step (``X[:j, j] = -X R[:, j] / R_jj``: NB steps of a few reductions, a product's worth of
    multiplies in all)."""
    ii = tl.arange(0, NB)
    if STEPS:
        X = tl.zeros((NB, NB), dtype=tl.float32)
        for j in range(0, NB):
            rcol = tl.sum(tl.where(ii[None, :] == j, R, 0.0), axis=1)
            inv = 1.0 / tl.sum(tl.where(ii == j, rcol, 0.0), axis=0)
            # X's columns from j on are still zero: X R[:, j] = X[:, :j] R[:j, j].
            xcol = tl.where(ii == j, inv, -tl.sum(X * rcol[None, :], axis=1) * inv)
            X = tl.where(ii[None, :] == j, xcol[:, None], X)
        return X
    else:
        diag = tl.sum(tl.where(ii[:, None] == ii[None, :], R, 0.0), axis=0)
        X = tl.where(ii[:, None] == ii[None, :], 1.0 / diag[None, :], 0.0)
        return join_upper_blocks(X, R, NB, LOG2NB)


@triton.jit
def _lu_minus_signs(W, NB: tl.constexpr):
    """Unpivoted LU of ``W - S`` (``[NB, NB]``, W with orthonormal columns' top block):
    ``(L, U, s)`` with ``L`` unit lower (its diagonal not stored: zeros), ``U`` upper and
    ``s_i = -sign(d_i)`` for the diagonal entry ``d_i`` the step meets (sign(0) = +)."""
    ii = tl.arange(0, NB)
    L = tl.zeros((NB, NB), dtype=tl.float32)
    U = tl.zeros((NB, NB), dtype=tl.float32)
    s = tl.zeros((NB,), dtype=tl.float32)
    for i in range(0, NB):
        row = tl.sum(tl.where(ii[:, None] == i, W, 0.0), axis=0)
        col = tl.sum(tl.where(ii[None, :] == i, W, 0.0), axis=1)
        d = tl.sum(tl.where(ii == i, row, 0.0), axis=0)
        si = tl.where(d >= 0.0, -1.0, 1.0)
        u = d - si  # |u| = |d| + 1 >= 1
        urow = tl.where(ii > i, row, tl.where(ii == i, u, 0.0))
        lcol = tl.where(ii > i, col * (1.0 / u), 0.0)
        W = W - lcol[:, None] * tl.where(ii > i, row, 0.0)[None, :]
        U = tl.where(ii[:, None] == i, urow[None, :], U)
        L = tl.where(ii[None, :] == i, lcol[:, None], L)
        s = tl.where(ii == i, si, s)
    return L, U, s


@triton.jit
def _mm(a, b):
    return tl.dot(a, b, input_precision="ieee")


@triton.jit
def _chunk(base, cols, r0, m, CH: tl.constexpr):
    """``(ptrs, mask, rows)`` of the panel's rows ``[r0, r0 + CH)`` as an ``[NB, CH]`` tile."""
    rows = r0 + tl.arange(0, CH)
    return base + cols[:, None] * m + rows[None, :], (rows < m)[None, :], rows


@triton.jit
def panel_gram_kernel(Ht, TAU, TW, NA, GC, DONE, k, m, n, tw_index, n_tw,
                      NB: tl.constexpr, CH: tl.constexpr, LOG2NB: tl.constexpr,
                      HAS_NA: tl.constexpr, INV_STEPS: tl.constexpr = False):
    """Factor the full panel at columns [k, k+NB) of matrix program_id(0) by the Gram route
    (module docstring), or leave it as it is: ``DONE[b]`` says which (1: factored, T written,
    ``GC[b]`` + 1; 0: the column steps must factor it). A panel at or past ``n_active``
    gets its zero taus here and counts as done.

    Arguments as :func:`~adaptqr.paths.kernels.panel.panel_reg_kernel`, without ``pw`` (NB
    columns, ``m - k > NB`` rows: a square matrix's last block is geqrf's exception). The
    panel is streamed through L2 in ``[NB, CH]`` row chunks, three passes: no tile of the
    whole panel in registers, so that many programs share an SM and hide the chains.
    """
    b, base, na = program_matrix(Ht, NA, m, n, HAS_NA)
    jj = tl.arange(0, NB)
    cols = k + jj
    eye = jj[:, None] == jj[None, :]
    done = 1
    if k < na:
        G1 = tl.zeros((NB, NB), dtype=tl.float32)
        # Per column, its largest entry below the diagonal: 0 for a column with nothing
        # there (upper-triangular input), where geqrf's tau = 0.
        sub = tl.zeros((NB,), dtype=tl.float32)
        for r0 in range(k, m, CH):
            ptrs, msk, rows = _chunk(base, cols, r0, m, CH)
            Pc = tl.load(ptrs, mask=msk, other=0.0)
            G1 += tl.dot(Pc, tl.trans(Pc), input_precision="tf32x3")
            sub = tl.maximum(sub, tl.max(tl.where(rows[None, :] > cols[:, None], tl.abs(Pc), 0.0),
                                         axis=1))
        g0 = tl.sum(tl.where(eye, G1, 0.0), axis=0)
        R1, d1 = _chol_upper(G1, NB)
        ok = (k + NB <= na) & (tl.min(tl.where((d1 >= PIVOT_MIN * g0) & (g0 >= GRAM_MIN_SQ)
                                               & (sub > 0.0), 1, 0), axis=0) > 0)
        done = 0
        if ok:
            R1i = _upper_inverse(R1, NB, LOG2NB, INV_STEPS)
            G2 = tl.zeros((NB, NB), dtype=tl.float32)
            for r0 in range(k, m, CH):
                ptrs, msk, rows = _chunk(base, cols, r0, m, CH)
                Q1c = tl.dot(tl.trans(R1i), tl.load(ptrs, mask=msk, other=0.0),
                             input_precision="tf32x3")
                G2 += tl.dot(Q1c, tl.trans(Q1c), input_precision="tf32x3")
            R2, d2 = _chol_upper(G2, NB)
            # NaN fails every comparison, so a non-finite panel fails here too.
            ok = (tl.min(tl.where(tl.abs(G2 - tl.where(eye, 1.0, 0.0)) <= ORTH_MAX, 1, 0)) > 0) \
                & (tl.min(tl.where(d2 > 0.5, 1, 0), axis=0) > 0)
            if ok:
                Ri = _mm(R1i, _upper_inverse(R2, NB, LOG2NB, INV_STEPS))
                # The top block of Q from the panel's top rows ([NB, NB], row-major in r).
                top = base + cols[None, :] * m + (k + jj)[:, None]
                L, U, s = _lu_minus_signs(_mm(tl.load(top), Ri), NB)
                N = _mm(Ri, _upper_inverse(U, NB, LOG2NB, INV_STEPS))
                # The rows below the top block: V = Q_below U^-1 = P_below N.
                for r0 in range(k, m, CH):
                    ptrs, msk, rows = _chunk(base, cols, r0, m, CH)
                    Vc = tl.dot(tl.trans(N), tl.load(ptrs, mask=msk, other=0.0),
                                input_precision="tf32x3")
                    tl.store(ptrs, Vc, mask=msk & (rows >= k + NB)[None, :])
                tl.store(top, tl.where(jj[:, None] > jj[None, :], L, s[:, None] * _mm(R2, R1)))
                # Q's top block S-signed is I - L T L^T: T = -U S L^-T.
                LiT = _upper_inverse(tl.trans(L) + tl.where(eye, 1.0, 0.0), NB, LOG2NB, INV_STEPS)
                _store_t(TW, b, tw_index, n_tw, -_mm(U * s[None, :], LiT), NB)
                tl.store(TAU + b.to(tl.int64) * n + cols,
                         -s * tl.sum(tl.where(eye, U, 0.0), axis=0))
                tl.store(GC + b, tl.load(GC + b) + 1)
                done = 1
    else:
        tl.store(TAU + b.to(tl.int64) * n + cols, tl.zeros((NB,), dtype=tl.float32))
    tl.store(DONE + b, done)
