"""The ``small`` path: geqrf of small CUDA float32 matrices in one CUDA C launch on the
caller's tensor (EXPERIMENTS.md H37).

For ``m <= 64`` rows and ``n <= 64`` columns (:mod:`~adaptqr.paths.kernels.geqrf_small_cuda`:
one CTA a matrix, a warp a pair of columns, LAPACK's column steps), tall, square or wide.
Such a call is bound by the host: the householder path copies the input into geqrf's layout
and replays a CUDA graph; this path allocates the outputs and makes one cupy launch that
reads the input through its strides (``Path.direct``). It is not ``capturable``: the graph
cache would add the copy and the replay back. Inside a capture of the caller's (a user's
CUDA graph, torch.compile's "reduce-overhead") its launch is captured there, as any kernel.

Not routed: each matrix is factored in full, as LAPACK does (a rank-deficient matrix's
later reflectors come out of its own column steps).

The plan takes it by itself where it was measured faster than householder (:func:`prefers`:
few matrices of few columns, where a call is bound by the host); named (``path="small"``,
``ADAPTQR_PATH=small``), it takes any input it supports.

Example::

    >>> import torch, adaptqr
    >>> if torch.cuda.is_available():  # (and cupy)
    ...     a, tau = adaptqr.geqrf(torch.randn(20, 32, 32, device="cuda"), path="small")
"""

from __future__ import annotations

import math

import torch

from adaptqr.layout import geqrf_outputs
from adaptqr.paths.kernels import geqrf_small_cuda
from adaptqr.registry import ALL_CLASSES, InputSpec, Path

NAME = "small"
#: Above householder's (100): within :func:`prefers`' bounds the plan takes it.
PRIORITY = 110
#: The automatic plan's bounds (:func:`prefers`), where one launch beat householder's graph
#: replay on the H100 (EXPERIMENTS.md H37, H40; ms, householder -> small): run 0422 of 12-06,
#: 20x32 0.045 -> 0.028, 32x32 0.036 -> 0.027, 64x16 0.051 -> 0.042; run 0447, 0.031 ->
#: 0.025, 0.030 -> 0.027, 0.031 -> 0.022. After H38's shorter column step (run 1702 of
#: 12-06): 40x48 0.041 -> 0.037 (two seeds), 8x48 and 64x48 alike, 40x40 0.075 -> 0.030,
#: 64x40 0.078 -> 0.034, 20x56 0.103 -> 0.045. Past the bounds the kernel's chain of column
#: steps outlasts the host's time it saves: 40x64 0.053 -> 0.054 (1702), 640x32 0.041 ->
#: 0.048 (1700).
AUTO_MAX_BATCH = 64
AUTO_MAX_COLS = 56


def capable(spec: InputSpec) -> str | None:
    """None when this path takes the input ``spec`` describes, else the reason it
    declines."""
    if spec.device_type != "cuda":
        return f"small: needs a CUDA tensor, got device type {spec.device_type!r}"
    if spec.dtype != torch.float32:
        return f"small: needs float32, got {spec.dtype}"
    if not geqrf_small_cuda.takes(spec.m, spec.n):
        return (f"small: needs 1 to {geqrf_small_cuda.MAX_ROWS} rows and 1 to "
                f"{geqrf_small_cuda.MAX_COLS} columns, got {spec.m}x{spec.n}")
    if spec.batch < 1:
        return f"small: needs a non-empty batch, got batch {spec.batch}"
    if not geqrf_small_cuda.available():
        return "small: the CUDA C kernel is not available (no cupy, or it did not compile)"
    return None


def prefers(spec: InputSpec) -> str | None:
    """None where the automatic plan should take this path (a call bound by the host: few
    matrices, few columns), else why not; naming the path takes any input it supports."""
    if spec.batch > AUTO_MAX_BATCH or spec.n > AUTO_MAX_COLS:
        return (f"small: chosen by itself for at most {AUTO_MAX_BATCH} matrices of at most "
                f"{AUTO_MAX_COLS} columns, got {spec.batch} of {spec.m}x{spec.n} (name it to "
                f"take them)")
    return None


def factor_small(H: torch.Tensor, tau: torch.Tensor, info=None) -> None:
    """Factor ``H`` ``(B, m, n)`` (column-major) in place, writing ``tau`` ``(B, min(m, n))``;
    ``info`` is ignored (every matrix is factored in full)."""
    geqrf_small_cuda.launch(H, H, tau)


def direct(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(a, tau)`` in torch.geqrf's layout from the caller's ``A`` ``(*batch, m, n)``, read
    where it lies (a copy only where the batch dims admit no single stride)."""
    a, tau = geqrf_outputs(A)
    if A.dim() == 3:  # geqrf's own outputs are the kernel's (B, m, n) and (B, k) already
        geqrf_small_cuda.launch(A, a, tau)
        return a, tau
    m, n = A.shape[-2], A.shape[-1]
    B, k = math.prod(A.shape[:-2]), min(m, n)
    geqrf_small_cuda.launch(A.reshape(B, m, n),  # a view wherever the dims allow it
                            a.as_strided((B, m, n), (m * n, 1, m)), tau.as_strided((B, k), (k, 1)))
    return a, tau


PATH = Path(
    name=NAME,
    impl=factor_small,
    supports=capable,
    classes=ALL_CLASSES,
    priority=PRIORITY,
    direct=direct,
    prefers=prefers,
    description="one CUDA C launch a call for matrices of at most 64 x 64, on the caller's tensor",
)
