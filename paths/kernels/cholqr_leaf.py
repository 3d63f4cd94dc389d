"""Triton leaves of the whole-matrix CholeskyQR path (issue 9): the small sequential steps.

The recursion in :mod:`adaptqr.paths.cholqr_blocks` spends its flops in batched GEMMs; what
cannot be a GEMM is a factorization of a ``LEAF x LEAF`` (32) float64 diagonal block, one
program per matrix, the block in registers:

* :func:`chol_leaf_kernel`: ``G = R^T R`` (upper ``R``, positive diagonal) and ``R^-1``,
  with a breakdown flag: a pivot at or below ``CHOL_MIN_REL_PIVOT`` of the column's
  *original* Gram diagonal (``gref``, not the Schur complement the leaf sees) means the column
  is within about 1e-5 of its norm of the span of the columns before it, in the whole
  matrix, not only inside the leaf.
* :func:`lu_leaf_kernel`: the unpivoted LU of ``M - S`` with ``S_ii = -sign`` of the i-th
  pivot (LAPACK ``dorhr_col``'s choice: every pivot at least 1 in magnitude), ``L^-1`` and
  ``U^-1``; the column ``last`` (a square matrix's last) is geqrf's exception, ``S_ii =
  +sign``, and the leaf then skips the inverses (nothing needs them there).

Blocks are sub-blocks of ``(B, n, n)`` float64 tensors (batch stride ``n * n``): entry
``(i, j)`` of a block at element ``off + i * sr + j * sc`` of its matrix, so row-major and
column-major storage take the same kernel; ``w <= LEAF`` rows and columns are live, the rest
of the register tile is the identity, so a partial leaf factors as if it were whole.

Example (on the GPU, or on the CPU under ``TRITON_INTERPRET=1``): one 8-column leaf::

    >>> import torch
    >>> from adaptqr.paths.kernels.cholqr_leaf import LEAF, LOG2_LEAF, chol_leaf_kernel
    >>> def demo(dev):
    ...     A = torch.randn(2, 40, 8, dtype=torch.float64, device=dev); G = A.mT @ A
    ...     R, Ri = torch.zeros_like(G), torch.zeros_like(G)
    ...     bad = torch.zeros(2, dtype=torch.int32, device=dev)
    ...     gref = G.diagonal(dim1=-2, dim2=-1).contiguous()
    ...     chol_leaf_kernel[(2,)](G, R, Ri, gref, bad, 0, 8, 1, 8, 0, 8, NB=LEAF, LOG2NB=LOG2_LEAF)
    ...     return torch.allclose(R.mT @ R, A.mT @ A), int(bad.sum())
    >>> demo("cuda") if torch.cuda.is_available() else (True, 0)
    (True, 0)
"""

from __future__ import annotations

import triton
import triton.language as tl

from adaptqr.paths.kernels.panel import join_upper_blocks

#: Square block of a leaf; a power of two. A [32, 32] float64 tile is 8 KB of registers:
#: a program of a few warps holds it whole (the warps: cholqr_blocks.LEAF_WARPS).
LEAF = 32
LOG2_LEAF = 5

#: A pivot at or below this fraction of the column's original squared norm is a breakdown:
#: a float32 input's Gram matrix in float64 carries about 1e-13 relative error at 4096 rows,
#: so pivots below 1e-10 are mostly rounding.
CHOL_MIN_REL_PIVOT = tl.constexpr(1.0e-10)


@triton.jit
def _eye(NB: tl.constexpr):
    ii = tl.arange(0, NB)
    return tl.where(ii[:, None] == ii[None, :], 1.0, 0.0).to(tl.float64)


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
def _load_block(P, off, sr, sc, w, NB: tl.constexpr):
    """The live ``w x w`` block at ``P + off`` (strides ``sr``, ``sc``), identity elsewhere."""
    ii = tl.arange(0, NB)
    live = (ii[:, None] < w) & (ii[None, :] < w)
    x = tl.load(P + off + ii[:, None] * sr + ii[None, :] * sc, mask=live, other=0.0)
    return tl.where(live, x, _eye(NB))


@triton.jit
def _load_sym_block(P, off, sr, sc, w, NB: tl.constexpr):
    """The symmetric block whose upper triangle is at ``P + off``: the lower triangle is read
    from the mirrored addresses (the Gram matrix's lower blocks are never computed)."""
    ii = tl.arange(0, NB)
    live = (ii[:, None] < w) & (ii[None, :] < w)
    up = ii[:, None] <= ii[None, :]
    x = tl.load(P + off + ii[:, None] * sr + ii[None, :] * sc, mask=live & up, other=0.0)
    xt = tl.load(P + off + ii[None, :] * sr + ii[:, None] * sc, mask=live & (up == 0), other=0.0)
    return tl.where(live, tl.where(up, x, xt), _eye(NB))


@triton.jit
def _store_block(P, off, sr, sc, w, x, NB: tl.constexpr):
    ii = tl.arange(0, NB)
    tl.store(P + off + ii[:, None] * sr + ii[None, :] * sc, x,
             mask=(ii[:, None] < w) & (ii[None, :] < w))


@triton.jit
def chol_leaf_kernel(G, R, RI, GREF, BAD, off, sr, sc, n, c0, w, NB: tl.constexpr,
                     LOG2NB: tl.constexpr):
    """Matrix ``program_id(0)``: ``R`` (upper) and ``R^-1`` of its ``w x w`` block of ``G``
    (only the block's upper triangle is read; the block is scratch afterwards).

    G, R, RI: (B, n, n) float64, one layout (the block at ``off``, strides ``sr``, ``sc``);
    GREF: (B, n) float64, the original Gram diagonal (columns ``c0..c0+w``); BAD: (B,)
    int32, set to 1 on a breakdown (kept if already set).

    A step reads its pivot row from memory, not from the register tile: each step stores
    the next pivot row of the updated tile (a masked store, no cross-thread reduction) into
    the block, and after a barrier every thread loads it in the layout it needs (as a row
    and, by symmetry, as a column): a 32-column leaf 31 -> 22 us against the reduction form
    (C9; C11 splits the 22: 12 the steps, 6 the doubling inverse, 2.5 launch and memory;
    ``rsqrt`` took 2.3 us off the steps).
    """
    b = tl.program_id(0).to(tl.int64)
    base = b * n * n
    ii = tl.arange(0, NB)
    Gp = G + base + off
    Rp = R + base + off
    Gb = _load_sym_block(G + base, off, sr, sc, w, NB)
    live = (ii[:, None] < w) & (ii[None, :] < w)
    bad = tl.program_id(0) * 0  # an int32 scalar tensor: the loop carries one type
    for i in range(0, w):
        tl.debug_barrier()
        row = tl.load(Gp + i * sr + ii * sc, mask=(ii >= i) & (ii < w), other=0.0)
        col = tl.load(Gp + i * sr + ii[:, None] * sc, mask=(ii[:, None] >= i) & (ii[:, None] < w),
                      other=0.0)
        d = tl.load(Gp + i * sr + i * sc)
        g0 = tl.load(GREF + b * n + c0 + i)
        # NaN fails both comparisons: a non-finite input is a breakdown too.
        good = (d > CHOL_MIN_REL_PIVOT * g0) & (d < float("inf"))
        bad = tl.where(good, bad, 1)
        # rsqrt, not 1 / sqrt: one special function on the column's chain instead of two
        # (C11: 21.7 -> 19.4 us a 32-column leaf).
        rs = tl.math.rsqrt(tl.where(good, d, 1.0))
        r_row = row * rs
        tl.store(Rp + i * sr + ii * sc, r_row, mask=ii < w)  # zeros left of the diagonal
        Gb = Gb - (col * rs) * r_row[None, :]
        # The next pivot row (columns right of it are all a step reads) for step i + 1.
        nxt = (ii[:, None] == i + 1) & (ii[None, :] >= i + 1) & live
        tl.store(Gp + ii[:, None] * sr + ii[None, :] * sc, Gb, mask=nxt)
    tl.debug_barrier()
    Rb = _load_block(R + base, off, sr, sc, w, NB)
    _store_block(RI + base, off, sr, sc, w, _inv_upper(Rb, NB, LOG2NB), NB)
    old = tl.load(BAD + b)
    tl.store(BAD + b, tl.maximum(old, bad))


@triton.jit
def lu_leaf_kernel(M, LI, UI, S, off, sr, sc, n, c0, w, last, NB: tl.constexpr,
                   LOG2NB: tl.constexpr, NEED_INV: tl.constexpr):
    """Matrix ``program_id(0)``: ``M - S = L U`` on its ``w x w`` block of ``M``, in place
    (``L`` strictly below the diagonal, ``U`` on and above); ``S``'s diagonal to ``S[:, c0:]``
    (float64 +-1); with ``NEED_INV``, ``L^-1`` (unit lower) and ``U^-1`` to LI, UI.

    ``last``: the block-local column that is geqrf's last column of a square matrix (``S_ii
    = +sign``, pivot about 0, no reflector), or -1.

    :func:`_lu_signs` in a leaf (pivot rows and columns by masked reductions). The
    through-memory form of :func:`chol_leaf_kernel` was
    slower here (C9: 6.31 against 5.41 ms for 8x2048's LU): a step must then store U's row
    and L's column and the next pivot row and column, with a second barrier. Rows past
    ``w`` are the identity's (zero below the diagonal), so their multipliers are 0, or NaN
    in the ``last`` column's step (0 over a pivot of about 0); no such lane is stored.
    """
    b = tl.program_id(0).to(tl.int64)
    base = b * n * n
    ii = tl.arange(0, NB)
    on_diag = ii[:, None] == ii[None, :]
    L, U, Sd = _lu_signs(_load_block(M + base, off, sr, sc, w, NB), w, last, NB)
    _store_block(M + base, off, sr, sc, w, tl.where(ii[:, None] > ii[None, :], L, U), NB)
    tl.store(S + b * n + c0 + ii, tl.sum(tl.where(on_diag, Sd, 0.0), axis=1), mask=ii < w)
    if NEED_INV:
        _store_block(LI + base, off, sr, sc, w,
                     tl.trans(_inv_upper(tl.trans(L), NB, LOG2NB)), NB)
        _store_block(UI + base, off, sr, sc, w, _inv_upper(U, NB, LOG2NB), NB)
