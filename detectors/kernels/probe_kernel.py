"""Triton kernels of the one-pass probe (launched by :mod:`adaptqr.detectors.probe`).

``probe_columns_kernel``: grid ``(B, cdiv(n, BLOCK_N))``; program ``(b, t)`` reads columns
``t*BLOCK_N ..`` of matrix ``b`` once, top to bottom in chunks of ``BLOCK_M`` rows, and writes

- per column ``(B, n)``: 1-norm, 2-norm, max abs (all over the finite entries), the last
  row holding a nonzero (-1 if none), and a non-finite flag;
- per (matrix, tile, row) ``(B, T, m)``: the row's max abs over this tile's columns and the
  sum of squares of the row's entries divided by that max (a locally scaled partial).

``ROWS=False`` skips the row partials (the routing probe needs column features only).

``combine_rows_kernel``: grid ``(B, cdiv(m, BLOCK_M))``; merges the ``T`` scaled partials of
each row into its 2-norm ``(B, m)``.

Why scaled sums: a plain sum of squares overflows float32 for entries of 1e20 and
underflows to 0 for entries of 1e-20; dividing by a running max (rescaling the running sum
when the max grows, as LAPACK's dnrm2 / an online softmax does) keeps every term in [0, 1].

Element ``(b, i, j)`` of H is at ``b*stride_b + i*stride_r + j*stride_c`` (column-major H
has ``stride_r == 1``, which Triton specializes on, so column chunks load contiguously).
"""

import triton
import triton.language as tl

from adaptqr.paths.kernels.panel import range_scale


@triton.jit
def probe_columns_kernel(
    H_ptr, m, n, stride_b, stride_r, stride_c,
    n1_ptr, n2_ptr, mx_ptr, last_ptr, bad_ptr,  # (B, n) contiguous
    rmax_ptr, rss_ptr,  # (B, T, m) contiguous
    T,
    BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr, ROWS: tl.constexpr = True,
):
    b = tl.program_id(0)
    t = tl.program_id(1)
    cols = t * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < n
    base = H_ptr + b.to(tl.int64) * stride_b
    col_off = cols.to(tl.int64) * stride_c

    run_max = tl.zeros((BLOCK_N,), dtype=tl.float32)
    run_ss = tl.zeros((BLOCK_N,), dtype=tl.float32)
    n1 = tl.zeros((BLOCK_N,), dtype=tl.float32)
    last = tl.full((BLOCK_N,), -1, dtype=tl.int32)
    bad = tl.zeros((BLOCK_N,), dtype=tl.int32)
    part_base = (b.to(tl.int64) * T + t) * m

    for i0 in range(0, m, BLOCK_M):
        rows = i0 + tl.arange(0, BLOCK_M)
        rmask = rows < m
        mask = cmask[:, None] & rmask[None, :]
        x = tl.load(base + col_off[:, None] + rows[None, :].to(tl.int64) * stride_r,
                    mask=mask, other=0.0).to(tl.float32)
        a = tl.abs(x)
        nonfinite = (x != x) | (a == float("inf"))
        bad = tl.maximum(bad, tl.max(nonfinite.to(tl.int32), axis=1))
        # Norms are of the finite entries; the launcher turns a flagged column's norms to NaN.
        a = tl.where(nonfinite, 0.0, a)
        n1 += tl.sum(a, axis=1)

        chunk_max = tl.max(a, axis=1)
        new_max = tl.maximum(run_max, chunk_max)
        # Ratios to the running max through a power of two (no subnormal divisor).
        q = range_scale(new_max)
        inv = 1.0 / (tl.where(new_max > 0.0, new_max, 1.0) * q)
        shrink = (run_max * q) * inv
        y = (a * q[:, None]) * inv[:, None]
        run_ss = run_ss * shrink * shrink + tl.sum(y * y, axis=1)
        run_max = new_max

        nz_row = tl.where(x != 0.0, rows[None, :], -1)
        last = tl.maximum(last, tl.max(nz_row, axis=1))

        if ROWS:
            # This tile's share of each row norm, scaled by its own max (exact, no rescaling).
            row_max = tl.max(a, axis=0)
            row_safe = tl.where(row_max > 0.0, row_max, 1.0)
            z = a / row_safe[None, :]
            row_ss = tl.sum(z * z, axis=0)
            tl.store(rmax_ptr + part_base + rows, row_max, mask=rmask)
            tl.store(rss_ptr + part_base + rows, row_ss, mask=rmask)

    out = b.to(tl.int64) * n + cols
    tl.store(n1_ptr + out, n1, mask=cmask)
    tl.store(n2_ptr + out, run_max * tl.sqrt(run_ss), mask=cmask)
    tl.store(mx_ptr + out, run_max, mask=cmask)
    tl.store(last_ptr + out, last, mask=cmask)
    tl.store(bad_ptr + out, bad.to(tl.int8), mask=cmask)


@triton.jit
def combine_rows_kernel(
    rmax_ptr, rss_ptr,  # (B, T, m) contiguous
    out_ptr,  # (B, m) contiguous
    m, T,
    BLOCK_M: tl.constexpr,
):
    b = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < m
    base = b.to(tl.int64) * T * m
    # Same online rescaling as for columns, now across the T tiles.
    run_max = tl.zeros((BLOCK_M,), dtype=tl.float32)
    run_ss = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for t in range(0, T):
        pm = tl.load(rmax_ptr + base + t * m + rows, mask=rmask, other=0.0)
        ps = tl.load(rss_ptr + base + t * m + rows, mask=rmask, other=0.0)
        new_max = tl.maximum(run_max, pm)
        q = range_scale(new_max)
        inv = 1.0 / (tl.where(new_max > 0.0, new_max, 1.0) * q)
        r_old = (run_max * q) * inv
        r_new = (pm * q) * inv
        run_ss = run_ss * r_old * r_old + ps * r_new * r_new
        run_max = new_max
    tl.store(out_ptr + b.to(tl.int64) * m + rows, run_max * tl.sqrt(run_ss), mask=rmask)
