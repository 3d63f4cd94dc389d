"""Triton CholeskyQR2 panel, rebuilt into Householder form (issue 9's panel factorization).

A tall panel (columns ``[k, k + pw)``, rows ``[k, m)`` of one matrix) split over ``P``
programs of ``RB`` rows each, as :func:`~adaptqr.paths.kernels.panel.panel_split_kernel`,
but with four grid barriers per panel instead of one per column:

1. every program sums its rows' Gram matrix ``X_p^T X_p`` in float64 (the products of two
   float32 are exact in float64, so no scaling pass: 1e30 and 1e-40 columns are fine);
   barrier; each program reduces a slice of the ``P`` partials; barrier;
2. every program forms the same Cholesky factor ``R1`` (same bits: same reduced Gram,
   same code), ``Q1 = X R1^-1`` for its rows, the Gram of ``Q1`` (two more barriers), its
   Cholesky ``R2``, and ``Q = Q1 R2^-1``, ``R = R2 R1`` (CholeskyQR2: the second pass
   removes what the first lost to ``cond(X)^2``);
3. every program rebuilds the Householder form from the top ``NB x NB`` block of ``Q``
   (recomputed by each from the panel's top rows, so no barrier): the unpivoted LU
   ``Q_top - S = L U`` with ``S_ii = -sign`` of the pivot (LAPACK's ``orhr_col``), which
   gives ``V = [L; Q_rest U^-1]``, ``T = -U S L^-T``, ``tau = diag(T)`` and the panel's
   ``R`` rows ``S R``: the reflectors, signs and ``R`` that ``geqrf`` produces, up to
   rounding (Ballard et al., "Reconstructing Householder vectors from Tall-Skinny QR").

A matrix whose panel is too ill-conditioned for that (a Cholesky pivot below
``CHOL_MIN_REL_PIVOT`` of its column's squared norm, ``Q1`` further than
``CHOLQR_MAX_LOSS`` from orthonormal, anything non-finite), has a column with (nearly) nothing
below the diagonal (``CHOLQR_ZERO_SUBCOLUMN``: geqrf's tau = 0 there), or whose
``n_active`` falls inside the panel, takes the Householder column loop
(:func:`~adaptqr.paths.kernels.panel.split_columns`) on the same programs: every program
of the matrix sees the same reduced Gram matrices, so they branch together.

Storage and arguments as the split panel (``Ht = H.mT``, ``(B, n, m)`` contiguous).
"""

from __future__ import annotations

import triton
import triton.language as tl

from adaptqr.paths.kernels.panel import (_grid_barrier, join_upper_blocks, program_matrix,
                                         split_columns)

#: A Cholesky pivot at or below this fraction of its column's squared norm (the column's
#: distance to the span of the previous ones below 1e-5 of its norm) is treated as a
#: breakdown: the float64 Gram matrix of float32 data carries about 1e-13 relative error
#: for 4096 rows, so smaller pivots are mostly rounding.
CHOL_MIN_REL_PIVOT = tl.constexpr(1.0e-10)
#: Largest entry of ``Q1^T Q1 - I`` after the first pass that the second pass is trusted
#: to repair; CholeskyQR2's analysis needs the first pass's loss of orthogonality well
#: below 1 (Yamamoto et al., 2015).
CHOLQR_MAX_LOSS = tl.constexpr(0.1)
#: A column whose part below the diagonal has a squared norm at or below this fraction of
#: the column's (the Gram diagonal minus the top block's share, both float64 sums of the same
#: exact products, which differ by at most ~m * 1.1e-16 relative) takes the Householder
#: loop: geqrf leaves such a column as it is (tau = 0) where the reconstruction would give
#: tau = 1 + |q| >= 1 (an already upper-triangular panel, a zero column).
CHOLQR_ZERO_SUBCOLUMN = tl.constexpr(1.0e-12)


@triton.jit
def _eye(NB: tl.constexpr):
    ii = tl.arange(0, NB)
    return tl.where(ii[:, None] == ii[None, :], 1.0, 0.0).to(tl.float64)


@triton.jit
def _chol_upper(G, NB: tl.constexpr):
    """Upper ``R`` with ``R^T R = G`` (float64 ``[NB, NB]``, symmetric) and a 0/1 flag of
    a breakdown (a pivot at or below ``CHOL_MIN_REL_PIVOT`` of its diagonal, or not finite)."""
    ii = tl.arange(0, NB)
    diag0 = tl.sum(tl.where(ii[:, None] == ii[None, :], G, 0.0), axis=0)
    R = tl.zeros((NB, NB), dtype=tl.float64)
    bad = tl.zeros((NB,), dtype=tl.float64)
    for i in range(0, NB):
        row = tl.sum(tl.where(ii[:, None] == i, G, 0.0), axis=0)
        col = tl.sum(tl.where(ii[None, :] == i, G, 0.0), axis=1)
        d = tl.sum(tl.where(ii == i, row, 0.0), axis=0)
        g0 = tl.sum(tl.where(ii == i, diag0, 0.0), axis=0)
        good = (d > CHOL_MIN_REL_PIVOT * g0) & (d < float("inf"))
        bad = tl.where((ii == i) & (good == 0), 1.0, bad)
        rs = 1.0 / tl.sqrt(tl.where(good, d, 1.0))
        r_row = tl.where(ii >= i, row * rs, 0.0)
        r_col = tl.where(ii >= i, col * rs, 0.0)
        R = tl.where(ii[:, None] == i, r_row[None, :], R)
        G = G - r_col[:, None] * r_row[None, :]
    return R, tl.max(bad, axis=0)


@triton.jit
def _inv_upper(R, NB: tl.constexpr, LOG2NB: tl.constexpr):
    """``R^-1`` of an upper triangular float64 ``[NB, NB]`` with a nonzero diagonal, by
    doubling (:func:`~adaptqr.paths.kernels.panel.join_upper_blocks` from ``diag(1 / R_ii)``)."""
    ii = tl.arange(0, NB)
    on_diag = ii[:, None] == ii[None, :]
    dg = tl.sum(tl.where(on_diag, R, 0.0), axis=1)
    return join_upper_blocks(tl.where(on_diag, 1.0 / dg[:, None], 0.0), R, NB, LOG2NB)


@triton.jit
def _lu_signs(M, pw, last, NB: tl.constexpr):
    """Unpivoted LU of ``M - S`` (float64 ``[NB, NB]``; only the first ``pw`` columns are
    factored) with ``S_ii = -sign`` of the i-th pivot (sign(0) = +), so every pivot has
    magnitude at least 1; column ``last`` (or none: -1) is geqrf's square-matrix exception,
    ``S_ii = +sign`` and a pivot of about 0 (no rows below it may be live then). Returns
    ``(L, U, Sd)``: L unit lower (rows past ``pw`` keep their multipliers), U upper
    (identity past ``pw``), ``Sd = diag(S)`` (zero past ``pw``)."""
    ii = tl.arange(0, NB)
    L = tl.zeros((NB, NB), dtype=tl.float64)
    U = tl.zeros((NB, NB), dtype=tl.float64)
    Sd = tl.zeros((NB, NB), dtype=tl.float64)
    for i in range(0, NB):
        act = i < pw
        row = tl.sum(tl.where(ii[:, None] == i, M, 0.0), axis=0)
        col = tl.sum(tl.where(ii[None, :] == i, M, 0.0), axis=1)
        q = tl.sum(tl.where(ii == i, row, 0.0), axis=0)
        pos = q >= 0
        si = tl.where(i == last, tl.where(pos, 1.0, -1.0), tl.where(pos, -1.0, 1.0))
        piv = q - si
        urow = tl.where(ii == i, piv, tl.where(ii > i, row, 0.0))
        urow = tl.where(act, urow, tl.where(ii == i, 1.0, 0.0))
        lcol = tl.where(act & (ii > i), col / piv, 0.0)
        U = tl.where(ii[:, None] == i, urow[None, :], U)
        L = tl.where(ii[None, :] == i, lcol[:, None], L)
        Sd = tl.where((ii[:, None] == i) & (ii[None, :] == i) & act, si, Sd)
        M = M - lcol[:, None] * urow[None, :]
    return L + _eye(NB), U, Sd


@triton.jit
def _gram_round(Xd, GW, GR, CNT, bar, b, p, P, NB: tl.constexpr, PMAX: tl.constexpr):
    """``Xd^T``-Gram (``Xd`` float64 ``[NB, RB]``, columns by rows) of the whole panel:
    partials through ``GW`` (``(B, PMAX, NB*NB)``), reduced a slice per program into ``GR``
    (``(B, NB*NB)``) between two grid barriers (counters ``bar`` and ``bar + 1``)."""
    NN: tl.constexpr = NB * NB
    C: tl.constexpr = NN // PMAX
    ii = tl.arange(0, NB)
    pp = tl.arange(0, PMAX)
    cc = tl.arange(0, C)
    gwb = GW + b.to(tl.int64) * PMAX * NN
    grb = GR + b.to(tl.int64) * NN
    tl.store(gwb + p * NN + ii[:, None] * NB + ii[None, :], tl.dot(Xd, tl.trans(Xd)))
    _grid_barrier(CNT, bar, P)
    for c0 in range(p * C, NN, P * C):
        part = tl.load(gwb + pp[:, None] * NN + c0 + cc[None, :], mask=(pp < P)[:, None],
                       other=0.0, volatile=True)
        tl.store(grb + c0 + cc, tl.sum(part, axis=0))
    _grid_barrier(CNT, bar + 1, P)
    return tl.load(grb + ii[:, None] * NB + ii[None, :], volatile=True)


@triton.jit
def panel_cholqr_kernel(Ht, TAU, TW, NA, GW, GR, CNT4, WS, SP, CNT, k, m, n, pw, tw_index,
                        n_tw, P, NB: tl.constexpr, RB: tl.constexpr, PMAX: tl.constexpr,
                        LOG2NB: tl.constexpr, HAS_NA: tl.constexpr):
    """Factor columns [k, k+pw) of matrix program_id(0) with P programs (program_id(1)) of
    RB rows (RB >= NB, so program 0 holds the panel's top block), writing H, tau and T.

    GW: (B, PMAX, NB*NB) float64; GR: (B, NB*NB) float64; CNT4: (B, 4*n_tw) int32 zeros
    (this kernel's barriers, four a panel); WS, SP, CNT: the split panel's workspaces
    (the Householder fallback). The caller guarantees all B*P programs are resident.
    """
    b, base, na = program_matrix(Ht, NA, m, n, HAS_NA)
    p = tl.program_id(1)
    ii = tl.arange(0, NB)
    rl = tl.arange(0, RB)
    rows = k + p * RB + rl
    cols = k + ii
    colvalid = ii < pw
    rowvalid = rows < m
    if k < na:
        ptrs = base + cols[:, None] * m + rows[None, :]
        mask = colvalid[:, None] & rowvalid[None, :]
        X = tl.load(ptrs, mask=mask, other=0.0)
        # The panel's top block, for the reconstruction every program does alone.
        Xtop = tl.load(base + cols[:, None] * m + (k + ii)[None, :],
                       mask=colvalid[:, None] & ((k + ii) < m)[None, :], other=0.0).to(tl.float64)
        # Padding columns (past pw) get an identity Gram block: R = I there, Q = 0.
        pad = tl.where((ii[:, None] == ii[None, :]) & (ii[:, None] >= pw), 1.0, 0.0).to(tl.float64)
        cnt = CNT4 + b.to(tl.int64) * 4 * n_tw + 4 * tw_index
        Xd = X.to(tl.float64)
        G = _gram_round(Xd, GW, GR, cnt, 0, b, p, P, NB, PMAX)
        gdiag = tl.sum(tl.where(ii[:, None] == ii[None, :], G, 0.0), axis=1)
        topsq = tl.sum(tl.where(ii[None, :] <= ii[:, None], Xtop * Xtop, 0.0), axis=1)
        zero_sub = tl.max(tl.where(colvalid & (gdiag - topsq <= CHOLQR_ZERO_SUBCOLUMN * gdiag),
                                   1.0, 0.0), axis=0)
        G = G + pad
        R1, bad1 = _chol_upper(G, NB)
        # After a breakdown R1i is garbage (possibly inf): it is only used if ok holds.
        R1i = _inv_upper(R1, NB, LOG2NB)
        Q1 = tl.dot(tl.trans(R1i), Xd)
        G2 = _gram_round(Q1, GW, GR, cnt, 2, b, p, P, NB, PMAX) + pad
        loss = tl.max(tl.max(tl.abs(G2 - _eye(NB)), axis=1), axis=0)
        R2, bad2 = _chol_upper(G2, NB)
        ok = (bad1 == 0) & (bad2 == 0) & (loss <= CHOLQR_MAX_LOSS) & (zero_sub == 0) \
            & (na >= k + pw)
        if ok:
            R2i = _inv_upper(R2, NB, LOG2NB)
            Qt = tl.dot(tl.trans(R2i), Q1)
            R = tl.dot(R2, R1)
            # Q's top block (rows k..k+NB-1 by columns), from the same R1, R2 in every program.
            Qtop = tl.trans(tl.dot(tl.trans(R2i), tl.dot(tl.trans(R1i), Xtop)))
            L, U, Sd = _lu_signs(Qtop, pw, -1, NB)
            Ui = _inv_upper(U, NB, LOG2NB)
            # V's top block for T: the first pw rows of L only.
            L1 = tl.where((ii[:, None] < pw) | (ii[:, None] == ii[None, :]), L, 0.0)
            L1i = tl.trans(_inv_upper(tl.trans(L1), NB, LOG2NB))
            T = -tl.dot(tl.dot(U, Sd), tl.trans(L1i))
            keep = (ii[:, None] <= ii[None, :]) & colvalid[:, None] & colvalid[None, :]
            T = tl.where(keep, T, 0.0)
            Vt = tl.dot(tl.trans(Ui), Qt)
            # Top block of H: S R on and above the diagonal, L below, placed by a 0/1 product.
            Htop = tl.where(ii[:, None] > ii[None, :], L, tl.dot(Sd, R))
            place = tl.where(ii[:, None] == rl[None, :], 1.0, 0.0).to(tl.float64)
            top = tl.dot(tl.trans(Htop), place)
            in_top = (p == 0) & (rl < NB)
            tl.store(ptrs, tl.where(in_top[None, :], top, Vt).to(tl.float32), mask=mask)
            if p == 0:
                taus = tl.sum(tl.where(ii[:, None] == ii[None, :], T, 0.0), axis=0)
                tl.store(TAU + b.to(tl.int64) * n + cols, taus.to(tl.float32), mask=colvalid)
                tl.store(TW + (b.to(tl.int64) * n_tw + tw_index) * NB * NB + ii[:, None] * NB
                         + ii[None, :], T.to(tl.float32))
        else:
            split_columns(X, ptrs, mask, TAU, TW, WS, SP, CNT, b, p, na, k, m, n, pw, tw_index,
                          n_tw, P, NB, RB, PMAX, True)
    else:
        if p == 0:
            tl.store(TAU + b.to(tl.int64) * n + cols, tl.zeros((NB,), dtype=tl.float32),
                     mask=colvalid)
