"""``C <- Q^T C`` by blocks of ``G`` reflectors in GEMM-shaped tiles (the wide path's other
columns, EXPERIMENTS.md W2).

Storage as in :mod:`adaptqr.paths.kernels.qform`: ``Ht`` ``(B, n, m)`` contiguous (row j of
``Ht[b]`` is column j of matrix b), ``TAU`` ``(B, k)``; ``TG`` ``(B, n_g, G, G)`` (block g's
``T`` at ``TG[b, g]``, row-major); ``C``: ``nc`` columns of ``m`` contiguous rows (column j of
matrix b at ``C + b * c_batch + j * c_col``); ``Y`` ``(B, G, nc)`` contiguous, one block's
``T^T V^T C``.

For block g (reflectors ``[g G, g G + G)``, rows ``[g G, m)``)::

    W = V^T C          (G x nc: group_w_kernel, one program a column tile, summed over rows)
    Y = T^T W          (in the same program)
    C -= V Y           (group_u_kernel, one program a (row tile, column tile))

The strip kernel (``qform.apply_qt_kernel``) takes every panel of 32 reflectors in turn on
one program's columns, a chain of ~1000 dependent row-chunk steps at 8x1024x4096; here a
block is two launches over the whole GPU, with ``K = m - g G`` and ``K = G`` products.

* :func:`group_t_kernel`, grid ``(B, n_g)``: block g's ``T`` from ``V^T V`` (summed over
  row chunks) by doubling (:func:`~adaptqr.paths.kernels.panel.join_upper_blocks`), for G
  32 and 64: its ``[G, G]`` IEEE products at 128 did not compile within 10 minutes
  (triton 3.6, sm_90).
* For G = 128, :func:`group_s_kernel` (the blocks' ``V^T V``) and
  :func:`group_w_sub_kernel`, which forms ``T^T W`` from the four panels' own T by block
  substitution instead.

Example: see :func:`adaptqr.qform.apply_qt` (``qt_group`` knob).
"""

from __future__ import annotations

import triton
import triton.language as tl

from adaptqr.paths.kernels.panel import join_upper_blocks
from adaptqr.paths.kernels.trailing import _dot, _load_v


@triton.jit
def _block_vtv(base, k0, m, k, G: tl.constexpr, CH: tl.constexpr, PREC: tl.constexpr):
    """``V^T V`` ``[G, G]`` of the reflectors ``[k0, k0 + G)`` at ``base``, over row chunks of
    CH."""
    S = tl.zeros((G, G), dtype=tl.float32)
    for r0 in range(k0, m, CH):
        Vt = _load_v(base, k0, r0 + tl.arange(0, CH), m, m, k, G, k - k0)
        S += _dot(Vt, tl.trans(Vt), PREC)
    return S


@triton.jit
def group_t_kernel(Ht, TAU, TG, m, n, k, n_g, G: tl.constexpr, CH: tl.constexpr,
                   LOG2G: tl.constexpr, PREC: tl.constexpr):
    """``TG[b, g]``: the ``T`` of reflectors ``[g G, g G + G)`` of matrix b (those at or past
    ``k`` count as ``tau = 0``)."""
    b = tl.program_id(0)
    g = tl.program_id(1)
    k0 = g * G
    base = Ht + b.to(tl.int64) * n * m
    jj = tl.arange(0, G)
    taus = tl.load(TAU + b.to(tl.int64) * k + k0 + jj, mask=k0 + jj < k, other=0.0)
    S = _block_vtv(base, k0, m, k, G, CH, PREC)
    X = tl.where(jj[:, None] == jj[None, :], taus[:, None], 0.0)
    T = join_upper_blocks(X, S, G, LOG2G)
    tl.store(TG + ((b.to(tl.int64) * n_g + g) * G + jj[:, None]) * G + jj[None, :], T)


@triton.jit
def group_w_kernel(Ht, TG, C, Y, m, n, k, nc, n_g, g, c_batch, c_col,
                   G: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr):
    """``Y[b, :, tile] = T^T V^T C[b, :, tile]`` for block g and program ``(b, t)``'s ``BN``
    columns."""
    b = tl.program_id(0)
    t = tl.program_id(1)
    k0 = g * G
    base = Ht + b.to(tl.int64) * n * m
    cbase = C + b.to(tl.int64) * c_batch
    cc = t * BN + tl.arange(0, BN)
    ccmask = cc < nc
    W = tl.zeros((G, BN), dtype=tl.float32)
    for r0 in range(k0, m, BK):
        r = r0 + tl.arange(0, BK)
        Vt = _load_v(base, k0, r, m, m, k, G, k - k0)
        Cc = tl.load(cbase + cc[None, :] * c_col + r[:, None],
                     mask=(r < m)[:, None] & ccmask[None, :], other=0.0)
        W += _dot(Vt, Cc, PREC)
    jj = tl.arange(0, G)
    T = tl.load(TG + ((b.to(tl.int64) * n_g + g) * G + jj[:, None]) * G + jj[None, :])
    Yv = _dot(tl.trans(T), W, PREC)
    tl.store(Y + (b.to(tl.int64) * G + jj[:, None]) * nc + cc[None, :], Yv,
             mask=ccmask[None, :])


@triton.jit
def group_u_kernel(Ht, Y, C, m, n, k, nc, g, c_batch, c_col,
                   G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, PREC: tl.constexpr):
    """``C[b, rows, cols] -= V[rows, :] Y[b, :, cols]`` for block g, program ``(b, i, t)``'s
    ``BM`` rows (from ``g G``) and ``BN`` columns."""
    b = tl.program_id(0)
    k0 = g * G
    r = k0 + tl.program_id(1) * BM + tl.arange(0, BM)
    cc = tl.program_id(2) * BN + tl.arange(0, BN)
    base = Ht + b.to(tl.int64) * n * m
    cptr = C + b.to(tl.int64) * c_batch + cc[None, :] * c_col + r[:, None]
    cmask = (r < m)[:, None] & (cc < nc)[None, :]
    V = tl.trans(_load_v(base, k0, r, m, m, k, G, k - k0))
    jj = tl.arange(0, G)
    Yv = tl.load(Y + (b.to(tl.int64) * G + jj[:, None]) * nc + cc[None, :],
                 mask=(cc < nc)[None, :], other=0.0)
    Ct = tl.load(cptr, mask=cmask, other=0.0)
    tl.store(cptr, Ct - _dot(V, Yv, PREC), mask=cmask)


@triton.jit
def group_s_kernel(Ht, S, m, n, k, n_g, G: tl.constexpr, CH: tl.constexpr,
                   PREC: tl.constexpr):
    """``S[b, g] = V^T V`` of reflectors ``[g G, g G + G)`` of matrix b (``(B, n_g, G, G)``,
    row-major), for :func:`group_w_sub_kernel`."""
    b = tl.program_id(0)
    g = tl.program_id(1)
    k0 = g * G
    base = Ht + b.to(tl.int64) * n * m
    jj = tl.arange(0, G)
    tl.store(S + ((b.to(tl.int64) * n_g + g) * G + jj[:, None]) * G + jj[None, :],
             _block_vtv(base, k0, m, k, G, CH, PREC))


@triton.jit
def _s_block(S, b, g, n_g, i, j, G: tl.constexpr):
    """``V_i^T V_j``: the ``[32, 32]`` block (i, j) of ``S[b, g]``."""
    ii = tl.arange(0, 32)
    return tl.load(S + ((b.to(tl.int64) * n_g + g) * G + 32 * i + ii[:, None]) * G
                   + 32 * j + ii[None, :])


@triton.jit
def _panel_t(TW, b, p, n_tw):
    """Panel p's ``[32, 32]`` T (zero past the last panel)."""
    ii = tl.arange(0, 32)
    ok = (tl.zeros((32, 32), dtype=tl.int32) + p) < n_tw
    return tl.load(TW + (b.to(tl.int64) * n_tw + tl.minimum(p, n_tw - 1)) * 1024
                   + ii[:, None] * 32 + ii[None, :], mask=ok, other=0.0)


@triton.jit
def group_w_sub_kernel(Ht, TW, S, C, Y, m, n, k, nc, n_tw, n_g, g, c_batch, c_col,
                       BN: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr):
    """:func:`group_w_kernel` for ``G = 128`` without the block's T: the four panels' W are
    summed over the rows together, then ``Y_i = T_i^T (W_i - sum_{j<i} S_ij Y_j)`` with each
    panel's own ``[32, 32]`` T (``TW``, qform_t_kernel's) and the couplings
    ``S_ij = V_i^T V_j`` (:func:`group_s_kernel`): that is ``T^T W`` of the 128-wide
    block, with no ``[128, 128]`` product."""
    b = tl.program_id(0)
    t = tl.program_id(1)
    k0 = g * 128
    base = Ht + b.to(tl.int64) * n * m
    cbase = C + b.to(tl.int64) * c_batch
    cc = t * BN + tl.arange(0, BN)
    ccmask = cc < nc
    W0 = tl.zeros((32, BN), dtype=tl.float32)
    W1 = tl.zeros((32, BN), dtype=tl.float32)
    W2 = tl.zeros((32, BN), dtype=tl.float32)
    W3 = tl.zeros((32, BN), dtype=tl.float32)
    for r0 in range(k0, m, BK):
        r = r0 + tl.arange(0, BK)
        Cc = tl.load(cbase + cc[None, :] * c_col + r[:, None],
                     mask=(r < m)[:, None] & ccmask[None, :], other=0.0)
        W0 += _dot(_load_v(base, k0, r, m, m, k, 32, k - k0), Cc, PREC)
        W1 += _dot(_load_v(base, k0 + 32, r, m, m, k, 32, k - k0 - 32), Cc, PREC)
        W2 += _dot(_load_v(base, k0 + 64, r, m, m, k, 32, k - k0 - 64), Cc, PREC)
        W3 += _dot(_load_v(base, k0 + 96, r, m, m, k, 32, k - k0 - 96), Cc, PREC)
    p0 = 4 * g
    Y0 = _dot(tl.trans(_panel_t(TW, b, p0, n_tw)), W0, PREC)
    W1 -= _dot(_s_block(S, b, g, n_g, 1, 0, 128), Y0, PREC)
    Y1 = _dot(tl.trans(_panel_t(TW, b, p0 + 1, n_tw)), W1, PREC)
    W2 -= _dot(_s_block(S, b, g, n_g, 2, 0, 128), Y0, PREC)
    W2 -= _dot(_s_block(S, b, g, n_g, 2, 1, 128), Y1, PREC)
    Y2 = _dot(tl.trans(_panel_t(TW, b, p0 + 2, n_tw)), W2, PREC)
    W3 -= _dot(_s_block(S, b, g, n_g, 3, 0, 128), Y0, PREC)
    W3 -= _dot(_s_block(S, b, g, n_g, 3, 1, 128), Y1, PREC)
    W3 -= _dot(_s_block(S, b, g, n_g, 3, 2, 128), Y2, PREC)
    Y3 = _dot(tl.trans(_panel_t(TW, b, p0 + 3, n_tw)), W3, PREC)
    ii = tl.arange(0, 32)
    ybase = Y + (b.to(tl.int64) * 128 + ii[:, None]) * nc + cc[None, :]
    tl.store(ybase, Y0, mask=ccmask[None, :])
    tl.store(ybase + 32 * nc, Y1, mask=ccmask[None, :])
    tl.store(ybase + 64 * nc, Y2, mask=ccmask[None, :])
    tl.store(ybase + 96 * nc, Y3, mask=ccmask[None, :])
