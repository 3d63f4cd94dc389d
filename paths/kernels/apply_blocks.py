"""``C <- Q^T C`` by blocks of ``G`` reflectors in GEMM-shaped tiles (the wide path's other
columns, EXPERIMENTS.md W1).

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
  row chunks) by doubling (:func:`~adaptqr.paths.kernels.panel.join_upper_blocks`). Its
  ``[G, G]`` IEEE products limit G to 64: at 128 the compile did not end within 10 minutes
  (triton 3.6, sm_90).

Example: see :func:`adaptqr.qform.apply_qt` (``qt_group`` knob).
"""

from __future__ import annotations

import triton
import triton.language as tl

from adaptqr.paths.kernels.panel import join_upper_blocks
from adaptqr.paths.kernels.trailing import _dot, _load_v


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
    S = tl.zeros((G, G), dtype=tl.float32)
    for r0 in range(k0, m, CH):
        Vt = _load_v(base, k0, r0 + tl.arange(0, CH), m, m, k, G, k - k0)
        S += _dot(Vt, tl.trans(Vt), PREC)
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
