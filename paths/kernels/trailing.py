"""Triton trailing update: apply compact-WY panels ``Q_p^T = I - V_p T_p^T V_p^T`` to columns.

Storage as in :mod:`adaptqr.paths.kernels.panel`: ``Ht`` is ``(B, n, m)`` contiguous (row j
of ``Ht[b]`` is column j of matrix b), ``TW`` is ``(B, n_tw, NB, NB)`` holding the panels'
``T`` (panel p starts at column ``p * NB``; its ``T`` is ``TW[b, p]``).

Grid ``(cdiv(c_end - c_start, BN), B)``: program ``(t, b)`` owns the trailing columns
``[c_start + t*BN, ...+BN)`` of matrix b and applies the ``npan`` consecutive panels starting
at column ``k0`` in order. Column tile first, so that a matrix's tiles run side by side and
read its panels' ``V`` from L2 (EXPERIMENTS.md T2); batches past the grid's second axis
(65535) take ``(B, tiles)`` (``TILE_MAJOR`` False). In transposed form, for one panel::

    W  = A^T V        (BN x NB, accumulated over the rows)
    Y  = W T          (BN x NB)
    A^T -= Y V^T

``V`` is read from ``Ht`` (unit diagonal and zeros above built in-kernel; columns of a
panel at or past ``n_active[b]`` are masked to zero, so their garbage never enters).

* ``RESIDENT``: the column tile ``[BN, BM]`` (BM = next pow2 of ``m - k0``) is loaded once,
  all ``npan`` panels are applied in registers, stored once: the trailing matrix moves once
  per group of panels instead of once per panel.
* otherwise: per panel, one pass over row chunks of BM for ``W`` and one to update.

For small batches (too few column tiles to fill the GPU) one panel's update is split over
rows too: :func:`trailing_w_kernel` accumulates ``W`` with atomics over row slices, then
:func:`trailing_u_kernel` applies ``A^T -= (W T) V^T`` over (column tile, row slice).

Issue 8's FP16 route (``F16``, :mod:`adaptqr.paths.kernels.fp16_storage`): a matrix with
``SC[b] > 0`` keeps the trailing columns no panel needs yet in ``C16`` (float16, in units of
``SC[b]``) and takes :func:`_apply_panel_f16` / :func:`_w_rows_f16` / :func:`_u_rows_f16`;
the others the float32 update. ``F16`` says which of the two a launch runs (both, or one
each in two launches). An update of two panels of such a matrix reads its tile once for
both (``PAIR16``, :func:`_apply_pair_f16`); where its programs are few, the same update runs
as two launches, :func:`pair_y_kernel` then :func:`pair_u_kernel` over row slices (N25).

Products in ``PREC`` (:func:`adaptqr.paths.kernels.products._dot`: "ieee", "tf32x3", "tf32"
or "f16x3"), never a global flag.
Per-matrix column features (``NZ``, with ``NA``): a column tile wholly past ``n_kept`` is
skipped (the exactly-zero suffix, which every reflector leaves zero, or a negligible tail
dropped whole that ``finish_tail`` zeros: docs/DETECTORS.md); a tile wholly in the
negligible tail (past ``n_active``) takes ``PREC_TAIL``: those columns' norms are below the
tail bound of docs/DETECTORS.md, so a product error of ``u`` relative to them adds about
``u * TAIL_BUDGET`` to the scaled residual (docs/NUMERICS.md).

Example: see :func:`adaptqr.paths.householder.factor_householder`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from adaptqr.paths.kernels.fp16_storage import (
    F16_NONE,
    F16_ONLY,
    F16_SKIP,
    abs_max,
    dot16,
    hot_mask,
    load_scaled,
    store_scaled,
    y_scale,
    y_scaled,
)
from adaptqr.paths.kernels.panel import program_matrix
from adaptqr.paths.kernels.products import (
    _dot,
    _dot_small,
    dot_halves,
    f16_halves,
    load_halves,
    store_halves,
)


@triton.jit
def y_unit(Y, PREC: tl.constexpr):
    """``(Y / ys, ys)``: for "f16x3", ``ys`` the power of two at or below ``Y``'s largest
    entry (kept within [2^-100, 2^100], so it and its inverse are normal; exact), which puts
    ``Y``, an operand of every row chunk's product, within float16's range whatever ``T``
    holds; else ``ys = 1``. Once a panel and tile, where a tile of ``C`` would be once a
    chunk."""
    if PREC == "f16x3":
        mx = tl.minimum(tl.maximum(abs_max(Y), 7.888609052210118e-31), 1.2676506002282294e30)
        ys = (mx.to(tl.int32, bitcast=True) & 0x7F800000).to(tl.float32, bitcast=True)
        Y = Y * (1.0 / ys)
    else:
        ys = 1.0
    return Y, ys


@triton.jit
def y_back(c, ys, PREC: tl.constexpr):
    """A product of :func:`y_unit`'s ``Y / ys`` times ``ys`` again (nothing to do but for
    "f16x3")."""
    if PREC == "f16x3":
        c = c * ys
    return c


@triton.jit
def _load_v(base, k, r, m, rlim, na, NB: tl.constexpr, pw):
    """V^T rows [NB, len(r)] of the panel at column k: rows r < rlim, unit diagonal."""
    jj = tl.arange(0, NB)
    vcols = k + jj
    keep = (jj < pw) & (vcols < na)
    msk = keep[:, None] & (r < rlim)[None, :]
    Vt = tl.load(base + vcols[:, None] * m + r[None, :], mask=msk, other=0.0)
    Vt = tl.where(r[None, :] > vcols[:, None], Vt,
                  tl.where(r[None, :] == vcols[:, None], 1.0, 0.0))
    return tl.where(msk, Vt, 0.0)


@triton.jit
def _row_chunk(base, cc, ccmask, k, r, m, rlim, na, n, NB: tl.constexpr):
    """Rows ``r`` (those below ``rlim``) of the column tile ``cc``: ``(aptr, amask, At)``, the
    tile's pointers, mask and values ``[BN, len(r)]``, and the panel at ``k``'s ``V^T`` rows
    there (:func:`_load_v`)."""
    amask = ccmask[:, None] & (r < rlim)[None, :]
    aptr = base + cc[:, None] * m + r[None, :]
    At = tl.load(aptr, mask=amask, other=0.0)
    return aptr, amask, At, _load_v(base, k, r, m, rlim, na, NB, n - k)


@triton.jit
def _load_t(TW, b, p, n_tw, NB: tl.constexpr):
    ii = tl.arange(0, NB)
    tbase = TW + (b.to(tl.int64) * n_tw + p) * NB * NB
    return tl.load(tbase + ii[:, None] * NB + ii[None, :])


@triton.jit
def _tile_plan(NA, NZ, b, c0, na, n, c_end, HAS_NA: tl.constexpr):
    """``(run, tail, lim)`` for matrix ``b``'s column tile at ``c0``: ``run`` False when its
    columns are all past ``n_kept`` (zero in the result), ``tail`` when all are past
    ``n_active`` (tail precision allowed); its columns end at ``lim = min(n_kept, c_end)``:
    no update stores the FP16 route's copy past ``n_kept`` (EXPERIMENTS.md N31, N33)."""
    if HAS_NA:
        nz = tl.load(NZ + b)
        lim = tl.minimum(nz, c_end)
    else:
        nz, lim = n, c_end
    return c0 < nz, c0 >= na, lim


@triton.jit
def _tile_program(Ht, NA, NZ, m, n, c_start, c_end, BN: tl.constexpr, HAS_NA: tl.constexpr,
                  TILE_MAJOR: tl.constexpr):
    """A column-tile program's ``(b, base, na, cc, ccmask, run, tail)``: grid ``(tiles, B)``
    (``(B, tiles)`` unless ``TILE_MAJOR``), its columns ``cc`` from ``c_start`` and
    :func:`_tile_plan`'s ``run`` and ``tail``."""
    if TILE_MAJOR:
        b, base, na = program_matrix(Ht, NA, m, n, HAS_NA, 1)
        t = tl.program_id(0)
    else:
        b, base, na = program_matrix(Ht, NA, m, n, HAS_NA, 0)
        t = tl.program_id(1)
    c0 = c_start + t * BN
    cc = c0 + tl.arange(0, BN)
    run, tail, lim = _tile_plan(NA, NZ, b, c0, na, n, c_end, HAS_NA)
    return b, base, na, cc, cc < lim, run, tail


@triton.jit
def _apply_panels(base, TW, b, k0, npan, na, m, n, n_tw, cc, ccmask,
                  NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr,
                  RESIDENT: tl.constexpr, PREC: tl.constexpr):
    """The body of :func:`trailing_kernel` for its column tile ``cc``, products in PREC."""
    rr = tl.arange(0, BM)
    if RESIDENT:
        r = k0 + rr
        amask = ccmask[:, None] & (r < m)[None, :]
        aptr = base + cc[:, None] * m + r[None, :]
        At = tl.load(aptr, mask=amask, other=0.0)
        for i in range(0, npan):
            k = k0 + i * NB
            if k < na:
                Vt = _load_v(base, k, r, m, m, na, NB, n - k)
                T = _load_t(TW, b, k // NB, n_tw, NB)
                Y, ys = y_unit(_dot_small(_dot(At, tl.trans(Vt), PREC), T, PREC), PREC)
                At -= y_back(_dot(Y, Vt, PREC), ys, PREC)
        tl.store(aptr, At, mask=amask)
    else:
        for i in range(0, npan):
            k = k0 + i * NB
            if k < na:
                W = tl.zeros((BN, NB), dtype=tl.float32)
                for r0 in range(k, m, BM):
                    _, _, At, Vt = _row_chunk(base, cc, ccmask, k, r0 + rr, m, m, na, n, NB)
                    W += _dot(At, tl.trans(Vt), PREC)
                T = _load_t(TW, b, k // NB, n_tw, NB)
                Y, ys = y_unit(_dot_small(W, T, PREC), PREC)
                for r0 in range(k, m, BM):
                    aptr, amask, At, Vt = _row_chunk(base, cc, ccmask, k, r0 + rr, m, m, na, n,
                                                     NB)
                    At -= y_back(_dot(Y, Vt, PREC), ys, PREC)
                    tl.store(aptr, At, mask=amask)
                # The next panel re-reads columns this program just wrote.
                tl.debug_barrier()


@triton.jit
def _pair_sums(BN: tl.constexpr, NB: tl.constexpr):
    """Zeroed ``W1``, ``W2`` ([BN, NB]) and ``G`` ([NB, NB]) of a pair update's first sweep."""
    return (tl.zeros((BN, NB), dtype=tl.float32), tl.zeros((BN, NB), dtype=tl.float32),
            tl.zeros((NB, NB), dtype=tl.float32))


@triton.jit
def _apply_panel_f16(base, base16, TW, b, k, npan, na, m, n, n_tw, cc, ccmask, sc, v16,
                     NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, RESIDENT: tl.constexpr,
                     PREC: tl.constexpr, PAIR: tl.constexpr, USE_V16: tl.constexpr):
    """The update by the ``npan`` (1 or 2) panels from column ``k`` of the column tile ``cc``
    of a matrix on the FP16 route (:mod:`adaptqr.paths.kernels.fp16_storage`): the tile in
    units of ``sc``, from and back to C16 but for the float32 entries (``hot_mask``). Streamed
    tiles of two panels take :func:`_apply_pair_f16` (``PAIR``, set by the launcher exactly
    when ``npan`` is 2)."""
    rr = tl.arange(0, BM)
    src16 = k > 0
    if RESIDENT:
        r = k + rr
        amask = ccmask[:, None] & (r < m)[None, :]
        off = cc[:, None] * m + r[None, :]
        C = load_scaled(base, base16, off, amask, src16, sc)
        for i in range(0, npan):
            kp = k + i * NB
            Vt = _load_v(base, kp, r, m, m, na, NB, n - kp)
            T = _load_t(TW, b, kp // NB, n_tw, NB)
            Y16, ys = y_scaled(_dot_small(dot16(C, tl.trans(Vt)), T, PREC))
            C -= dot16(Y16, Vt) * ys
        store_scaled(base, base16, off, amask, C, hot_mask(cc, r, k, npan * NB), sc)
    elif PAIR:
        _apply_pair_f16(base, base16, TW, b, k, na, m, n, n_tw, cc, ccmask, sc, v16, NB, BN,
                        BM, PREC, USE_V16)
    else:
        T = _load_t(TW, b, k // NB, n_tw, NB)
        W = tl.zeros((BN, NB), dtype=tl.float32)
        for r0 in range(k, m, BM):
            r = r0 + rr
            amask = ccmask[:, None] & (r < m)[None, :]
            C = load_scaled(base, base16, cc[:, None] * m + r[None, :], amask, src16, sc)
            W += dot16(C, tl.trans(_load_v(base, k, r, m, m, na, NB, n - k)))
        Y16, ys = y_scaled(_dot_small(W, T, PREC))
        for r0 in range(k, m, BM):
            r = r0 + rr
            amask = ccmask[:, None] & (r < m)[None, :]
            off = cc[:, None] * m + r[None, :]
            C = load_scaled(base, base16, off, amask, src16, sc)
            C -= dot16(Y16, _load_v(base, k, r, m, m, na, NB, n - k)) * ys
            store_scaled(base, base16, off, amask, C, hot_mask(cc, r, k, NB), sc)


@triton.jit
def v16_kernel(Ht, NA, V16, VLO, k, m, n, HAS_NA: tl.constexpr, NB: tl.constexpr,
               BM: tl.constexpr, NP: tl.constexpr, LO: tl.constexpr = False):
    """``V16[b]`` ``(NP NB, m)`` float16: the ``NP`` (1 or 2) panels from column ``k``'s
    reflectors as the FP16 updates use them (unit diagonal, zeros above it and past
    ``n_active``, rounded to nearest), rows ``[k, m)``. Grid ``(B, cdiv(m - k, BM))``. One
    read of the reflectors an update, in half the bytes, where each column tile (or row
    slice) of the update would read them in float32 (EXPERIMENTS.md N23, N24). ``LO``: also
    their low halves in ``VLO`` (same layout; ``V16`` is then :func:`f16_halves`' high
    half), for the FP32 route's "f16x3" pair update (T14)."""
    b, base, na = program_matrix(Ht, NA, m, n, HAS_NA, 0)
    r = k + tl.program_id(1) * BM + tl.arange(0, BM)
    jj = tl.arange(0, NB)
    off = b.to(tl.int64) * NP * NB * m
    msk = (r < m)[None, :]
    for i in tl.static_range(NP):
        Vi = _load_v(base, k + i * NB, r, m, m, na, NB, n - k - i * NB)
        rows = off + (i * NB + jj[:, None]) * m + r[None, :]
        if LO:
            store_halves(V16, VLO, rows, Vi, msk)
        else:
            tl.store(V16 + rows, Vi.to(tl.float16), mask=msk)


@triton.jit
def _v_rows(base, v16, k, r, m, rlim, na, n, NB: tl.constexpr, USE_V16: tl.constexpr):
    """One panel's ``V^T`` rows ``r`` below ``rlim`` ([NB, len(r)]): float16 from
    :func:`v16_kernel`'s copy ``v16`` when ``USE_V16``, else float32 from Ht
    (:func:`_load_v`); the FP16 products round either to the same values."""
    if USE_V16:
        jj = tl.arange(0, NB)
        return tl.load(v16 + jj[:, None] * m + r[None, :], mask=(r < rlim)[None, :], other=0.0)
    else:
        return _load_v(base, k, r, m, rlim, na, NB, n - k)


@triton.jit
def _pair_v(base, v16, k, r, m, na, n, NB: tl.constexpr, USE_V16: tl.constexpr):
    """The pair's two panels' ``V^T`` rows ``r`` in float16 ([NB, len(r)] each), from
    :func:`v16_kernel`'s copy when ``USE_V16`` (:func:`_v_rows`)."""
    V1 = _v_rows(base, v16, k, r, m, m, na, n, NB, USE_V16).to(tl.float16)
    V2 = _v_rows(base, v16 + NB * m, k + NB, r, m, m, na, n, NB, USE_V16).to(tl.float16)
    return V1, V2


@triton.jit
def _apply_pair_f16(base, base16, TW, b, k, na, m, n, n_tw, cc, ccmask, sc, v16,
                    NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, PREC: tl.constexpr,
                    USE_V16: tl.constexpr):
    """Panels ``k`` and ``k + NB`` applied to a streamed FP16 tile in one read-update-write
    pass instead of two (EXPERIMENTS.md N9). In transposed form, with ``C`` the tile::

        W1 = C^T V1,  W2 = C^T V2,  G = V1^T V2      (one sweep over the rows)
        Y1 = W1 T1,   Y2 = (W2 - Y1 G) T2            (W2 - Y1 G: C^T V2 after panel 1)
        C^T -= Y1 V1^T + Y2 V2^T                     (second sweep)

    ``V1``, ``V2`` rounded to float16 in every product (``G`` too), as two one-panel updates
    round them, so the transformation applied is theirs; the tile is rounded once, not twice.
    """
    Y1h, Y2h, ys = _pair_y(base, base16, TW, b, k, na, m, n, n_tw, cc, ccmask, sc, v16, NB,
                           BN, BM, PREC, USE_V16)
    _pair_rows(base, base16, k, k, m, na, m, n, cc, ccmask, sc, v16, Y1h, Y2h, ys, NB, BM,
               USE_V16)


@triton.jit
def _pair_y(base, base16, TW, b, k, na, m, n, n_tw, cc, ccmask, sc, v16,
            NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, PREC: tl.constexpr,
            USE_V16: tl.constexpr):
    """:func:`_apply_pair_f16`'s first sweep: ``(Y1h, Y2h, ys)``, its ``Y1``, ``Y2`` over
    the power of two ``ys`` in float16."""
    rr = tl.arange(0, BM)
    W1, W2, G = _pair_sums(BN, NB)
    for r0 in range(k, m, BM):
        r = r0 + rr
        amask = ccmask[:, None] & (r < m)[None, :]
        C = load_scaled(base, base16, cc[:, None] * m + r[None, :], amask, k > 0,
                        sc).to(tl.float16)
        V1, V2 = _pair_v(base, v16, k, r, m, na, n, NB, USE_V16)
        W1 += tl.dot(C, tl.trans(V1))
        W2 += tl.dot(C, tl.trans(V2))
        G += tl.dot(V1, tl.trans(V2))
    # No T2 mask for a second panel at or past n_active (which exits without writing its
    # T): the route takes only n_active == n_nonzero (classify.fp16_scales), so such a pair's
    # columns, from k + 2 NB on, are past n_nonzero, tiles that no update runs.
    Y1, Y2 = _pair_ys(W1, W2, G, TW, b, k, n_tw, NB, PREC)
    ys = y_scale(tl.maximum(abs_max(Y1), abs_max(Y2)))
    return (Y1 * (1.0 / ys)).to(tl.float16), (Y2 * (1.0 / ys)).to(tl.float16), ys


@triton.jit
def _pair_ys(W1, W2, G, TW, b, k, n_tw, NB: tl.constexpr, PREC: tl.constexpr):
    """A pair update's ``Y1 = W1 T1`` and ``Y2 = (W2 - Y1 G) T2`` (``W2 - Y1 G``: ``C^T V2``
    after panel 1) from its first sweep's sums, the panels at ``k`` and ``k + NB``."""
    Y1 = _dot_small(W1, _load_t(TW, b, k // NB, n_tw, NB), PREC)
    Y2 = _dot_small(W2 - _dot_small(Y1, G, PREC), _load_t(TW, b, (k + NB) // NB, n_tw, NB), PREC)
    return Y1, Y2


@triton.jit
def _pair_rows(base, base16, k, r_lo, r_hi, na, m, n, cc, ccmask, sc, v16, Y1h, Y2h, ys,
               NB: tl.constexpr, BM: tl.constexpr, USE_V16: tl.constexpr):
    """:func:`_apply_pair_f16`'s second sweep over rows ``[r_lo, r_hi)`` (``r_lo - k`` a
    multiple of BM, so each row chunk is the one-program sweep's): ``C^T -= ys (Y1h V1^T +
    Y2h V2^T)``."""
    rr = tl.arange(0, BM)
    for r0 in range(r_lo, r_hi, BM):
        r = r0 + rr
        amask = ccmask[:, None] & (r < r_hi)[None, :]
        off = cc[:, None] * m + r[None, :]
        C = load_scaled(base, base16, off, amask, k > 0, sc)
        V1, V2 = _pair_v(base, v16, k, r, m, na, n, NB, USE_V16)
        D = tl.dot(Y1h, V1)
        D += tl.dot(Y2h, V2)
        C -= D * ys
        store_scaled(base, base16, off, amask, C, hot_mask(cc, r, k, 2 * NB), sc)


@triton.jit
def _apply_fp32(base, TW, b, k0, npan, na, m, n, n_tw, cc, ccmask, tail,
                NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr,
                RESIDENT: tl.constexpr, PREC: tl.constexpr, PREC_TAIL: tl.constexpr):
    """:func:`_apply_panels` in PREC, or PREC_TAIL for a tile wholly in the negligible tail."""
    if (PREC_TAIL != PREC) & tail:
        _apply_panels(base, TW, b, k0, npan, na, m, n, n_tw, cc, ccmask, NB, BN, BM,
                      RESIDENT, PREC_TAIL)
    else:
        _apply_panels(base, TW, b, k0, npan, na, m, n, n_tw, cc, ccmask, NB, BN, BM,
                      RESIDENT, PREC)


@triton.jit
def _apply_pair_f32(base, TW, b, k, na, m, n, n_tw, cc, ccmask,
                    NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, PREC: tl.constexpr):
    """Panels ``k`` and ``k + NB`` applied to a streamed float32 tile in one read-update-write
    pass instead of two (EXPERIMENTS.md T13; :func:`_apply_pair_f16`'s algebra, N9)::

        W1 = C^T V1,  W2 = C^T V2,  G = V1^T V2      (one sweep over the rows)
        Y1 = W1 T1,   Y2 = (W2 - Y1 G) T2            (W2 - Y1 G: C^T V2 after panel 1)
        C^T -= Y1 V1^T + Y2 V2^T                     (second sweep)

    Products in PREC (``G`` too: reflector entries are at most 1). The caller sends only
    pairs whose second panel starts before ``na`` (its ``T`` is then the panel's)."""
    rr = tl.arange(0, BM)
    W1, W2, G = _pair_sums(BN, NB)
    for r0 in range(k, m, BM):
        r = r0 + rr
        _, _, C, V1 = _row_chunk(base, cc, ccmask, k, r, m, m, na, n, NB)
        V2 = _load_v(base, k + NB, r, m, m, na, NB, n - k - NB)
        W1 += _dot(C, tl.trans(V1), PREC)
        W2 += _dot(C, tl.trans(V2), PREC)
        G += _dot(V1, tl.trans(V2), PREC)
    Y1, Y2 = _pair_ys(W1, W2, G, TW, b, k, n_tw, NB, PREC)
    Y1, ys1 = y_unit(Y1, PREC)
    Y2, ys2 = y_unit(Y2, PREC)
    for r0 in range(k, m, BM):
        r = r0 + rr
        aptr, amask, C, V1 = _row_chunk(base, cc, ccmask, k, r, m, m, na, n, NB)
        V2 = _load_v(base, k + NB, r, m, m, na, NB, n - k - NB)
        C -= y_back(_dot(Y1, V1, PREC), ys1, PREC) + y_back(_dot(Y2, V2, PREC), ys2, PREC)
        tl.store(aptr, C, mask=amask)


@triton.jit
def _pair_halves(v16, vlo, r, m, NB: tl.constexpr):
    """Rows ``r`` of a pair's two panels' ``V^T`` halves from :func:`v16_kernel`'s copies
    (``LO``): ``(V1 hi, V1 lo, V2 hi, V2 lo)``, each ``[NB, len(r)]`` float16."""
    rows = tl.arange(0, NB)[:, None] * m + r[None, :]
    msk = (r < m)[None, :]
    v1h, v1l = load_halves(v16, vlo, rows, msk)
    v2h, v2l = load_halves(v16 + NB * m, vlo + NB * m, rows, msk)
    return v1h, v1l, v2h, v2l


@triton.jit
def _apply_pair_halves(base, v16, vlo, TW, b, k, m, n_tw, cc, ccmask,
                       NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr):
    """:func:`_apply_pair_f32` in "f16x3" with both panels' ``V`` from :func:`v16_kernel`'s
    halves (``v16``, ``vlo``: matrix b's, ``LO``): only the tile's chunks are split in the
    program, and ``Y1``'s and ``Y2``'s halves once (EXPERIMENTS.md T14, after QF28)."""
    rr = tl.arange(0, BM)
    W1, W2, G = _pair_sums(BN, NB)
    for r0 in range(k, m, BM):
        r = r0 + rr
        c_hi, c_lo = f16_halves(tl.load(base + cc[:, None] * m + r[None, :],
                                        mask=ccmask[:, None] & (r < m)[None, :], other=0.0))
        v1h, v1l, v2h, v2l = _pair_halves(v16, vlo, r, m, NB)
        W1 = dot_halves(c_hi, c_lo, tl.trans(v1h), tl.trans(v1l), W1)
        W2 = dot_halves(c_hi, c_lo, tl.trans(v2h), tl.trans(v2l), W2)
        G = dot_halves(v1h, v1l, tl.trans(v2h), tl.trans(v2l), G)
    Y1, Y2 = _pair_ys(W1, W2, G, TW, b, k, n_tw, NB, "f16x3")
    Y1, ys1 = y_unit(Y1, "f16x3")
    Y2, ys2 = y_unit(Y2, "f16x3")
    y1h, y1l = f16_halves(Y1)
    y2h, y2l = f16_halves(Y2)
    zero = tl.zeros((BN, BM), dtype=tl.float32)
    for r0 in range(k, m, BM):
        r = r0 + rr
        aptr = base + cc[:, None] * m + r[None, :]
        amask = ccmask[:, None] & (r < m)[None, :]
        v1h, v1l, v2h, v2l = _pair_halves(v16, vlo, r, m, NB)
        C = tl.load(aptr, mask=amask, other=0.0)
        C -= (dot_halves(y1h, y1l, v1h, v1l, zero) * ys1
              + dot_halves(y2h, y2l, v2h, v2l, zero) * ys2)
        tl.store(aptr, C, mask=amask)


@triton.jit
def _apply_fp32_pair(base, v16, vlo, TW, b, k, na, m, n, n_tw, cc, ccmask, tail,
                     NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr,
                     PREC: tl.constexpr, PREC_TAIL: tl.constexpr, HALVES: tl.constexpr):
    """:func:`_apply_pair_f32` in PREC, or PREC_TAIL for a tile wholly in the negligible
    tail; ``HALVES`` (PREC "f16x3"): :func:`_apply_pair_halves` where PREC applies."""
    if (PREC_TAIL != PREC) & tail:
        _apply_pair_f32(base, TW, b, k, na, m, n, n_tw, cc, ccmask, NB, BN, BM, PREC_TAIL)
    elif HALVES and PREC == "f16x3":
        _apply_pair_halves(base, v16, vlo, TW, b, k, m, n_tw, cc, ccmask, NB, BN, BM)
    else:
        _apply_pair_f32(base, TW, b, k, na, m, n, n_tw, cc, ccmask, NB, BN, BM, PREC)


@triton.jit
def _routes(C16, SC, b, m, n, F16: tl.constexpr):
    """``(sc, base16, do16, do32)`` of matrix b under mode F16: its FP16 storage scale (0:
    the FP32 route), its C16, and which of the two updates this launch runs for it
    (fp16_storage.F16_SKIP / F16_ONLY). Without the route (F16_NONE) nothing is read:
    the FP32 update, decided at compile time."""
    if F16 == F16_NONE:
        return 0.0, C16, False, True
    else:
        sc = tl.load(SC + b)
        return (sc, C16 + b.to(tl.int64) * n * m, (sc > 0.0) & (F16 != F16_SKIP),
                (sc == 0.0) & (F16 != F16_ONLY))


@triton.jit
def trailing_kernel(Ht, TW, NA, NZ, C16, SC, k0, npan, m, n, c_start, c_end, n_tw, V16, VLO,
                    NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr,
                    RESIDENT: tl.constexpr, HAS_NA: tl.constexpr, PREC: tl.constexpr,
                    PREC_TAIL: tl.constexpr, F16: tl.constexpr = 0, BM16: tl.constexpr = 16,
                    PAIR16: tl.constexpr = False, TILE_MAJOR: tl.constexpr = True,
                    USE_V16: tl.constexpr = False, PAIR32: tl.constexpr = False,
                    HALVES32: tl.constexpr = False):
    """Apply panels k0, k0+NB, ..., (npan of them) to columns [c_start, c_end).

    NZ: (B,) int32 ``n_kept`` (read with NA, when HAS_NA). A tile of columns that are zero
    in the result is skipped; a tile wholly past ``n_active`` takes PREC_TAIL.
    F16 (npan 1 or 2): ``SC`` (B,) float32 FP16 scales, ``C16`` the float16 copy; a matrix
    with ``SC[b] > 0`` takes :func:`_apply_panel_f16` (PAIR16: npan is 2 and the tile is
    streamed, so both panels go in one pass; USE_V16: their reflectors from ``V16``
    ``(B, 2 NB, m)``, :func:`v16_kernel`'s, else ``V16`` is not read). PAIR32 (npan 2,
    streamed): the float32 update of both panels in one pass too
    (:func:`_apply_pair_f32`), where the second starts before the matrix's ``n_active``;
    HALVES32: its "f16x3" products from ``V16`` and ``VLO`` ``(B, 2 NB, m)``,
    :func:`v16_kernel`'s halves (``LO``; T14).
    """
    b, base, na, cc, ccmask, run, tail = _tile_program(Ht, NA, NZ, m, n, c_start, c_end, BN,
                                                       HAS_NA, TILE_MAJOR)
    if (k0 < na) & run:
        sc, base16, do16, do32 = _routes(C16, SC, b, m, n, F16)
        if do16:
            _apply_panel_f16(base, base16, TW, b, k0, npan, na, m, n, n_tw, cc, ccmask, sc,
                             V16 + b.to(tl.int64) * 2 * NB * m, NB, BN, BM16, RESIDENT, PREC,
                             PAIR16, USE_V16)
        elif do32:
            # PAIR32 decided at compile time: the default launch compiles no pair code.
            pair = False
            if PAIR32:
                pair = k0 + NB < na
            if pair:
                _apply_fp32_pair(base, V16 + b.to(tl.int64) * 2 * NB * m,
                                 VLO + b.to(tl.int64) * 2 * NB * m, TW, b, k0, na, m, n, n_tw,
                                 cc, ccmask, tail, NB, BN, BM, PREC, PREC_TAIL, HALVES32)
            else:
                _apply_fp32(base, TW, b, k0, npan, na, m, n, n_tw, cc, ccmask, tail, NB, BN, BM,
                            RESIDENT, PREC, PREC_TAIL)


@triton.jit
def _y_ptrs(Y16, YS, b, n, cc, NB: tl.constexpr):
    """The split pair update's slots for the column tile ``cc`` of matrix ``b``: ``Y1h``'s
    [BN, NB] pointers into ``Y16`` (``Y2h``'s are NB further on), and ``ys``'s, at the
    tile's first column of ``YS``."""
    yp = Y16 + (b.to(tl.int64) * n + cc[:, None]) * (2 * NB) + tl.arange(0, NB)[None, :]
    return yp, YS + b.to(tl.int64) * n + tl.min(cc, axis=0)


@triton.jit
def pair_y_kernel(Ht, TW, NA, NZ, C16, SC, Y16, YS, k, m, n, c_start, c_end, n_tw, V16,
                  NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, HAS_NA: tl.constexpr,
                  PREC: tl.constexpr, TILE_MAJOR: tl.constexpr = True,
                  USE_V16: tl.constexpr = False):
    """The FP16 pair update in two launches (EXPERIMENTS.md N25), first half: program
    ``(t, b)`` (``(b, t)`` unless ``TILE_MAJOR``) makes :func:`_apply_pair_f16`'s first
    sweep over its column tile of an FP16-routed matrix and stores ``Y1h``, ``Y2h`` to
    ``Y16[b, cc]`` (``(B, n, 2 NB)`` float16) and ``ys`` to ``YS[b, c0]`` (``(B, n)``
    float32, at the tile's first column). FP32-routed matrices and skipped tiles store
    nothing, and :func:`pair_u_kernel` skips the same ones."""
    b, base, na, cc, ccmask, run, _ = _tile_program(Ht, NA, NZ, m, n, c_start, c_end, BN,
                                                    HAS_NA, TILE_MAJOR)
    if (k < na) & run:
        sc, base16, do16, _ = _routes(C16, SC, b, m, n, F16_ONLY)
        if do16:
            Y1h, Y2h, ys = _pair_y(base, base16, TW, b, k, na, m, n, n_tw, cc, ccmask, sc,
                                   V16 + b.to(tl.int64) * 2 * NB * m, NB, BN, BM, PREC, USE_V16)
            yp, ysp = _y_ptrs(Y16, YS, b, n, cc, NB)
            tl.store(yp, Y1h, mask=ccmask[:, None])
            tl.store(yp + NB, Y2h, mask=ccmask[:, None])
            tl.store(ysp, ys)


@triton.jit
def pair_u_kernel(Ht, NA, NZ, C16, SC, Y16, YS, k, m, n, c_start, c_end, rows_per, V16,
                  NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, HAS_NA: tl.constexpr,
                  USE_V16: tl.constexpr = False):
    """Second half of :func:`pair_y_kernel`'s update: program ``(b, t, s)`` applies
    :func:`_apply_pair_f16`'s second sweep to rows ``[k + s rows_per, ...)`` of its column
    tile (``rows_per`` a multiple of BM), from the stored ``Y16`` and ``YS``: at the same
    tile width, the one-program update's entries bit for bit, over many more programs."""
    b, base, na, go, _, cc, ccmask, r_lo, r_hi = _slice_plan(
        Ht, NA, NZ, k, m, n, c_start, c_end, rows_per, BN, HAS_NA)
    if go:
        sc, base16, do16, _ = _routes(C16, SC, b, m, n, F16_ONLY)
        if do16:
            yp, ysp = _y_ptrs(Y16, YS, b, n, cc, NB)
            Y1h = tl.load(yp, mask=ccmask[:, None], other=0.0)
            Y2h = tl.load(yp + NB, mask=ccmask[:, None], other=0.0)
            ys = tl.load(ysp)
            _pair_rows(base, base16, k, r_lo, r_hi, na, m, n, cc, ccmask, sc,
                       V16 + b.to(tl.int64) * 2 * NB * m, Y1h, Y2h, ys, NB, BM, USE_V16)


@triton.jit
def _slice_plan(Ht, NA, NZ, k, m, n, c_start, c_end, rows_per,
                BN: tl.constexpr, HAS_NA: tl.constexpr):
    """The row-split kernels' program (b, t, s): ``(b, base, na, go, tail, cc, ccmask, r_lo,
    r_hi)``, its column tile ``cc`` and row slice ``[r_lo, r_hi)``; ``go`` False when the
    panel is past n_active or the tile is all exact zeros (:func:`_tile_plan`)."""
    b, base, na = program_matrix(Ht, NA, m, n, HAS_NA)
    c0 = c_start + tl.program_id(1) * BN
    run, tail, lim = _tile_plan(NA, NZ, b, c0, na, n, c_end, HAS_NA)
    cc = c0 + tl.arange(0, BN)
    r_lo = k + tl.program_id(2) * rows_per
    return b, base, na, (k < na) & run, tail, cc, cc < lim, r_lo, tl.minimum(m, r_lo + rows_per)


@triton.jit
def _w_ptrs(W, b, n, cc, NB: tl.constexpr, BN: tl.constexpr, PARTIAL: tl.constexpr):
    """The [BN, NB] pointers of the row-split program (b, t, s)'s ``W`` sums: ``W[b, cc]``
    (``W`` ``(B, n, NB)``, every slice adding there), or with ``PARTIAL`` its own slot of
    ``W`` taken as ``(B, nsplit, tiles, BN, NB)`` (EXPERIMENTS.md N26)."""
    # One return: with a return in each branch, triton 3.6 failed to lower the row-split
    # kernels (offline, sm_90; triton 3.9 did not).
    jj = tl.arange(0, NB)
    if PARTIAL:
        slot = ((b.to(tl.int64) * tl.num_programs(2) + tl.program_id(2)) * tl.num_programs(1)
                + tl.program_id(1))
        wp = W + (slot * BN + tl.arange(0, BN)[:, None]) * NB + jj[None, :]
    else:
        wp = W + (b.to(tl.int64) * n + cc[:, None]) * NB + jj[None, :]
    return wp


@triton.jit
def _w_put(wp, acc, ccmask, PARTIAL: tl.constexpr):
    """A slice's sums into ``W``: stored in its slot (``PARTIAL``), else added by atomics,
    in an order that changes from launch to launch."""
    if PARTIAL:
        tl.store(wp, acc, mask=ccmask[:, None])
    else:
        tl.atomic_add(wp, acc, mask=ccmask[:, None])


@triton.jit
def _w_get(wp, ccmask, NB: tl.constexpr, BN: tl.constexpr, PARTIAL: tl.constexpr):
    """The update's ``W`` [BN, NB] for this program's tile: with ``PARTIAL`` the slices' sums
    added in slice order (the same bits every launch), else the atomics' total."""
    if PARTIAL:
        step = tl.num_programs(1).to(tl.int64) * BN * NB
        first = wp - tl.program_id(2) * step
        Wt = tl.zeros((BN, NB), dtype=tl.float32)
        for i in range(0, tl.num_programs(2)):
            Wt += tl.load(first + i * step, mask=ccmask[:, None], other=0.0)
    else:
        Wt = tl.load(wp, mask=ccmask[:, None], other=0.0)
    return Wt


@triton.jit
def _w_rows(base, W, b, k, m, n, na, cc, ccmask, r_lo, r_hi, NB: tl.constexpr,
            BN: tl.constexpr, BM: tl.constexpr, PREC: tl.constexpr, PARTIAL: tl.constexpr):
    """``A[r_lo:r_hi, cc]^T V[r_lo:r_hi]`` into ``W`` (:func:`_w_put`), products in PREC."""
    rr = tl.arange(0, BM)
    acc = tl.zeros((BN, NB), dtype=tl.float32)
    for r0 in range(r_lo, r_hi, BM):
        r = r0 + rr
        _, _, At, Vt = _row_chunk(base, cc, ccmask, k, r, m, r_hi, na, n, NB)
        acc += _dot(At, tl.trans(Vt), PREC)
    # The pointers after the sweep: formed before it, they cost the kernel spill (sm_90).
    _w_put(_w_ptrs(W, b, n, cc, NB, BN, PARTIAL), acc, ccmask, PARTIAL)


@triton.jit
def _w_rows_fp32(base, W, b, k, m, n, na, cc, ccmask, r_lo, r_hi, tail,
                 NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, PREC: tl.constexpr,
                 PREC_TAIL: tl.constexpr, PARTIAL: tl.constexpr):
    """:func:`_w_rows` in PREC, or PREC_TAIL for a tile wholly in the negligible tail."""
    if (PREC_TAIL != PREC) & tail:
        _w_rows(base, W, b, k, m, n, na, cc, ccmask, r_lo, r_hi, NB, BN, BM, PREC_TAIL, PARTIAL)
    else:
        _w_rows(base, W, b, k, m, n, na, cc, ccmask, r_lo, r_hi, NB, BN, BM, PREC, PARTIAL)


@triton.jit
def _w_rows_f16(base, base16, W, b, k, m, n, na, cc, ccmask, r_lo, r_hi, sc, v16,
                NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, USE_V16: tl.constexpr,
                PARTIAL: tl.constexpr):
    """:func:`_w_rows` for a matrix on the FP16 route (:func:`_apply_panel_f16`)."""
    rr = tl.arange(0, BM)
    acc = tl.zeros((BN, NB), dtype=tl.float32)
    for r0 in range(r_lo, r_hi, BM):
        r = r0 + rr
        amask = ccmask[:, None] & (r < r_hi)[None, :]
        C = load_scaled(base, base16, cc[:, None] * m + r[None, :], amask, k > 0, sc)
        acc += dot16(C, tl.trans(_v_rows(base, v16, k, r, m, r_hi, na, n, NB, USE_V16)))
    _w_put(_w_ptrs(W, b, n, cc, NB, BN, PARTIAL), acc, ccmask, PARTIAL)


#: Elements a program zeroes a step in :func:`_zero_next`: 512 float32 over the row-split
#: kernels' 4 warps is one 16-byte store a thread.
ZERO_BLOCK = tl.constexpr(512)


@triton.jit
def _zero_next(WZ, z_start, n, NB: tl.constexpr, ZB: tl.constexpr):
    """Zero ``WZ[b, z_start:n, :]`` (contiguous), each program of the row-split grid
    ``(b, t, s)`` an equal share of its matrix's part."""
    b = tl.program_id(0)
    q = tl.program_id(1) * tl.num_programs(2) + tl.program_id(2)
    nq = tl.num_programs(1) * tl.num_programs(2)
    total = (n - z_start) * NB
    per = tl.cdiv(tl.cdiv(total, nq), ZB) * ZB
    lo = q * per
    hi = tl.minimum(lo + per, total)
    zbase = WZ + b.to(tl.int64) * n * NB + z_start * NB
    offs = tl.arange(0, ZB)
    for i in range(lo, hi, ZB):
        tl.store(zbase + i + offs, tl.zeros((ZB,), dtype=tl.float32), mask=i + offs < hi)


@triton.jit
def trailing_w_kernel(Ht, W, NA, NZ, C16, SC, k, m, n, c_start, c_end, rows_per_split,
                      WZ, z_start, V16,
                      NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr,
                      HAS_NA: tl.constexpr, PREC: tl.constexpr, PREC_TAIL: tl.constexpr,
                      F16: tl.constexpr = 0, BM16: tl.constexpr = 16,
                      ZERO: tl.constexpr = False, USE_V16: tl.constexpr = False,
                      PARTIAL: tl.constexpr = False):
    """Row-split first half of one panel's update, for small batches: program (b, t, s)
    adds ``A[rows_s, cols_t]^T V[rows_s]`` into ``W[b, cols_t, :]`` (W: (B, n, NB) float32,
    zero there on entry) with atomics; with ``PARTIAL`` it stores them in its own slot of
    ``W`` (:func:`_w_ptrs`), which :func:`trailing_u_kernel` sums in slice order. Rows
    ``[k + s*rows_per_split, ...)``. NZ, PREC_TAIL, F16 (then W is in units of the matrix's
    scale): as :func:`trailing_kernel`.
    ``ZERO``: the programs also zero ``WZ[:, z_start:, :]`` (another (B, n, NB) buffer: the
    next update's ``W``), so that no zeroing launch stands before it
    (``row_split.WSlot``). ``USE_V16``: the FP16 route's reflectors from ``V16`` ``(B, NB,
    m)`` (:func:`v16_kernel`'s), else ``V16`` is not read."""
    if ZERO:
        _zero_next(WZ, z_start, n, NB, ZERO_BLOCK)
    b, base, na, go, tail, cc, ccmask, r_lo, r_hi = _slice_plan(
        Ht, NA, NZ, k, m, n, c_start, c_end, rows_per_split, BN, HAS_NA)
    if go:
        sc, base16, do16, do32 = _routes(C16, SC, b, m, n, F16)
        if do16:
            _w_rows_f16(base, base16, W, b, k, m, n, na, cc, ccmask, r_lo, r_hi, sc,
                        V16 + b.to(tl.int64) * NB * m, NB, BN, BM16, USE_V16, PARTIAL)
        elif do32:
            _w_rows_fp32(base, W, b, k, m, n, na, cc, ccmask, r_lo, r_hi, tail, NB, BN, BM,
                         PREC, PREC_TAIL, PARTIAL)


@triton.jit
def _u_rows(base, TW, wp, b, k, m, n, na, n_tw, cc, ccmask, r_lo, r_hi, NB: tl.constexpr,
            BN: tl.constexpr, BM: tl.constexpr, PREC: tl.constexpr, PARTIAL: tl.constexpr):
    """``A[r_lo:r_hi, cc]^T -= (W T) V[r_lo:r_hi]^T`` (``W`` at ``wp``, :func:`_w_get`),
    products in PREC."""
    rr = tl.arange(0, BM)
    Wt = _w_get(wp, ccmask, NB, BN, PARTIAL)
    Y, ys = y_unit(_dot_small(Wt, _load_t(TW, b, k // NB, n_tw, NB), PREC), PREC)
    for r0 in range(r_lo, r_hi, BM):
        r = r0 + rr
        aptr, amask, At, Vt = _row_chunk(base, cc, ccmask, k, r, m, r_hi, na, n, NB)
        At -= y_back(_dot(Y, Vt, PREC), ys, PREC)
        tl.store(aptr, At, mask=amask)


@triton.jit
def _u_rows_fp32(base, TW, wp, b, k, m, n, na, n_tw, cc, ccmask, r_lo, r_hi, tail,
                 NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, PREC: tl.constexpr,
                 PREC_TAIL: tl.constexpr, PARTIAL: tl.constexpr):
    """:func:`_u_rows` in PREC, or PREC_TAIL for a tile wholly in the negligible tail."""
    if (PREC_TAIL != PREC) & tail:
        _u_rows(base, TW, wp, b, k, m, n, na, n_tw, cc, ccmask, r_lo, r_hi, NB, BN, BM,
                PREC_TAIL, PARTIAL)
    else:
        _u_rows(base, TW, wp, b, k, m, n, na, n_tw, cc, ccmask, r_lo, r_hi, NB, BN, BM, PREC,
                PARTIAL)


@triton.jit
def _u_rows_f16(base, base16, TW, wp, b, k, m, n, na, n_tw, cc, ccmask, r_lo, r_hi, sc, v16,
                NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, PREC: tl.constexpr,
                USE_V16: tl.constexpr, PARTIAL: tl.constexpr):
    """:func:`_u_rows` for a matrix on the FP16 route (:func:`_apply_panel_f16`)."""
    rr = tl.arange(0, BM)
    Wt = _w_get(wp, ccmask, NB, BN, PARTIAL)
    Y16, ys = y_scaled(_dot_small(Wt, _load_t(TW, b, k // NB, n_tw, NB), PREC))
    for r0 in range(r_lo, r_hi, BM):
        r = r0 + rr
        amask = ccmask[:, None] & (r < r_hi)[None, :]
        off = cc[:, None] * m + r[None, :]
        C = load_scaled(base, base16, off, amask, k > 0, sc)
        C -= dot16(Y16, _v_rows(base, v16, k, r, m, r_hi, na, n, NB, USE_V16)) * ys
        store_scaled(base, base16, off, amask, C, hot_mask(cc, r, k, NB), sc)


@triton.jit
def trailing_u_kernel(Ht, TW, W, NA, NZ, C16, SC, k, m, n, c_start, c_end, n_tw, rows_per_prog,
                      V16, NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr,
                      HAS_NA: tl.constexpr, PREC: tl.constexpr, PREC_TAIL: tl.constexpr,
                      F16: tl.constexpr = 0, BM16: tl.constexpr = 16,
                      USE_V16: tl.constexpr = False, PARTIAL: tl.constexpr = False):
    """Second half: program (b, t, s) computes ``Y = W T`` for its columns and applies
    ``A^T -= Y V^T`` to rows ``[k + s*rows_per_prog, ...)``. ``V16``, ``USE_V16``,
    ``PARTIAL``: as :func:`trailing_w_kernel`'s (the grid the same as its)."""
    b, base, na, go, tail, cc, ccmask, r_lo, r_hi = _slice_plan(
        Ht, NA, NZ, k, m, n, c_start, c_end, rows_per_prog, BN, HAS_NA)
    if go:
        sc, base16, do16, do32 = _routes(C16, SC, b, m, n, F16)
        wp = _w_ptrs(W, b, n, cc, NB, BN, PARTIAL)
        if do16:
            _u_rows_f16(base, base16, TW, wp, b, k, m, n, na, n_tw, cc, ccmask, r_lo, r_hi,
                        sc, V16 + b.to(tl.int64) * NB * m, NB, BN, BM16, PREC, USE_V16, PARTIAL)
        elif do32:
            _u_rows_fp32(base, TW, wp, b, k, m, n, na, n_tw, cc, ccmask, r_lo, r_hi, tail, NB,
                         BN, BM, PREC, PREC_TAIL, PARTIAL)
