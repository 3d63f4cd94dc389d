"""The dispatcher's probe: per-matrix routes and ``n_active`` in two launches.

:func:`route` is what a routed plan runs before its path on the column-major ``H``
(``(B, m, n)``, holding the input). It returns the same routes and ``n_active`` as
``classify(probe(H))`` but computes only the column features routing needs (no row norms)
and fuses the classifier into one kernel (:mod:`adaptqr.detectors.kernels.route_kernel`), so
a 40x176 batch pays two launches instead of some forty. :func:`adaptqr.detectors.probe`
keeps the full feature set for ``explain`` and future routes.

Example::

    >>> import torch
    >>> from adaptqr.detectors import route
    >>> A = torch.randn(3, 8, 8)
    >>> A[0] = torch.triu(A[0]); A[1, :, 6:] = 0
    >>> routes, features = route(A.mT.contiguous().mT)
    >>> routes.tolist(), features["n_active"].tolist()
    ([2, 1, 0], [0, 6, 8])
"""

from __future__ import annotations

import torch

from .classify import classify, route_codes, tail_bound_scale
from .probe import BLOCK_M, BLOCK_N, BLOCK_N_SMALL, MIN_PROGRAMS, _check, probe, use_triton
# Columns per step of the one-program-per-matrix classifier: n = 4096 takes 16 steps, and a
# [256] int/float vector is a few registers per thread.
ROUTE_BLOCK_N = 256


def route(H: torch.Tensor, *, backend: str = "auto") -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``(routes, {"n_active": ...})`` for ``H`` ``(B, m, n)``: ``(B,)`` int32 each, on H's device.

    ``backend``: ``"auto"`` (Triton on CUDA float16/bfloat16/float32, else torch ops),
    ``"triton"`` (forced; runs on CPU tensors under ``TRITON_INTERPRET=1``) or ``"torch"``
    (``classify(probe(H))``). No host synchronization.
    """
    _check(H)
    B, m, n = H.shape
    if not use_triton(H, backend, "route probe") or B * m * n == 0:
        f = probe(H, backend="torch" if backend == "torch" else "auto")
        return classify(f), {"n_active": f["n_active"]}
    return _route_triton(H)


def _route_triton(H: torch.Tensor):
    import triton

    from .kernels.probe_kernel import probe_columns_kernel
    from .kernels.route_kernel import route_kernel

    B, m, n = H.shape
    dev = H.device
    block_n = BLOCK_N if B * triton.cdiv(n, BLOCK_N) >= MIN_PROGRAMS else BLOCK_N_SMALL
    T = triton.cdiv(n, block_n)
    cols = torch.empty((3, B, n), dtype=torch.float32, device=dev)  # n1, n2, max abs
    last = torch.empty((B, n), dtype=torch.int32, device=dev)
    bad = torch.empty((B, n), dtype=torch.int8, device=dev)
    sb, sr, sc = H.stride()
    # The row-partial pointers (cols[2] passed as a stand-in) are never touched with ROWS=False.
    probe_columns_kernel[(B, T)](
        H, m, n, sb, sr, sc, cols[0], cols[1], cols[2], last, bad, cols[2], cols[2], T,
        BLOCK_N=block_n, BLOCK_M=BLOCK_M, ROWS=False,
    )
    n_active = torch.empty((B,), dtype=torch.int32, device=dev)
    routes = torch.empty((B,), dtype=torch.int32, device=dev)
    codes = route_codes()
    route_kernel[(B,)](
        cols[0], cols[1], last, bad, n_active, routes, n, min(m, n), tail_bound_scale(m, n),
        CODE_DENSE=codes["dense"], CODE_LOWRANK=codes["lowrank"], CODE_UPPER=codes["upper"],
        BLOCK_N=ROUTE_BLOCK_N,
    )
    return routes, {"n_active": n_active}
