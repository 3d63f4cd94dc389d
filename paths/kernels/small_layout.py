"""The layout the small CUDA C kernels share (the factorization's, :mod:`.geqrf_small_cuda`,
and Q's, :mod:`.qform_small_cuda`): one CTA a matrix, lane ``l`` of a warp holding rows
``l`` and ``l + 32`` of :data:`COLUMNS_PER_WARP` columns, so that a column's sums are one
butterfly over the warp and a warp's columns' butterflies interleave.

Example::

    >>> rows_of(20), rows_of(33), "#define CPW 2" in LAYOUT_SRC
    (32, 64, True)
"""

from __future__ import annotations

import torch

#: The most rows a matrix may have: two rows a lane.
MAX_ROWS = 64
#: Columns a warp holds; a CTA of at most 32 warps.
COLUMNS_PER_WARP = 2

#: The kernels' layout macros, ahead of their sources (``MR`` from the compile options).
LAYOUT_SRC = f"""
// MR (rows a matrix holds, 32 or 64: MR / 32 a lane) comes from the compile options.
#define RPL (MR / 32)
#define CPW {COLUMNS_PER_WARP}
"""


def rows_of(m: int) -> int:
    """``MR``: the rows a matrix of ``m`` rows is held in, 32 or 64.

    >>> rows_of(20), rows_of(32), rows_of(33), rows_of(64)
    (32, 32, 64, 64)
    """
    if not 0 < m <= MAX_ROWS:
        raise ValueError(f"small CUDA C kernels: {m} rows, 1 to {MAX_ROWS}")
    return 32 if m <= 32 else 64


def check_strides(kernel: str, what: str, x: torch.Tensor, shape: tuple, want: tuple) -> None:
    """Raise unless ``x`` has ``shape`` and the strides ``want`` the kernel writes by, where a
    dim has more than one entry (a size-1 dim's stride is whatever the view that made it
    says; a tensor with no entries is written by nothing).

    >>> check_strides("k", "Q", torch.empty(2, 4, 3).mT, (2, 3, 4), (12, 1, 3))
    """
    if tuple(x.shape) != tuple(shape) or x.numel() and any(
            size > 1 and stride != s for size, stride, s in zip(x.shape, x.stride(), want)):
        raise ValueError(f"{kernel}: {what} must be {tuple(shape)} with strides {tuple(want)}, "
                         f"got {tuple(x.shape)} with strides {x.stride()}")
