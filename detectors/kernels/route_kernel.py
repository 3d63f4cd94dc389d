"""Triton kernels of the route probe: column features, then per-matrix route and ``n_active``.

``route_columns_kernel``: grid ``(B, cdiv(n, BLOCK_N))``; program ``(b, t)`` reads its columns
of matrix ``b`` once (with ``COPY``, from the caller's input ``S``, writing them into ``H``
as it goes: the copy into geqrf's layout for free) and writes what routing needs: the 1- and
2-norms over the finite entries, whether a nonzero sits strictly below the diagonal, and a
non-finite flag. Unlike :func:`~adaptqr.detectors.kernels.probe_kernel.probe_columns_kernel` it keeps
per-thread partial sums across row chunks (one reduction at the end, not five a chunk), and
squares entries unscaled; a tile whose column max-abs leaves the range where that is exact
(:data:`SQ_MAX_ABS`, :data:`SQ_MIN_SUM`) is read a second time, scaled by that max.

``route_kernel``: grid ``(B,)``; program ``b`` walks the ``n`` columns of matrix ``b`` twice in
blocks of ``BLOCK_N`` (``||A||_1`` first, then the negligible suffix) and writes
``n_active[b]``, ``routes[b]``, ``n_nonzero[b]`` (one past the last column that is not
exactly zero) and ``n_kept[b]`` (:func:`adaptqr.detectors.classify.kept_columns`). It is
:func:`adaptqr.detectors.classify.active_columns`
and :func:`adaptqr.detectors.classify.classify` fused into one launch: in torch ops they are
some thirty tiny kernels, several microseconds each on the GPU even inside a CUDA graph,
which is a fifth of a 40x176 factorization.

Inputs ``(B, n)`` contiguous: ``n1`` and ``n2`` (float32 column 1- and 2-norms over the
finite entries), ``below`` (int8, a nonzero strictly below the diagonal), ``bad`` (int8, the
column holds a NaN or Inf). ``bound_scale`` is ``TAIL_BUDGET * eps32 * n / sqrt(m)``.
"""

import triton
import triton.language as tl

from adaptqr.paths.kernels.panel import range_scale

#: Unscaled squares are used while a column's max-abs is at most this (m * 1e30 stays finite
#: for m < 3e8) ...
SQ_MAX_ABS = tl.constexpr(1.0e15)
#: ... and its sum of squares is at least m times this: the squares lost to underflow (each
#: below 1.2e-38) are then under 3e-9 of the sum, a twentieth of float32's unit roundoff.
SQ_MIN_SUM = tl.constexpr(4.0e-30)


@triton.jit
def _bit_or(a, b):
    return a | b


@triton.jit
def route_columns_kernel(
    H_ptr, m, n, stride_b, stride_c,           # H (B, m, n) with unit row stride
    n1_ptr, n2_ptr, below_ptr, bad_ptr,        # (B, n) contiguous
    S_ptr, s_b, s_r, s_c,                      # COPY: the source (B, m, n), any strides
    BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr, COPY: tl.constexpr,
):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < n
    dst = H_ptr + b.to(tl.int64) * stride_b + cols.to(tl.int64)[:, None] * stride_c
    if COPY:
        # Read the input and write its tiles into H on the way: the copy into geqrf's
        # layout and the probe share one pass over the batch.
        base = S_ptr + b.to(tl.int64) * s_b + cols.to(tl.int64)[:, None] * s_c
        row_step = s_r
    else:
        base = dst
        row_step = 1
    acc1 = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    accmax = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    flags = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.int32)  # bit 0: non-finite, bit 1: below
    for i0 in range(0, m, BLOCK_M):
        rows = i0 + tl.arange(0, BLOCK_M)
        mask = cmask[:, None] & (rows < m)[None, :]
        x = tl.load(base + rows[None, :] * row_step, mask=mask, other=0.0)
        if COPY:
            tl.store(dst + rows[None, :], x, mask=mask)
        x = x.to(tl.float32)
        a = tl.abs(x)
        finite = a <= 3.4028234663852886e38  # False for NaN and +-Inf
        a = tl.where(finite, a, 0.0)
        acc1 += a
        acc2 += a * a
        accmax = tl.maximum(accmax, a)
        low = (x != 0.0) & (rows[None, :] > cols[:, None])
        flags = flags | tl.where(finite, 0, 1) | tl.where(low, 2, 0)
    n1 = tl.sum(acc1, axis=1)
    ss = tl.sum(acc2, axis=1)
    mx = tl.max(accmax, axis=1)
    fl = tl.reduce(flags, 1, _bit_or)
    exact = (mx <= SQ_MAX_ABS) & ((ss >= m * SQ_MIN_SUM) | (mx == 0.0))
    n2 = tl.sqrt(ss)
    if tl.min(exact.to(tl.int32), axis=0) == 0:
        # Huge or tiny columns in this tile: squares of entries over the column's max, both
        # scaled by a power of two first (no subnormal divisor, no overflowing reciprocal).
        q = range_scale(mx)
        inv = 1.0 / (tl.where(mx > 0.0, mx, 1.0) * q)
        acc2 = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
        for i0 in range(0, m, BLOCK_M):
            rows = i0 + tl.arange(0, BLOCK_M)
            mask = cmask[:, None] & (rows < m)[None, :]
            a = tl.abs(tl.load(base + rows[None, :] * row_step, mask=mask, other=0.0).to(tl.float32))
            y = (tl.where(a <= 3.4028234663852886e38, a, 0.0) * q[:, None]) * inv[:, None]
            acc2 += y * y
        n2 = tl.where(exact, n2, mx * tl.sqrt(tl.sum(acc2, axis=1)))
    out = b.to(tl.int64) * n + cols
    tl.store(n1_ptr + out, n1, mask=cmask)
    tl.store(n2_ptr + out, n2, mask=cmask)
    tl.store(below_ptr + out, ((fl & 2) != 0).to(tl.int8), mask=cmask)
    tl.store(bad_ptr + out, (fl & 1).to(tl.int8), mask=cmask)


@triton.jit
def route_kernel(
    n1_ptr, n2_ptr, below_ptr, bad_ptr,  # (B, n) contiguous
    n_active_ptr, routes_ptr, n_nonzero_ptr, n_kept_ptr,  # (B,) int32
    fp16_ptr,                            # (B,) float32
    exp_ptr,                             # (B,) int32: prescale exponents
    n, k, bound_scale, fp16_coef,
    CODE_DENSE: tl.constexpr, CODE_LOWRANK: tl.constexpr, CODE_UPPER: tl.constexpr,
    BLOCK_N: tl.constexpr, DROP: tl.constexpr, FP16_NB: tl.constexpr, FP16_BUDGET: tl.constexpr,
    FP16_TARGET: tl.constexpr, FP16_EXP_RANGE: tl.constexpr, PRESCALE_MIN_EXP: tl.constexpr,
    PRESCALE_MAX_EXP: tl.constexpr, PRESCALE_TARGET_EXP: tl.constexpr, PRESCALE_INF_EXP: tl.constexpr,
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
        low = tl.load(below_ptr + base + cols, mask=cm, other=0).to(tl.int32)
        below = tl.maximum(below, tl.where(cols < k, low, 0))
    bound = tl.max(norm1, axis=0) * bound_scale
    # A bound that overflowed (||A||_1 past float32's range) proves nothing negligible:
    # -1 keeps every column (norms are >= 0).
    bound = tl.where(bound == float("inf"), -1.0, bound)

    last_kept = tl.zeros((BLOCK_N,), dtype=tl.int32)
    last_nz = tl.zeros((BLOCK_N,), dtype=tl.int32)
    weighted = tl.zeros((BLOCK_N,), dtype=tl.float32)  # FP16 estimate (classify.fp16_scales)
    n2max = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for j0 in range(0, n, BLOCK_N):
        cols = j0 + offs
        cm = cols < n
        n2 = tl.load(n2_ptr + base + cols, mask=cm, other=0.0)
        keep = cm & (n2 > bound)
        last_kept = tl.maximum(last_kept, tl.where(keep, cols + 1, 0))
        last_nz = tl.maximum(last_nz, tl.where(cm & (n2 != 0.0), cols + 1, 0))
        weighted = tl.maximum(weighted, tl.sqrt(cols.to(tl.float32) / FP16_NB + 1.0) * n2)
        n2max = tl.maximum(n2max, n2)

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
    # Exactly-zero column suffix (classify.nonzero_columns): none for a non-finite matrix.
    n_nz = tl.where(nonfinite, n, tl.max(last_nz, axis=0))
    tl.store(n_nonzero_ptr + b, n_nz)
    # Zero in the result (classify.kept_columns): the negligible tail of a finite, not upper,
    # square or tall matrix is dropped whole.
    n_kept = n_nz
    if DROP:
        n_kept = tl.where(upper | nonfinite | (n > k), n_nz, tl.minimum(n_nz, n_act))
    tl.store(n_kept_ptr + b, n_kept)
    # Prescale exponent (classify.prescale_exponents): floor(log2) through a power of two
    # for subnormal norms (lg2.approx flushes them) and PRESCALE_INF_EXP for an overflowed one.
    n2m = tl.max(n2max, axis=0)
    tiny = n2m < 8.673617379884035e-19  # 2^-60
    lg = tl.floor(tl.log2(tl.where(tiny, n2m * 1.8446744073709552e19, n2m)))  # 2^64
    lg = (lg - tl.where(tiny, 64.0, 0.0)).to(tl.int32)
    lg = tl.where(n2m == float("inf"), PRESCALE_INF_EXP, lg)
    outside = (n2m > 0.0) & ((lg < PRESCALE_MIN_EXP) | (lg >= PRESCALE_MAX_EXP))
    pexp = tl.where(outside & finite, PRESCALE_TARGET_EXP - lg, 0)
    tl.store(exp_ptr + b, pexp)
    # FP16 storage scale, 0 for the FP32 route (classify.fp16_scales), of the prescaled matrix.
    est = tl.max(weighted, axis=0) * fp16_coef / tl.max(norm1, axis=0)
    f16 = finite & ((route == CODE_DENSE) | (route == CODE_LOWRANK)) & (n_act == n_kept)
    f16 = f16 & (est <= FP16_BUDGET)
    f16 = f16 & (n2m >= tl.exp2(-FP16_EXP_RANGE)) & (n2m <= tl.exp2(FP16_EXP_RANGE))
    p1 = pexp // 2
    n2s = (n2m * tl.exp2(p1.to(tl.float32))) * tl.exp2((pexp - p1).to(tl.float32))
    scale = tl.exp2(tl.floor(tl.log2(FP16_TARGET / tl.maximum(n2s, 1e-30))))
    tl.store(fp16_ptr + b, tl.where(f16, scale, 0.0))
