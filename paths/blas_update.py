"""The householder path's rest update in cuBLAS products, a group of panels at a time
(EXPERIMENTS.md T5; schedule knob ``blas_group``, off by default).

For few large matrices the Triton trailing kernels run far below the GPU's product rate
(2x4096: ~1.8e11 flops of updates in ~8-12 ms). Here a group of ``G`` panels (``G * nb``
reflectors, 128 or 256) is applied to the columns after it as two GEMM-shaped products at
full float32 precision, as LAPACK's ``larfb`` does::

    W = C^T V        (B, c, g)
    C^T -= (W T) V^T

with ``C`` the columns ``[c_start, c_end)`` below row ``k0`` (rows of ``Ht``, H's columns
stored as rows), ``V`` the group's unit lower trapezoidal reflectors and ``T`` their
compact-WY factor, merged from the panels' own ``T`` (``TW``) by doubling:
``T = [[T1, -T1 (V1^T V2) T2], [0, T2]]``. Only products, no triangular solve.

Per matrix, columns at or past ``n_active`` (their panels wrote ``tau = 0`` and no ``T``)
get zero rows and columns in ``T`` and zero reflectors: nothing a skipped panel left in
memory reaches the product.

Example::

    >>> import torch
    >>> from adaptqr.paths.blas_update import group_t
    >>> V = torch.tensor([[1.0, 0.5], [0.0, 1.0]], dtype=torch.float64).expand(1, 2, 2)
    >>> tw = torch.tensor([[[[1.2]], [[0.8]]]], dtype=torch.float64)  # two panels of one column
    >>> group_t(V, tw, None).tolist()[0][0]
    [1.2, -0.48]
"""

from __future__ import annotations

import torch

__all__ = ["group_t", "rest_update"]


def group_t(Vt: torch.Tensor, TWg: torch.Tensor, live: torch.Tensor | None) -> torch.Tensor:
    """``T`` ``(B, g, g)`` of the reflectors in ``Vt`` ``(B, g, rows)`` (``V^T``: unit upper
    trapezoidal rows) from the panels' own ``T`` ``TWg`` ``(B, G, nb, nb)``, ``g = G nb``, ``G``
    a power of two. ``live`` ``(B, g)`` bool (None: all): rows and columns of dead
    reflectors are zero."""
    B, G, nb, _ = TWg.shape
    g = G * nb
    S = torch.bmm(Vt, Vt.mT)
    T = Vt.new_zeros(B, g, g)
    base = T.storage_offset()
    diag = T.as_strided((B, G, nb, nb), (g * g, nb * (g + 1), g, 1), base)
    diag.copy_(TWg)
    if live is not None:
        # masked_fill, not a product: a skipped panel's T is whatever memory held (NaN too).
        T.masked_fill_(~live[:, :, None], 0.0)
        T.masked_fill_(~live[:, None, :], 0.0)
    h = nb
    while h < g:
        pairs = g // (2 * h)
        shape, stride = (B, pairs, h, h), (g * g, 2 * h * (g + 1), g, 1)
        T11 = T.as_strided(shape, stride, base)
        T22 = T.as_strided(shape, stride, base + h * (g + 1))
        T12 = T.as_strided(shape, stride, base + h)
        S12 = S.as_strided(shape, stride, S.storage_offset() + h)
        T12.copy_(torch.matmul(torch.matmul(T11, S12), T22).neg_())
        h *= 2
    return T


def rest_update(Ht: torch.Tensor, TW: torch.Tensor, na: torch.Tensor | None, k0: int,
                npan: int, nb: int, c_start: int, c_end: int) -> None:
    """Apply the ``npan`` panels of ``nb`` columns from column ``k0`` (``npan`` a power of
    two, all within the matrix) to H's columns ``[c_start, c_end)``, in place in ``Ht``
    ``(B, n, m)``; ``TW`` ``(B, n_tw, nb, nb)``: the panels' ``T``; ``na``: ``(B,)`` int32
    ``n_active``, or None. Full float32 products, whatever the caller's matmul precision."""
    from adaptqr.qform import full_fp32_matmul

    B, n, m = Ht.shape
    g = npan * nb
    Vt = Ht[:, k0:k0 + g, k0:].triu(1)
    Vt.diagonal(dim1=-2, dim2=-1).fill_(1.0)
    live = None
    if na is not None:
        cols = torch.arange(k0, k0 + g, device=Ht.device, dtype=na.dtype)
        live = cols[None, :] < na[:, None]
        Vt.masked_fill_(~live[:, :, None], 0.0)
    Ct = Ht[:, c_start:c_end, k0:]
    with full_fp32_matmul():
        T = group_t(Vt, TW[:, k0 // nb:k0 // nb + npan], live)
        W = torch.bmm(Ct, Vt.mT)
        Ct.baddbmm_(torch.bmm(W, T), Vt, alpha=-1.0)
