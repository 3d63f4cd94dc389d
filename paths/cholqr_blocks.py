"""Batched float64 block factorizations for the CholeskyQR path: GEMM recursions over leaves.

Every function works on ``(B, n, n)`` float64 tensors in place, for any strides with a unit
row or column stride (the path passes column-major ones, the layout of geqrf's ``H``). The
flops are batched GEMMs (``torch.baddbmm_`` on strided views: cuBLAS DGEMM on the device,
FP64 tensor cores); the sequential part is the ``LEAF x LEAF`` diagonal blocks, factored by
the Triton kernels of :mod:`adaptqr.paths.kernels.cholqr_leaf` (one program per matrix).
The recursion halves a block at a multiple of ``LEAF``, so an ``n``-column problem has
about ``n / LEAF`` leaves, each one launch.

* :func:`gram_upper`: ``G = A^T A``, only the block upper triangle that the Cholesky reads.
* :func:`chol_inv`: ``G = R^T R`` and ``R^-1`` (recursive: ``R12 = R11^-T G12``, ``G22 -=
  R12^T R12``, ``(R^-1)12 = -R11^-1 R12 R22^-1``), with a per-matrix breakdown flag.
* :func:`right_upper_mul`: ``A <- A U`` for upper ``U`` (``Q = A R^-1``), column blocks in
  reverse order so that it can overwrite ``A``.
* :func:`lu_signs`: ``M - S = L U`` without pivoting, ``S`` chosen per column as LAPACK's
  ``dorhr_col`` does (recursive: ``L21 = M21 U11^-1``, ``U12 = L11^-1 M12``, ``M22 -= L21
  U12``; the inverses only where a parent needs them).

Example::

    >>> import torch
    >>> from adaptqr.paths import cholqr_blocks as cb
    >>> A = torch.randn(2, 40, 40, dtype=torch.float64)
    >>> G = torch.zeros(2, 40, 40, dtype=torch.float64); cb.gram_upper(A, G)
    >>> torch.allclose(G.triu(), (A.mT @ A).triu())
    True
"""

from __future__ import annotations

import torch

from adaptqr.paths.kernels.cholqr_leaf import LEAF, LOG2_LEAF, chol_leaf_kernel, lu_leaf_kernel

__all__ = ["LEAF", "gram_upper", "chol_inv", "right_upper_mul", "lu_signs", "split_point"]

#: Column blocks of the Gram matrix and of ``A R^-1``: ``k`` blocks cost ``(1 + 1/k) n^3``
#: flops against ``2 n^3`` for the full product, in ``k`` GEMM launches.
TRI_BLOCKS = 4


#: Warps of a leaf program. sm_90 offline (triton 3.6): one warp spills 608 B (Cholesky) and
#: 960 B (LU) of its [32, 32] float64 tiles, two warps 0 / 72 B, four none (196 / 233
#: registers).
LEAF_WARPS = 4


def split_point(w: int) -> int:
    """Where a ``w``-wide block (``w > LEAF``) is halved: the half rounded up to a multiple
    of ``LEAF``, so every leaf but the last is a whole ``LEAF``."""
    h = -(-((w + 1) // 2) // LEAF) * LEAF
    return h if h < w else w - LEAF


def _strides(X: torch.Tensor) -> tuple[int, int]:
    sr, sc = X.stride(-2), X.stride(-1)
    if X.stride(0) != X.shape[-1] * X.shape[-2] or min(sr, sc) != 1:
        raise ValueError(f"cholqr blocks: need dense (B, n, n) matrices with a unit row or column "
                         f"stride, got shape {tuple(X.shape)} strides {X.stride()}")
    return sr, sc


def _blocks(n: int, k: int) -> list[tuple[int, int]]:
    step = -(-(-(-n // k)) // LEAF) * LEAF  # ceil(n / k), rounded up to a multiple of LEAF
    return [(c, min(c + step, n)) for c in range(0, n, step)]


def gram_upper(A: torch.Tensor, G: torch.Tensor, k: int = TRI_BLOCKS) -> None:
    """``G[:, r0:r1, r0:] = A[:, :, r0:r1]^T A[:, :, r0:]`` for ``k`` row blocks: the upper
    block triangle of ``A^T A`` (``A`` ``(B, m, n)``, ``G`` ``(B, n, n)``, float64)."""
    n = A.shape[-1]
    for r0, r1 in _blocks(n, k):
        G[:, r0:r1, r0:].baddbmm_(A[:, :, r0:r1].mT, A[:, :, r0:], beta=0.0)


def right_upper_mul(A: torch.Tensor, U: torch.Tensor, k: int = TRI_BLOCKS) -> None:
    """``A <- A U`` in place for upper triangular ``U`` (``(B, m, n)``, ``(B, n, n)``):
    column block ``j`` reads columns ``< end_j`` only, so blocks go last to first."""
    n = A.shape[-1]
    for c0, c1 in reversed(_blocks(n, k)):
        A[:, :, c0:c1].copy_(torch.bmm(A[:, :, :c1], U[:, :c1, c0:c1]))


def chol_inv(G: torch.Tensor, R: torch.Tensor, Ri: torch.Tensor, gref: torch.Tensor,
             bad: torch.Tensor, c0: int = 0, c1: int | None = None) -> None:
    """Upper ``R`` (``G = R^T R``) and ``R^-1`` of the block ``[c0, c1)`` of ``G``.

    ``G``: ``(B, n, n)`` float64 (any layout :func:`_strides` takes; ``R``, ``Ri`` alike),
    its upper triangle read (the rest may hold anything) and its diagonal blocks
    overwritten by Schur complements; ``R``, ``Ri``: zero-filled ``(B, n, n)`` outputs (the
    same strides as ``G``); ``gref``: ``(B, n)`` the original Gram diagonal (breakdown test);
    ``bad``: ``(B,)`` int32, set to 1 where a pivot breaks down (``R`` is then garbage).
    """
    n = G.shape[-1]
    c1 = n if c1 is None else c1
    w = c1 - c0
    if w <= LEAF:
        sr, sc = _strides(G)
        chol_leaf_kernel[(G.shape[0],)](G, R, Ri, gref, bad, c0 * (sr + sc), sr, sc, n, c0, w,
                                        NB=LEAF, LOG2NB=LOG2_LEAF, num_warps=LEAF_WARPS)
        return
    h = c0 + split_point(w)
    chol_inv(G, R, Ri, gref, bad, c0, h)
    R11i = Ri[:, c0:h, c0:h]
    R12 = R[:, c0:h, h:c1]
    R12.baddbmm_(R11i.mT, G[:, c0:h, h:c1], beta=0.0)
    G[:, h:c1, h:c1].baddbmm_(R12.mT, R12, alpha=-1.0)
    chol_inv(G, R, Ri, gref, bad, h, c1)
    Ri[:, c0:h, h:c1].baddbmm_(torch.bmm(R11i, R12), Ri[:, h:c1, h:c1], beta=0.0, alpha=-1.0)


def lu_signs(M: torch.Tensor, LI: torch.Tensor, UI: torch.Tensor, S: torch.Tensor,
             last: int = -1, c0: int = 0, c1: int | None = None, need_inv: bool = False) -> None:
    """``M - S = L U`` (unpivoted; ``S`` diagonal, ``S_ii = -sign`` of the pivot before the
    shift, so ``|U_ii| >= 1``) on the block ``[c0, c1)``, in place.

    ``M``: ``(B, n, n)`` float64: ``L`` (unit, strictly lower) and ``U`` replace it; ``S``:
    ``(B, n)`` float64, +-1; ``LI``, ``UI``: workspaces of ``M``'s strides for the inverses
    of the diagonal blocks; ``last``: the column that is
    geqrf's no-reflector exception (a square matrix's last) or -1.
    """
    n = M.shape[-1]
    c1 = n if c1 is None else c1
    w = c1 - c0
    if w <= LEAF:
        sr, sc = _strides(M)
        lu_leaf_kernel[(M.shape[0],)](M, LI, UI, S, c0 * (sr + sc), sr, sc, n, c0, w,
                                      last - c0 if c0 <= last < c1 else -1, NB=LEAF,
                                      LOG2NB=LOG2_LEAF, NEED_INV=need_inv, num_warps=LEAF_WARPS)
        return
    h = c0 + split_point(w)
    lu_signs(M, LI, UI, S, last, c0, h, True)
    L11i, U11i = LI[:, c0:h, c0:h], UI[:, c0:h, c0:h]
    L21, U12 = M[:, h:c1, c0:h], M[:, c0:h, h:c1]
    L21.copy_(torch.bmm(L21, U11i))
    U12.copy_(torch.bmm(L11i, U12))
    M[:, h:c1, h:c1].baddbmm_(L21, U12, alpha=-1.0)
    lu_signs(M, LI, UI, S, last, h, c1, need_inv)
    if need_inv:
        L22i, U22i = LI[:, h:c1, h:c1], UI[:, h:c1, h:c1]
        LI[:, h:c1, c0:h].baddbmm_(torch.bmm(L22i, L21), L11i, beta=0.0, alpha=-1.0)
        UI[:, c0:h, h:c1].baddbmm_(torch.bmm(U11i, U12), U22i, beta=0.0, alpha=-1.0)
