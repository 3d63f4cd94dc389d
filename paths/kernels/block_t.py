"""The compact-WY ``T`` of ``Q`` consecutive panels, merged from the panels' own ``T``.

Storage as in :mod:`adaptqr.paths.kernels.trailing`: ``Ht`` ``(B, n, m)`` contiguous, ``TW``
``(B, n_tw, NB, NB)`` (panel p's ``T`` at ``TW[b, p]``), ``NA`` ``(B,)`` int32 ``n_active``.
Output ``TB`` ``(B, n_g, Q NB, Q NB)``: block g's ``T`` (the panels ``g Q .. g Q + Q - 1``,
columns ``[k0, k0 + Q NB)``, ``k0 = g Q NB``) at ``TB[b, g]``, row-major.

With ``S_ij = V_i^T V_j`` (the panels' reflectors, unit diagonal, masked past ``n_active``),
larft's block recurrence gives the strictly upper blocks column block by column block::

    T_ij = -(sum_{q = i}^{j - 1} T_iq S_qj) T_jj        (i < j)

so the trailing kernels can apply the ``Q`` panels as one block of ``Q NB`` reflectors (one
pass over the trailing matrix instead of ``Q``; EXPERIMENTS.md B1). Two launches a block:
:func:`block_s_kernel` sums the couplings over row slices (``S`` ``(B, 6, NB, NB)``, through
atomics), :func:`block_t_kernel` merges, one program a row block. Reflector columns at or
past ``n_active`` (or ``n``) get zero rows and columns: their panels may never have written
their ``T`` slot.

Example: see :func:`adaptqr.paths.householder.factor_householder` (the ``far_panels`` knob).
"""

from __future__ import annotations

import triton
import triton.language as tl

from adaptqr.paths.kernels.panel import program_matrix
from adaptqr.paths.kernels.trailing import _dot, _load_v


@triton.jit
def _diag_t(TW, b, p, n_tw, c0, lim, NB: tl.constexpr):
    """Panel p's ``[NB, NB]`` T (columns from ``c0``), zero where a row or column index is
    at or past ``lim`` and for a panel past the last one."""
    ii = tl.arange(0, NB)
    ok = (c0 + ii) < lim
    keep = ok[:, None] & ok[None, :] & ((tl.zeros((NB, NB), dtype=tl.int32) + p) < n_tw)
    T = tl.load(TW + (b.to(tl.int64) * n_tw + tl.minimum(p, n_tw - 1)) * NB * NB
                + ii[:, None] * NB + ii[None, :], mask=keep, other=0.0)
    return tl.where(keep, T, 0.0)


@triton.jit
def _block_ptrs(TB, b, g, n_g, i, j, NB: tl.constexpr, FB: tl.constexpr):
    """Pointers of the ``[NB, NB]`` block (i, j) of ``TB[b, g]``."""
    ii = tl.arange(0, NB)
    return TB + ((b.to(tl.int64) * n_g + g) * FB + i * NB + ii[:, None]) * FB + j * NB + ii[None, :]


@triton.jit
def _store_block(TB, b, g, n_g, i, j, X, NB: tl.constexpr, FB: tl.constexpr):
    tl.store(_block_ptrs(TB, b, g, n_g, i, j, NB, FB), X)


@triton.jit
def _load_block(TB, b, g, n_g, i, j, NB: tl.constexpr, FB: tl.constexpr):
    return tl.load(_block_ptrs(TB, b, g, n_g, i, j, NB, FB))


#: The couplings a block of Q panels needs, in ``S``'s order: (0, 1) for Q = 2; then
#: (0, 2), (0, 3), (1, 2), (1, 3), (2, 3) for Q = 4.
N_COUPLINGS = 6


# S[b] holds N_COUPLINGS (6) blocks of [NB, NB], addressed as 6 "blocks" of a T whose side is
# NB; the kernels spell the 6 out (a constexpr of the launch would be one more
# specialization for nothing).
@triton.jit
def _add_s(S, b, idx, X, NB: tl.constexpr):
    tl.atomic_add(_block_ptrs(S, b, idx, 6, 0, 0, NB, NB), X)


@triton.jit
def _get_s(S, b, idx, NB: tl.constexpr):
    return tl.load(_block_ptrs(S, b, idx, 6, 0, 0, NB, NB))


@triton.jit
def block_s_kernel(Ht, S, C16, SC, NA, k0, m, n, rows_per, HAS_NA: tl.constexpr,
                   NB: tl.constexpr, Q: tl.constexpr, CH: tl.constexpr, PREC: tl.constexpr,
                   WRITE_V16: tl.constexpr = False):
    """Program ``(b, s)`` adds ``V_i^T V_j`` over rows ``[k0 + s rows_per, ...)`` into
    ``S[b]`` (``(B, 6, NB, NB)`` float32, zeroed by the caller; atomics), for the panels of
    the block from column ``k0``. A row split: few large matrices would otherwise sweep
    their rows with one program each (2x4096: 4096 rows a block).

    ``WRITE_V16`` (the FP16 route, EXPERIMENTS.md B2): a matrix with ``SC[b] > 0`` also gets
    its block's V, rounded to float16, in the block's own columns of its C16 copy (free:
    those columns are final in ``Ht``, and C16 is read past the block only), for the far
    update to read instead of converting the float32 V every tile."""
    b, base, na = program_matrix(Ht, NA, m, n, HAS_NA)
    r_lo = k0 + tl.program_id(1) * rows_per
    r_hi = tl.minimum(m, r_lo + rows_per)
    if WRITE_V16:
        if tl.load(SC + b) > 0.0:
            base16 = C16 + b.to(tl.int64) * n * m
            jj = tl.arange(0, NB)
            for r0 in range(r_lo, r_hi, CH):
                r = r0 + tl.arange(0, CH)
                for i in tl.static_range(Q):
                    c = k0 + i * NB + jj
                    V = _load_v(base, k0 + i * NB, r, m, r_hi, na, NB, n - k0 - i * NB)
                    tl.store(base16 + c[:, None] * m + r[None, :], V.to(tl.float16),
                             mask=(c < n)[:, None] & (r < r_hi)[None, :])
    z = tl.zeros((NB, NB), dtype=tl.float32)
    S01 = z
    S02 = z
    S03 = z
    # V_j is zero above row k0 + j NB; two sweeps of at most three sums each (one sweep of
    # six spilled, sm_90 offline).
    for r0 in range(tl.maximum(r_lo, k0 + NB), r_hi, CH):
        r = r0 + tl.arange(0, CH)
        V0 = _load_v(base, k0, r, m, r_hi, na, NB, n - k0)
        S01 += _dot(V0, tl.trans(_load_v(base, k0 + NB, r, m, r_hi, na, NB, n - k0 - NB)), PREC)
        if Q == 4:
            S02 += _dot(V0, tl.trans(_load_v(base, k0 + 2 * NB, r, m, r_hi, na, NB,
                                             n - k0 - 2 * NB)), PREC)
            S03 += _dot(V0, tl.trans(_load_v(base, k0 + 3 * NB, r, m, r_hi, na, NB,
                                             n - k0 - 3 * NB)), PREC)
    _add_s(S, b, 0, S01, NB)
    if Q == 4:
        _add_s(S, b, 1, S02, NB)
        _add_s(S, b, 2, S03, NB)
        S12 = z
        S13 = z
        S23 = z
        for r0 in range(tl.maximum(r_lo, k0 + 2 * NB), r_hi, CH):
            r = r0 + tl.arange(0, CH)
            V1 = _load_v(base, k0 + NB, r, m, r_hi, na, NB, n - k0 - NB)
            V2 = _load_v(base, k0 + 2 * NB, r, m, r_hi, na, NB, n - k0 - 2 * NB)
            V3 = _load_v(base, k0 + 3 * NB, r, m, r_hi, na, NB, n - k0 - 3 * NB)
            S12 += _dot(V1, tl.trans(V2), PREC)
            S13 += _dot(V1, tl.trans(V3), PREC)
            S23 += _dot(V2, tl.trans(V3), PREC)
        _add_s(S, b, 3, S12, NB)
        _add_s(S, b, 4, S13, NB)
        _add_s(S, b, 5, S23, NB)


@triton.jit
def block_t_kernel(TW, S, TB, NA, k0, n, n_tw, n_g, HAS_NA: tl.constexpr,
                   NB: tl.constexpr, Q: tl.constexpr, PREC: tl.constexpr):
    """Row block ``i`` of ``TB[b, k0 // (Q NB)]`` for program ``(b, i)``: the merged T of the
    ``Q`` (2 or 4) panels from column ``k0``, from their own T (``TW``) and the couplings
    ``S`` (:func:`block_s_kernel`), products in PREC. A row block of the recurrence needs
    only its own earlier blocks, so the rows run side by side (row 0 is the longest chain:
    ``Q (Q + 1) / 2 - 1`` products of ``[NB, NB]``) with few tiles live."""
    b = tl.program_id(0)
    i = tl.program_id(1)
    if HAS_NA:
        na = tl.load(NA + b)
    else:
        na = n
    FB: tl.constexpr = Q * NB
    g = k0 // FB
    p0 = k0 // NB
    lim = tl.minimum(na, n)
    z = tl.zeros((NB, NB), dtype=tl.float32)
    _store_block(TB, b, g, n_g, i, i, _diag_t(TW, b, p0 + i, n_tw, k0 + i * NB, lim, NB), NB, FB)
    for j in tl.static_range(0, Q):
        if j < i:
            _store_block(TB, b, g, n_g, i, j, z, NB, FB)
    tl.debug_barrier()
    for j in tl.static_range(1, Q):
        if j > i:
            acc = z
            for q in tl.static_range(0, j):
                if q >= i:
                    # S's order: the pairs (q, j), q < j, row by row (block_s_kernel's).
                    S_qj = _get_s(S, b, q * (Q - 1) - q * (q - 1) // 2 + j - q - 1, NB)
                    acc += _dot(_load_block(TB, b, g, n_g, i, q, NB, FB), S_qj, PREC)
            Tjj = _diag_t(TW, b, p0 + j, n_tw, k0 + j * NB, lim, NB)
            _store_block(TB, b, g, n_g, i, j, -_dot(acc, Tjj, PREC), NB, FB)
            # The next column block reads this one back (the program's own write).
            tl.debug_barrier()
