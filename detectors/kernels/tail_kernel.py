"""Triton kernel of :func:`adaptqr.detectors.finish_tail` (launched from detectors/tail.py).

Grid ``(B, cdiv(k, BLOCK_N))`` with ``k = min(m, n)``: program ``(b, t)`` owns columns
``t*BLOCK_N ..`` of matrix ``b``. For each owned column ``j >= n_active[b]`` it writes
``tau[b, j] = 0`` and zeros rows ``i > j`` of column ``j``, and every row of a column
``n_kept[b] <= j < n_nonzero[b]`` (the dropped tail). Columns from ``n_nonzero[b]`` on are
exactly zero already: only their tau is written. Nothing is read but the three counts; a
tile entirely below ``n_active[b]`` writes nothing, so a dense matrix costs three loads.
Columns ``j >= k`` have no rows below the diagonal (``j >= m``) and no tau.

Element ``(b, i, j)`` of H is at ``b*stride_b + i*stride_r + j*stride_c``.
"""

import triton
import triton.language as tl


@triton.jit
def finish_tail_kernel(
    H_ptr, tau_ptr, nact_ptr, nkept_ptr, nnz_ptr,
    m, k, stride_b, stride_r, stride_c, tau_stride_b, tau_stride_c,
    BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr,
):
    b = tl.program_id(0)
    j0 = tl.program_id(1) * BLOCK_N
    n_act = tl.load(nact_ptr + b)
    n_kept = tl.load(nkept_ptr + b)
    n_nz = tl.load(nnz_ptr + b)
    if j0 + BLOCK_N > tl.minimum(n_act, n_kept):
        cols = j0 + tl.arange(0, BLOCK_N)
        tau_off = b.to(tl.int64) * tau_stride_b + cols.to(tl.int64) * tau_stride_c
        tl.store(tau_ptr + tau_off, tl.zeros((BLOCK_N,), dtype=tau_ptr.dtype.element_ty),
                 mask=(cols < k) & (cols >= n_act))
        cmask = (cols < k) & (cols < n_nz) & ((cols >= n_act) | (cols >= n_kept))
        whole = cols >= n_kept
        base = H_ptr + b.to(tl.int64) * stride_b
        col_off = cols.to(tl.int64) * stride_c
        zero = tl.zeros((BLOCK_N, BLOCK_M), dtype=H_ptr.dtype.element_ty)
        # Rows <= j0 hold no strictly-lower entry of any owned column: only a dropped
        # column is written there.
        start = tl.where(j0 + BLOCK_N > n_kept, 0, j0 + 1)
        for i0 in range(start, m, BLOCK_M):
            rows = i0 + tl.arange(0, BLOCK_M)
            keep_rows = (rows[None, :] > cols[:, None]) | whole[:, None]
            mask = cmask[:, None] & (rows[None, :] < m) & keep_rows
            tl.store(base + col_off[:, None] + rows[None, :].to(tl.int64) * stride_r, zero, mask=mask)
