"""float32 products from TF32 tensor-core GEMMs in cuBLAS ("tf32x3", EXPERIMENTS.md QF10).

Each float32 operand is split into a head that TF32 holds exactly (sign, exponent and the
top 10 mantissa bits) and the rest: ``a = ah + al``. Then
``a @ b ~ ah @ bh + ah @ bl + al @ bh``: three TF32 products, the dropped ``al @ bl`` and
TF32's truncation of the tails are ~2^-22 of the product, float32's level. The Triton
kernels do the same inside their tiles (``input_precision="tf32x3"``); here the three
products are cuBLAS calls under ``torch.set_float32_matmul_precision("high")``, so a
GEMM-shaped product runs at TF32's tensor-core rate rather than float32's.

Batched operands ``(..., n, k) @ (..., k, p)``, float32 (3-D for :func:`sub_matmul_`).
Off CUDA, TF32 does not apply and the three products are plain float32 ones (the tests
check the split there).

Example::

    >>> import torch
    >>> from adaptqr import tf32x3
    >>> a, b = torch.randn(2, 8, 5), torch.randn(2, 5, 3)
    >>> torch.allclose(tf32x3.matmul(a, b), a @ b, atol=1e-5)
    True
"""

from __future__ import annotations

import contextlib

import torch

#: The int32 mask that keeps a float32's sign, exponent and top 10 mantissa bits: the
#: value TF32 holds exactly (its 13 low mantissa bits cleared).
TF32_HEAD_MASK = -(1 << 13)


def split(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(head, tail)`` of float32 ``x`` (any shape): ``head`` exact in TF32, and
    ``head + tail == x`` exactly (the tail is the cleared bits, itself a float32).

    >>> import torch
    >>> x = torch.tensor([1.0 + 2.0 ** -20, -3.0])
    >>> h, t = split(x)
    >>> h.tolist(), t.tolist()
    ([1.0, -3.0], [9.5367431640625e-07, 0.0])
    """
    head = (x.contiguous().view(torch.int32) & TF32_HEAD_MASK).view(torch.float32)
    return head, x - head


@contextlib.contextmanager
def matmul_precision(mode: str):
    """``torch.set_float32_matmul_precision(mode)`` for the block, whatever the caller set;
    the caller's setting restored after."""
    was = torch.get_float32_matmul_precision()
    if was == mode:
        yield
        return
    torch.set_float32_matmul_precision(mode)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(was)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for ``a`` ``(..., n, k)`` and ``b`` ``(..., k, p)`` in tf32x3: two cuBLAS
    products, ``ah @ [bh | bl]`` and ``al @ bh`` (``a``, the larger operand where it is
    used, is split once and read twice). Returns a new ``(..., n, p)`` tensor."""
    ah, al = split(a)
    bh, bl = split(b)
    p = b.shape[-1]
    with matmul_precision("high"):
        both = ah @ torch.cat([bh, bl], dim=-1)
        out = both[..., :p] + both[..., p:]
        out += al @ bh
    return out


def sub_matmul_(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``c -= a @ b`` in place, in tf32x3, for ``c`` ``(B, n, p)``, ``a`` ``(B, n, k)``,
    ``b`` ``(B, k, p)`` with small ``k``: one cuBLAS product of inner size ``3k``,
    ``[ah ah al] @ [bh; bl; bh]`` (the small operands are concatenated; ``c`` is read and
    written once). Returns ``c``."""
    ah, al = split(a)
    bh, bl = split(b)
    with matmul_precision("high"):
        c.baddbmm_(torch.cat([ah, ah, al], dim=-1), torch.cat([bh, bl, bh], dim=-2), alpha=-1.0)
    return c
