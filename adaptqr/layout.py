"""Load a batch into torch.geqrf's output layout (each matrix column-major).

``load_column_major(A, a)`` copies ``A`` (``(*batch, m, n)``, any strides) into ``a`` (same
shape, each matrix column-major, batches contiguous: torch.geqrf's ``a``). Large row-major
CUDA inputs go through :func:`~adaptqr.paths.kernels.transpose.column_major_copy_kernel`;
everything else through ``Tensor.copy_``.

Example (CPU: ``Tensor.copy_``)::

    >>> import torch
    >>> from adaptqr.layout import load_column_major
    >>> A = torch.randn(2, 3, 4)
    >>> a = torch.empty(2, 4, 3).mT
    >>> load_column_major(A, a) is a, torch.equal(a, A)
    (True, True)
"""

from __future__ import annotations

import functools

import torch

#: Inputs of at least this many bytes take the Triton copy. Below it, a launch through
#: Triton's Python launcher (tens of microseconds of host time) costs more than the copy
#: saves where the host is the bound: 20x32 (80 KB) at a 0 MiB bound 0.0366 ms against
#: 0.0285 (H100 run 2342, EXPERIMENTS.md X5). From 4 MiB up the GPU work of a call hides the
#: launch and the copy's own speed wins: at 4 MiB against 32, 40x176 (5 MB) -5.4 %, 40x352
#: (20 MB) -7.7 %, 200x128 -8.4 %, 100x256 -5.7 %, 30x512 mixed -7.8 % (same run).
#: torch's strided copy: 640x512 (671 MB) 1.14 ms (torch.profiler, EXPERIMENTS.md X1).
TRITON_COPY_MIN_BYTES = 4 << 20
#: Tile of a program: 64 x 64 float32 is 16 KiB through shared memory.
TILE = 64
#: Dtypes the kernel copies (Triton has no complex types).
_TRITON_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def load_column_major(A: torch.Tensor, a: torch.Tensor, *, backend: str = "auto") -> torch.Tensor:
    """Copy ``A`` into ``a`` (geqrf's layout, see the module docstring); returns ``a``.

    ``backend``: ``"auto"`` (the Triton kernel where it pays, see
    :data:`TRITON_COPY_MIN_BYTES`), ``"triton"`` (whenever the kernel applies: tests run it
    under ``TRITON_INTERPRET=1`` on CPU tensors) or ``"torch"``.
    """
    if backend != "torch" and _triton_applies(A, a, backend == "triton"):
        _launch(A, a)
    else:
        a.copy_(A)
    return a


def _triton_applies(A: torch.Tensor, a: torch.Tensor, forced: bool) -> bool:
    if A.dim() < 2 or A.dtype != a.dtype or A.dtype not in _TRITON_DTYPES or A.numel() == 0:
        return False
    if not forced and (not A.is_cuda or A.numel() * A.element_size() < TRITON_COPY_MIN_BYTES):
        return False
    m, n = A.shape[-2], A.shape[-1]
    # One batch stride, rows with unit steps (a contiguous input; not an expanded or
    # transposed view), and in-matrix offsets within int32.
    return (A.is_contiguous() and a.mT.is_contiguous() and m * n < 2**31 and A.device == a.device)


def _launch(A: torch.Tensor, a: torch.Tensor) -> None:
    import triton

    from adaptqr.paths.kernels.transpose import column_major_copy_kernel

    m, n = A.shape[-2], A.shape[-1]
    B = A.numel() // (m * n)
    tiles_n = triton.cdiv(n, TILE)
    grid = (B * triton.cdiv(m, TILE) * tiles_n,)
    column_major_copy_kernel[grid](A, a, m, n, m * n, n, tiles_n, BM=TILE, BN=TILE, num_warps=4)


def geqrf_outputs(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Uninitialized ``(a, tau)`` for ``A`` ``(*batch, m, n)`` in torch.geqrf's layout: ``a``
    ``(*batch, m, n)`` with each matrix column-major and the batches contiguous, ``tau``
    ``(*batch, min(m, n))`` contiguous; ``A``'s dtype and device.

    >>> a, tau = geqrf_outputs(torch.empty(2, 3, 5, 4))
    >>> a.stride(), tau.shape
    ((60, 20, 1, 5), torch.Size([2, 3, 4]))
    """
    shape = tuple(A.shape)
    try:
        a_shape, a_strides, tau_shape = _geqrf_layout(shape)
    except TypeError:  # symbolic sizes (a fake tensor under dynamic shapes) do not hash
        a_shape, a_strides, tau_shape = _geqrf_layout.__wrapped__(shape)
    a = torch.empty_strided(a_shape, a_strides, dtype=A.dtype, device=A.device)
    tau = torch.empty(tau_shape, dtype=A.dtype, device=A.device)
    return a, tau


@functools.lru_cache(maxsize=256)
def _geqrf_layout(shape: tuple) -> tuple:
    """``(a's shape, a's strides, tau's shape)`` of torch.geqrf for an input of ``shape``
    (cached: a small call's host time is the point of some paths, EXPERIMENTS.md H37)."""
    batch, (m, n) = shape[:-2], shape[-2:]
    # The strides of a contiguous (*, n, m) tensor, last two swapped: each matrix column-major,
    # with the same strides (size-1 and size-0 dims included) as torch.geqrf's `a`. Allocated
    # with those strides rather than as `.mT` of a fresh tensor, so `a` is no view: a view
    # returned from the autograd Function would forbid in-place ops on the result.
    shape_t = batch + (n, m)
    strides = [0] * len(shape_t)
    acc = 1
    for i in reversed(range(len(shape_t))):
        strides[i] = acc
        acc *= max(shape_t[i], 1)
    strides[-2], strides[-1] = strides[-1], strides[-2]
    return batch + (m, n), tuple(strides), batch + (min(m, n),)


def aligned(m: int, align: int) -> int:
    """``m`` rounded up to a multiple of ``align`` (``m`` itself for ``align`` 0).

    >>> aligned(3500, 16), aligned(3504, 16), aligned(3500, 0)
    (3504, 3504, 3500)
    """
    return -(-m // align) * align if align else m


def rows_padded(Ht: torch.Tensor, mp: int) -> torch.Tensor:
    """A ``(B, n, mp)`` contiguous copy of ``Ht`` ``(B, n, m)`` (column-major matrices seen
    transposed) with zeros in rows ``m`` to ``mp`` of every matrix: the working copy on
    which the kernels' row stride is a multiple of 16 (docs/EXPERIMENTS.md A1).

    >>> Ht = torch.ones(2, 3, 5)
    >>> P = rows_padded(Ht, 8)
    >>> P.shape, bool(P[:, :, :5].eq(1).all() and P[:, :, 5:].eq(0).all())
    (torch.Size([2, 3, 8]), True)
    """
    B, n, m = Ht.shape
    P = Ht.new_empty(B, n, mp)
    P[:, :, m:].zero_()
    P[:, :, :m].copy_(Ht)
    return P
