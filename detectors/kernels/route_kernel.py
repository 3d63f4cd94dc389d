"""Triton kernel: per-matrix route and ``n_active`` from the per-column probe features.

``route_kernel``: grid ``(B,)``; program ``b`` walks the ``n`` columns of matrix ``b`` twice in
blocks of ``BLOCK_N`` (``||A||_1`` first, then the negligible suffix) and writes
``n_active[b]`` and ``routes[b]``. It is :func:`adaptqr.detectors.classify.active_columns`
and :func:`adaptqr.detectors.classify.classify` fused into one launch: in torch ops they are
some thirty tiny kernels, several microseconds each on the GPU even inside a CUDA graph,
which is a fifth of a 40x176 factorization.

Inputs ``(B, n)`` contiguous: ``n1`` and ``n2`` (float32 column 1- and 2-norms over the
finite entries), ``last`` (int32 last nonzero row, -1 if none), ``bad`` (int8, the column
holds a NaN or Inf). ``bound_scale`` is ``TAIL_BUDGET * eps32 * n / sqrt(m)``.
"""

import triton
import triton.language as tl


@triton.jit
def route_kernel(
    n1_ptr, n2_ptr, last_ptr, bad_ptr,   # (B, n) contiguous
    n_active_ptr, routes_ptr,            # (B,) int32
    n, k, bound_scale,
    CODE_DENSE: tl.constexpr, CODE_LOWRANK: tl.constexpr, CODE_UPPER: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    b = tl.program_id(0)
    base = b.to(tl.int64) * n
    offs = tl.arange(0, BLOCK_N)

    norm1 = tl.zeros((BLOCK_N,), dtype=tl.float32)
    any_bad = tl.zeros((BLOCK_N,), dtype=tl.int32)
    below = tl.zeros((BLOCK_N,), dtype=tl.int32)  # columns j < k with a nonzero below row j
    for j0 in range(0, n, BLOCK_N):
        cols = j0 + offs
        cm = cols < n
        norm1 = tl.maximum(norm1, tl.load(n1_ptr + base + cols, mask=cm, other=0.0))
        any_bad = tl.maximum(any_bad, tl.load(bad_ptr + base + cols, mask=cm, other=0).to(tl.int32))
        last = tl.load(last_ptr + base + cols, mask=cm, other=-1)
        below = tl.maximum(below, ((last > cols) & (cols < k)).to(tl.int32))
    bound = tl.max(norm1, axis=0) * bound_scale
    # A bound that overflowed (||A||_1 past float32's range) proves nothing negligible:
    # -1 keeps every column (norms are >= 0).
    bound = tl.where(bound == float("inf"), -1.0, bound)

    last_kept = tl.zeros((BLOCK_N,), dtype=tl.int32)
    for j0 in range(0, n, BLOCK_N):
        cols = j0 + offs
        cm = cols < n
        n2 = tl.load(n2_ptr + base + cols, mask=cm, other=0.0)
        keep = cm & (n2 > bound)
        last_kept = tl.maximum(last_kept, tl.where(keep, cols + 1, 0))

    bad_max = tl.max(any_bad, axis=0)
    nonfinite = bad_max > 0
    finite = bad_max == 0
    upper = tl.max(below, axis=0) == 0
    n_act = tl.minimum(tl.max(last_kept, axis=0), k)
    n_act = tl.where(upper, 0, n_act)
    n_act = tl.where(nonfinite, k, n_act)
    route = tl.where(n_act < k, CODE_LOWRANK, CODE_DENSE)
    route = tl.where(upper & finite, CODE_UPPER, route)
    tl.store(n_active_ptr + b, n_act)
    tl.store(routes_ptr + b, route)
