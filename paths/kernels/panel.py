"""Triton panel factorization (LAPACK geqr2 on a block of columns) and its T matrix.

Storage (docs/INTERNALS.md): ``Ht = H.mT`` is a contiguous ``(B, n, m)`` float32 tensor;
column ``j`` of matrix ``b`` is the contiguous row ``Ht[b, j, :]``. A panel is the columns
``[k, k + pw)`` of every matrix, rows ``[k, m)``; one program factors one matrix's panel.

Three kernels, one algorithm (right-looking, column by column, LAPACK ``dlarfg`` conventions:
``beta = -sign(alpha) * norm`` with sign(0) = +, ``tau = 0`` and ``beta = alpha`` for a zero
sub-column; the norm is scaled by the sub-column's max-abs so 1e30/1e-30 inputs neither
overflow nor underflow, and a column whose largest entry leaves ``[2^-60, 2^60]`` is first
scaled by a power of two (:func:`range_scale`, as ``slarfg`` rescales tiny columns): no
quotient or reciprocal then sees a subnormal operand, for any finite input):

* :func:`panel_reg_kernel`: the panel tile ``[NB, MB]`` (MB = next pow2 of ``m - k``) lives
  in registers for the whole factorization; loaded once, stored once. Also the whole QR of a
  small matrix when ``NB >= n`` (one launch).
* :func:`panel_chunked_kernel`: panels too tall for registers; every column step streams the
  panel through L2 in row chunks of ``CH`` (two passes: dot products, update; a column
  whose plain sum of squares is out of range first takes a max-abs pass and scaled dot
  products). Slow: one SM per matrix, latency-bound (2x4096: 159 ms of panels).
* :func:`panel_split_kernel`: tall panels of small batches: P programs per matrix, each
  holding RB rows in registers, meeting at a grid barrier (atomic counter) once per column
  to sum their partial dot products. Only when all ``B * P`` programs fit on the GPU at
  once (the launcher checks ``B * P <= SM count``); never under the interpreter with P > 1.

All three write ``tau[b, k:k+pw]`` and (``WRITE_T``) the compact-WY ``T`` (``NB x NB`` upper
triangular, ``Q_panel = I - V T V^T``) into ``TW[b, tw_index]``; with ``WRITE_T`` off,
:func:`panel_t_kernel` builds ``T`` afterwards from the stored panel, in one warp per
matrix (experiment H9, schedule ``t_kernel``). ``T`` is built by the
``larft`` recurrence ``T[:i, i] = -tau_i T[:i, :i] (V^T V)[:i, i]``, which needs no
``1/tau`` and so is exact for ``tau = 0`` columns, or by doubling
(:func:`join_upper_blocks`, same property). The register panel's column steps compute
``V^T V``'s upper part anyway (``WRITE_S``: for the T kernel, or for its own T by doubling,
EXPERIMENTS.md P5, P8).

``n_active`` (``NA``, int32 ``(B,)``, optional): columns ``>= n_active[b]`` get ``tau = 0``
and are left as the earlier reflectors left them; a panel starting at or past it does
nothing but write its zero taus.

Example (see :mod:`adaptqr.paths.householder` for the launcher)::

    >>> import torch
    >>> from adaptqr.paths.householder import factor_householder
    >>> A = torch.randn(2, 8, 8)
    >>> H = A.mT.contiguous().mT; tau = A.new_empty(2, 8)
    >>> if torch.cuda.is_available():  # (CUDA, or CPU tensors under TRITON_INTERPRET=1)
    ...     factor_householder(H.cuda(), tau.cuda(), None)
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def program_matrix(Ht, NA, m, n, HAS_NA: tl.constexpr, AXIS: tl.constexpr = 0):
    """``(b, base, na)`` of the matrix of program_id(AXIS): its index, the start of its
    ``Ht`` rows and its ``n_active`` (n without ``NA``)."""
    b = tl.program_id(AXIS)
    base = Ht + b.to(tl.int64) * m * n
    if HAS_NA:
        na = tl.load(NA + b)
    else:
        na = n
    return b, base, na


#: A column step works on its column times a power of two when the column's largest entry
#: is outside ``[SAFE_LO, SAFE_HI]``: ``SAFE_UP`` for a tiny one, ``1 / SAFE_UP`` for a huge
#: one. Then every divisor lies in ``[2^-69, 2^60]`` and every reciprocal is finite. Without
#: it, a subnormal column overflowed ``1 / (alpha - beta)`` (NaN for ``randn * 1e-40``),
#: and so did a repeated column, whose residual shrinks by about eps32 a step into the
#: subnormal range (issue 22). The GPU's ``sqrt.approx.ftz`` and, possibly, ``div.full``
#: flush subnormal operands; ``mul.f32`` keeps them, so scaling is by multiplication only.
SAFE_LO = tl.constexpr(8.673617379884035e-19)   # 2^-60
SAFE_HI = tl.constexpr(1.152921504606847e18)    # 2^60
SAFE_UP = tl.constexpr(1.2089258196146292e24)   # 2^80
#: Blocked factorizations leave a sub-column whose norm is below this as it is (tau = 0):
#: the householder path prescales every matrix whose largest column norm is outside
#: [2^-2, 2^12) (adaptqr.paths.prescale), so such a column is below 2^-108 of its matrix,
#: far under eps32. A repeated column's residual otherwise went on into the subnormal range, where
#: the H200 gave reflectors whose tau no longer matched v (orthogonality 2e4 n eps32 at
#: n = 1024; the interpreter was exact): its norm is then dominated by normal entries.
#: Only where the matrices were prescaled (every blocked schedule; else the floor is 0).
NEGLIGIBLE_SUBCOLUMN = tl.constexpr(7.703719777548943e-34)  # 2^-110
#: The panels' ``V^T V`` for their ``T``: IEEE FMA products (a panel's T is built once and
#: applied to the whole trailing matrix; Q formation's T kernel chooses its own,
#: ``qform.QFORM_T_PREC``). Passed explicitly: a string default of a jit helper does not
#: compile on triton 3.6 (EXPERIMENTS.md CI2).
T_PREC = tl.constexpr("ieee")


@triton.jit
def range_scale(x):
    """The power of two ``p`` that brings ``x`` (>= 0) into ``[2^-69, 2^60]``: ``SAFE_UP`` below
    ``SAFE_LO``, ``1 / SAFE_UP`` above ``SAFE_HI``, else (and for 0, NaN) 1."""
    return tl.where((x < SAFE_LO) & (x > 0.0), SAFE_UP,
                    tl.where(x > SAFE_HI, 1.0 / SAFE_UP, 1.0))


@triton.jit
def scaled_by_max(x, amax):
    """``(x / s, s)`` with ``s = amax`` (1 for a zero ``amax``), as ``(x q) (1 / (s q))`` for the
    power of two ``q = range_scale(amax)``: no subnormal divisor, entries at most 1."""
    q = range_scale(amax)
    s = tl.where(amax > 0.0, amax, 1.0)
    return (x * q) * (1.0 / (s * q)), s


#: A sub-column whose plain sum of squares lies in ``[PLAIN_SS_LO, PLAIN_SS_HI]``
#: (2^-100, 2^100) takes its norm from that sum: no entry's square overflowed, and the
#: squares lost below float32's subnormals (< 2^-149 each) are under m 2^-49 of it. Any
#: other (a zero, subnormal, huge or non-finite sum) is summed again over its max-abs
#: (:func:`scaled_by_max`), so that the common column step has one reduction, not two
#: (EXPERIMENTS.md R6).
PLAIN_SS_LO = tl.constexpr(7.888609052210118e-31)   # 2^-100
PLAIN_SS_HI = tl.constexpr(1.2676506002282294e30)   # 2^100


@triton.jit
def plain_norm_ok(ss):
    """Whether the plain sum of squares ``ss`` gives the norm (:data:`PLAIN_SS_LO`); False
    for NaN."""
    return (ss >= PLAIN_SS_LO) & (ss <= PLAIN_SS_HI)


@triton.jit
def plain_norm(alpha, ss):
    """``(xnp, p)`` of :func:`_reflector` from a plain sum of squares (:func:`plain_norm_ok`)."""
    xnorm = tl.sqrt(ss)
    p = range_scale(tl.maximum(tl.abs(alpha), xnorm))
    return xnorm * p, p


@triton.jit
def scaled_norm(alpha, amax, ss):
    """``(xnp, p)`` of :func:`_reflector` from the sub-column's max-abs ``amax`` and its sum
    of squares ``ss`` over ``s = amax`` (1 for 0; :func:`scaled_by_max`).

    The norm is formed as ``(s p) sqrt(ss)``, never as ``s sqrt(ss)``: for a subnormal
    ``s`` the latter keeps a few bits, and a tau from it does not match the exactly scaled
    ``v`` (orthogonality 2e5 n eps32 on a repeated column, issue 22)."""
    p = range_scale(tl.maximum(tl.abs(alpha), amax))
    return (tl.where(amax > 0.0, amax, 1.0) * p) * tl.sqrt(ss), p


@triton.jit
def _reflector(alpha, xnp, p, active, FLOOR: tl.constexpr):
    """dlarfg scalars from ``alpha`` and the sub-column's norm times ``p`` (``xnp``, from
    :func:`plain_norm` or :func:`scaled_norm`; ``p`` is the power of two :func:`range_scale`
    of ``max(|alpha|, norm)``). Returns ``(tau, beta, scale, do)``: the reflector's vector
    below its unit top is ``(x * p) * scale`` for the sub-column ``x`` (``1 / (alpha -
    beta)`` itself may not be representable); ``do`` says a reflector is generated (else
    tau = 0, scale = 0 and the column is left as it is): the sub-column's norm is not 0 and
    not below ``FLOOR`` (:data:`NEGLIGIBLE_SUBCOLUMN`, or 0)."""
    ap = alpha * p
    mx = tl.maximum(tl.abs(ap), xnp)
    mxs = tl.where(mx > 0, mx, 1.0)
    a_ = ap / mxs
    x_ = xnp / mxs
    nrm = mxs * tl.sqrt(a_ * a_ + x_ * x_)
    # `!= 0` and `not <` (not `> 0`, `>=`) so that a NaN norm still goes through and propagates.
    do = active & (xnp != 0.0) & ~(xnp < FLOOR * p)
    beta_p = tl.where(alpha >= 0, -nrm, nrm)
    tau = tl.where(do, (beta_p - ap) / tl.where(do, beta_p, 1.0), 0.0)
    scale = tl.where(do, 1.0 / tl.where(do, ap - beta_p, 1.0), 0.0)
    beta = tl.where(do, beta_p * (1.0 / p), alpha)
    return tau, beta, scale, do


@triton.jit
def _sum2(a0, b0, a1, b1):
    return a0 + a1, b0 + b1


@triton.jit
def _build_t(S, taus, NB: tl.constexpr):
    """larft forward/columnwise: T (NB x NB, upper) from S = V^T V and the taus."""
    ii = tl.arange(0, NB)
    T = tl.zeros((NB, NB), dtype=tl.float32)
    for i in range(0, NB):
        s_col = tl.sum(tl.where(ii[None, :] == i, S, 0.0), axis=1)
        tau_i = tl.sum(tl.where(ii == i, taus, 0.0), axis=0)
        t_col = -tau_i * tl.sum(T * s_col[None, :], axis=1)
        t_col = tl.where(ii < i, t_col, tl.where(ii == i, tau_i, 0.0))
        T = tl.where(ii[None, :] == i, t_col[:, None], T)
    return T


@triton.jit
def _t_slot(TW, b, tw_index, n_tw, NB: tl.constexpr):
    """Start of ``TW[b, tw_index]`` (``NB x NB``, row-major)."""
    return TW + (b.to(tl.int64) * n_tw + tw_index) * NB * NB


@triton.jit
def join_upper_blocks(X, R, NB: tl.constexpr, LOG2NB: tl.constexpr):
    """Doubling for the upper triangular ``[NB, NB]`` X with ``X12 = -X11 R12 X22`` on every
    pair of neighbouring diagonal blocks: from X's diagonal (blocks of 1), log2 NB levels of
    two masked ``[NB, NB]`` products instead of NB sequential steps. Only R's strict upper
    part enters. ``X = diag(taus)``, ``R = V^T V``: larft's T (:func:`_build_t`'s result);
    ``X = diag(1 / R_ii)``: ``R^-1``. The products take IEEE precision."""
    ii = tl.arange(0, NB)
    for lvl in tl.static_range(LOG2NB):
        bsz = 1 << lvl
        blk_i = ii[:, None] // bsz
        pair = (blk_i % 2 == 0) & (ii[None, :] // bsz == blk_i + 1)
        X = X - tl.dot(tl.dot(X, tl.where(pair, R, 0.0), input_precision="ieee"), X,
                       input_precision="ieee")
    return X


@triton.jit
def _store_t(TW, b, tw_index, n_tw, T, NB: tl.constexpr):
    ii = tl.arange(0, NB)
    tl.store(_t_slot(TW, b, tw_index, n_tw, NB) + ii[:, None] * NB + ii[None, :], T)


@triton.jit
def _load_w_rows(TW, b, tw_index, n_tw, NB: tl.constexpr):
    """The column steps' ``w`` rows a register panel stored (``WRITE_S``) in its T slot, as
    ``[NB, NB]`` with ``[i, j] = w_j[i]``: ``(V^T V)[i, j]`` for ``i < j``."""
    jj = tl.arange(0, NB)
    return tl.load(_t_slot(TW, b, tw_index, n_tw, NB) + jj[None, :] * NB + jj[:, None])


@triton.jit
def _t_from_w(Sw, taus, keep, NB: tl.constexpr, LOG2NB: tl.constexpr):
    """T from :func:`_load_w_rows`'s tile. Only its strict upper part for the ``keep``
    columns was written for this panel (rows past pw hold an older panel's T or garbage):
    everything else is 0, as in a summed ``V^T V``. By doubling with ``LOG2NB``, else by the
    recurrence."""
    jj = tl.arange(0, NB)
    S = tl.where((jj[:, None] < jj[None, :]) & keep[:, None] & keep[None, :], Sw, 0.0)
    if LOG2NB > 0:
        return join_upper_blocks(tl.where(jj[:, None] == jj[None, :], taus[:, None], 0.0), S,
                                 NB, LOG2NB)
    else:
        return _build_t(S, taus, NB)


@triton.jit
def _column_of(P, jj, rows, j, c):
    """Column ``j`` (row ``c`` of the matrix at its top) of a register tile ``P`` ``[NB,
    rows]``: ``(sel, x, is_top, below, xb)``, ``xb`` its entries below row ``c``."""
    sel = jj == j
    x = tl.sum(tl.where(sel[:, None], P, 0.0), axis=0)
    is_top = rows == c
    below = rows > c
    return sel, x, is_top, below, tl.where(below, x, 0.0)


@triton.jit
def panel_reg_kernel(Ht, TAU, TW, NA, k, m, n, pw, tw_index, n_tw,
                     NB: tl.constexpr, MB: tl.constexpr,
                     HAS_NA: tl.constexpr, WRITE_T: tl.constexpr, WRITE_S: tl.constexpr = False,
                     LOG2NB: tl.constexpr = 0, FLOOR: tl.constexpr = 0.0):
    """Factor columns [k, k+pw) of matrix program_id(0), panel resident in registers.

    Ht: (B, n, m) float32 contiguous; TAU: (B, n); TW: (B, n_tw, NB, NB); NA: (B,) int32.
    NB >= pw (pow2, >= 16), MB >= m - k (pow2). ``WRITE_S``: row j of ``TW[b, tw_index]``
    gets column j's ``w = P^T v_j``, whose entries ``i < j`` are ``(V^T V)[i, j]``: for
    :func:`panel_t_kernel` with ``FROM_S`` (no second pass over V), or, with ``WRITE_T``, for
    this kernel's own T (by doubling when ``LOG2NB`` is ``log2 NB``), instead of ``V^T V``
    from the tile and the NB-step recurrence across the warps. ``FLOOR``: a sub-column
    norm below it gives no reflector (:data:`NEGLIGIBLE_SUBCOLUMN` or 0).
    """
    b, base, na = program_matrix(Ht, NA, m, n, HAS_NA)
    jj = tl.arange(0, NB)
    rows = k + tl.arange(0, MB)
    cols = k + jj
    colvalid = jj < pw
    rowvalid = rows < m
    ptrs = base + cols[:, None] * m + rows[None, :]
    mask = colvalid[:, None] & rowvalid[None, :]
    # Issued before n_active is known (wasted for a panel past it): otherwise the tile's
    # load waits for NA's, once a program (EXPERIMENTS.md P6).
    P = tl.load(ptrs, mask=mask, other=0.0)
    if k < na:
        taus = tl.zeros((NB,), dtype=tl.float32)
        for j in range(0, pw):
            c = k + j
            sel, x, is_top, below, xb = _column_of(P, jj, rows, j, c)
            # alpha and the plain sum of squares in one reduction (one round across warps).
            alpha, ss = tl.reduce((tl.where(is_top, x, 0.0), xb * xb), 0, _sum2)
            if plain_norm_ok(ss):
                xnp, p = plain_norm(alpha, ss)
            else:
                amax = tl.max(tl.abs(xb), axis=0)
                xs, _ = scaled_by_max(xb, amax)
                xnp, p = scaled_norm(alpha, amax, tl.sum(xs * xs, axis=0))
            tau, beta, scale, do = _reflector(alpha, xnp, p, c < na, FLOOR)
            vb = (xb * p) * scale
            # |v| <= 1, so one tile reduction w = P v neither overflows nor underflows.
            v = tl.where(is_top, 1.0, vb)
            w = tl.sum(P * v[None, :], axis=1)
            if WRITE_S:
                # Rows i < j of P are stored reflectors, zero where v is: w[i] = v_i^T v_j.
                tl.store(_t_slot(TW, b, tw_index, n_tw, NB) + j * NB + jj, w)
            P = tl.where((jj > j)[:, None], P - (tau * w)[:, None] * v[None, :], P)
            newcol = tl.where(is_top, beta, tl.where(below & do, vb, x))
            P = tl.where(sel[:, None], newcol[None, :], P)
            taus = tl.where(sel, tau, taus)
        tl.store(ptrs, P, mask=mask)
        tl.store(TAU + b.to(tl.int64) * n + cols, taus, mask=colvalid)
        if WRITE_T:
            keep = colvalid & (cols < na)
            if WRITE_S:
                tl.debug_barrier()  # the w rows other threads stored
                T = _t_from_w(_load_w_rows(TW, b, tw_index, n_tw, NB), taus, keep, NB, LOG2NB)
                tl.debug_barrier()  # every thread has read the rows T overwrites
            else:
                T = _build_t(_vtv(P, rows, cols, keep[:, None] & rowvalid[None, :], T_PREC), taus, NB)
            _store_t(TW, b, tw_index, n_tw, T, NB)
    else:
        tl.store(TAU + b.to(tl.int64) * n + cols, tl.zeros((NB,), dtype=tl.float32), mask=colvalid)


@triton.jit
def _vtv(P, rows, cols, msk, PREC: tl.constexpr):
    """``V V^T`` of stored reflectors ``P`` (``[NB, len(rows)]``: column ``cols[i]``'s rows
    ``rows``): unit diagonal and zeros above it implied, entries outside ``msk`` are 0.
    Products in ``PREC`` (``input_precision``)."""
    V = tl.where(rows[None, :] > cols[:, None], P, tl.where(rows[None, :] == cols[:, None], 1.0, 0.0))
    V = tl.where(msk, V, 0.0)
    return tl.dot(V, tl.trans(V), input_precision=PREC)


@triton.jit
def _stored_vtv(base, cols, keep, k, m, NB: tl.constexpr, CH: tl.constexpr,
                PREC: tl.constexpr):
    """``V^T V`` (NB x NB) of the reflectors stored in columns ``cols`` of one matrix (unit
    diagonal implied, rows ``[k, m)`` read in chunks of CH; columns not in ``keep`` are 0),
    products in ``PREC``."""
    rr = tl.arange(0, CH)
    S = tl.zeros((NB, NB), dtype=tl.float32)
    for r0 in range(k, m, CH):
        r = r0 + rr
        msk = keep[:, None] & (r < m)[None, :]
        S += _vtv(tl.load(base + cols[:, None] * m + r[None, :], mask=msk, other=0.0), r, cols, msk,
                  PREC)
    return S


@triton.jit
def panel_t_kernel(Ht, TAU, TW, NA, k, m, n, pw, tw_index, n_tw,
                   NB: tl.constexpr, CH: tl.constexpr, HAS_NA: tl.constexpr,
                   FROM_S: tl.constexpr = False):
    """``T`` of the panel at columns [k, k+pw) of matrix program_id(0), from the reflectors
    and taus the panel kernel stored (launched with one warp: the ``NB`` steps of the T
    recurrence then reduce inside a warp, where in the panel kernel every step crossed its
    8 warps: 37 % of a 640x512 panel launch went to S and T, EXPERIMENTS.md H8).

    Same arguments as :func:`panel_reg_kernel`; ``V^T V`` is summed over row chunks of CH,
    or with ``FROM_S`` read from ``TW[b, tw_index]`` (what ``panel_reg_kernel`` wrote with
    ``WRITE_S``: ``(V^T V)[i, j]`` at row j, column i), which T then overwrites. T by the
    recurrence: on one warp its steps are intra-warp, and doubling (232 registers against
    117) was slower here (640x512 10.97 against 10.74 ms, EXPERIMENTS.md P8).
    """
    b, base, na = program_matrix(Ht, NA, m, n, HAS_NA)
    jj = tl.arange(0, NB)
    if FROM_S:
        Sw = _load_w_rows(TW, b, tw_index, n_tw, NB)
    if k < na:
        cols = k + jj
        keep = (jj < pw) & (cols < na)
        taus = tl.load(TAU + b.to(tl.int64) * n + cols, mask=jj < pw, other=0.0)
        if FROM_S:
            T = _t_from_w(Sw, taus, keep, NB, 0)
        else:
            T = _build_t(_stored_vtv(base, cols, keep, k, m, NB, CH, T_PREC), taus, NB)
        _store_t(TW, b, tw_index, n_tw, T, NB)


@triton.jit
def _chunk_dots(base, cols, colvalid, c, m, amax, CH: tl.constexpr):
    """``P^T x / s`` over the rows below ``c`` in chunks of ``CH`` (``P``: the panel's
    columns ``cols``, ``x``: column ``c``, ``s``: :func:`scaled_by_max` of ``amax``; 1 for
    the plain sums)."""
    rr = tl.arange(0, CH)
    ds = tl.zeros(cols.shape, dtype=tl.float32)
    for r0 in range(c + 1, m, CH):
        r = r0 + rr
        msk = colvalid[:, None] & (r < m)[None, :]
        P = tl.load(base + cols[:, None] * m + r[None, :], mask=msk, other=0.0)
        xs, _ = scaled_by_max(tl.load(base + c * m + r, mask=r < m, other=0.0), amax)
        ds += tl.sum(P * xs[None, :], axis=1)
    return ds


@triton.jit
def panel_chunked_kernel(Ht, TAU, TW, NA, k, m, n, pw, tw_index, n_tw,
                         NB: tl.constexpr, CH: tl.constexpr,
                         HAS_NA: tl.constexpr, WRITE_T: tl.constexpr, FLOOR: tl.constexpr = 0.0):
    """Factor columns [k, k+pw) of matrix program_id(0), streaming row chunks of CH.

    Same arguments as :func:`panel_reg_kernel`; any ``m``.
    """
    b, base, na = program_matrix(Ht, NA, m, n, HAS_NA)
    jj = tl.arange(0, NB)
    rr = tl.arange(0, CH)
    cols = k + jj
    colvalid = jj < pw
    if k < na:
        taus = tl.zeros((NB,), dtype=tl.float32)
        for j in range(0, pw):
            c = k + j
            sel = jj == j
            top = tl.load(base + cols * m + c, mask=colvalid, other=0.0)
            alpha = tl.sum(tl.where(sel, top, 0.0), axis=0)
            # ds = P^T x below row c, plain; its entry j is x^T x. Only when that is not
            # a plain_norm_ok sum, a max-abs pass and the scaled sums again.
            ds = _chunk_dots(base, cols, colvalid, c, m, 1.0, CH)
            ss = tl.sum(tl.where(sel, ds, 0.0), axis=0)
            s = 1.0
            if plain_norm_ok(ss):
                xnp, p = plain_norm(alpha, ss)
            else:
                amax = tl.zeros((CH,), dtype=tl.float32)
                for r0 in range(c + 1, m, CH):
                    r = r0 + rr
                    x = tl.load(base + c * m + r, mask=r < m, other=0.0)
                    amax = tl.maximum(amax, tl.abs(x))
                amax_s = tl.max(amax, axis=0)
                s = tl.where(amax_s > 0, amax_s, 1.0)
                # ds = P^T x / s: its entry j is x^T x / s, and (x / s)^T (x / s) that over s.
                ds = _chunk_dots(base, cols, colvalid, c, m, amax_s, CH)
                ssq, _ = scaled_by_max(tl.sum(tl.where(sel, ds, 0.0), axis=0), amax_s)
                xnp, p = scaled_norm(alpha, amax_s, ssq)
            tau, beta, scale, do = _reflector(alpha, xnp, p, c < na, FLOOR)
            # P^T v = (s p scale) ds, and s p scale = s p / (p (alpha - beta)) <= 1.
            w = top + ((s * p) * scale) * ds
            newtop = tl.where(jj > j, top - tau * w, tl.where(sel, beta, top))
            tl.store(base + cols * m + c, newtop, mask=colvalid)
            for r0 in range(c + 1, m, CH):
                r = r0 + rr
                msk = colvalid[:, None] & (r < m)[None, :]
                pp = base + cols[:, None] * m + r[None, :]
                P = tl.load(pp, mask=msk, other=0.0)
                x = tl.sum(tl.where(sel[:, None], P, 0.0), axis=0)
                v = (x * p) * scale
                P = tl.where((jj > j)[:, None], P - (tau * w)[:, None] * v[None, :], P)
                P = tl.where(sel[:, None] & do, v[None, :], P)
                tl.store(pp, P, mask=msk)
            taus = tl.where(sel, tau, taus)
            # Other threads of this program read what was just stored.
            tl.debug_barrier()
        tl.store(TAU + b.to(tl.int64) * n + cols, taus, mask=colvalid)
        if WRITE_T:
            S = _stored_vtv(base, cols, colvalid & (cols < na), k, m, NB, CH, T_PREC)
            _store_t(TW, b, tw_index, n_tw, _build_t(S, taus, NB), NB)
    else:
        tl.store(TAU + b.to(tl.int64) * n + cols, tl.zeros((NB,), dtype=tl.float32), mask=colvalid)


@triton.jit
def _grid_barrier(CNT, idx, P):
    """All P programs of one matrix meet here (counter CNT[idx] counts arrivals; zeroed by
    the launcher). Only safe when every program of the grid is resident at once."""
    tl.debug_barrier()
    tl.atomic_add(CNT + idx, 1, sem="release")
    cnt = tl.atomic_add(CNT + idx, 0, sem="acquire")
    while cnt < P:
        cnt = tl.atomic_add(CNT + idx, 0, sem="acquire")
    tl.debug_barrier()


@triton.jit
def panel_split_kernel(Ht, TAU, TW, NA, WS, SP, CNT, k, m, n, pw, tw_index, n_tw, P,
                       NB: tl.constexpr, RB: tl.constexpr, PMAX: tl.constexpr,
                       HAS_NA: tl.constexpr, WRITE_T: tl.constexpr, PAIRS: tl.constexpr = False,
                       FLOOR: tl.constexpr = 0.0):
    """Factor columns [k, k+pw) of matrix program_id(0) with P programs (program_id(1)),
    each holding RB rows of the panel in registers; one grid barrier per column.

    WS: (B, 3, PMAX, SPLIT_WSTR_NB*NB) float32 column partials (two round slots, one
    rescaled round); SP: (B, PMAX, NB, NB) float32 partial V^T V; CNT: (B, 3*n) int32 zeros (one
    arrival counter per column, per rescaled column, and per panel's T).
    Every program reduces the same partials in the same order, so all of them compute the
    same reflector bit for bit. The caller guarantees all B*P programs are resident.
    PAIRS: two columns a barrier (:func:`split_columns_pairs`).
    """
    b, base, na = program_matrix(Ht, NA, m, n, HAS_NA)
    p = tl.program_id(1)
    jj = tl.arange(0, NB)
    rows = k + p * RB + tl.arange(0, RB)
    cols = k + jj
    colvalid = jj < pw
    rowvalid = rows < m
    if k < na:
        ptrs = base + cols[:, None] * m + rows[None, :]
        mask = colvalid[:, None] & rowvalid[None, :]
        P_ = tl.load(ptrs, mask=mask, other=0.0)
        if PAIRS:
            split_columns_pairs(P_, ptrs, mask, TAU, TW, WS, SP, CNT, b, p, na, k, m, n, pw,
                                tw_index, n_tw, P, NB, RB, PMAX, WRITE_T, FLOOR)
        else:
            split_columns(P_, ptrs, mask, TAU, TW, WS, SP, CNT, b, p, na, k, m, n, pw, tw_index,
                          n_tw, P, NB, RB, PMAX, WRITE_T, FLOOR)
    else:
        if p == 0:
            tl.store(TAU + b.to(tl.int64) * n + cols, tl.zeros((NB,), dtype=tl.float32), mask=colvalid)


@triton.jit
def _gather(wsb, slot, part, p, P, WSTR: tl.constexpr, PMAX: tl.constexpr, NB: tl.constexpr):
    """Sum over the P programs of the ``NB`` values at offset ``part`` of round slot ``slot``
    (after the round's barrier); every program sums in the same order, so all get the
    same bits."""
    jj = tl.arange(0, NB)
    pp = tl.arange(0, PMAX)
    pmask = (pp < P)[:, None] & (jj < NB)[None, :]
    allp = wsb + slot * PMAX * WSTR + pp[:, None] * WSTR + part + jj[None, :]
    return tl.sum(tl.load(allp, mask=pmask, other=0.0, volatile=True), axis=0)


@triton.jit
def _gather_max(wsb, slot, part, p, P, WSTR: tl.constexpr, PMAX: tl.constexpr, NB: tl.constexpr):
    """Max over the P programs of the value at offset ``part`` of round slot ``slot`` (each
    program stores its max-abs in the first of its NB lanes, zeros in the rest)."""
    pp = tl.arange(0, PMAX)
    allp = wsb + slot * PMAX * WSTR + pp * WSTR + part
    return tl.max(tl.load(allp, mask=pp < P, other=0.0, volatile=True), axis=0)


@triton.jit
def _top_row(wsb, slot, part, PMAX: tl.constexpr, WSTR: tl.constexpr, NB: tl.constexpr):
    """The panel row stored at offset ``part`` of round slot ``slot`` by program 0: a column
    step's top rows (c, c + 1 < k + NB <= k + RB) are always program 0's, so the other
    programs' zeros need not be summed (the same value, up to the sign of a zero)."""
    return tl.load(wsb + slot * PMAX * WSTR + part + tl.arange(0, NB), volatile=True)


@triton.jit
def _unscaled_ok(amax, dsum):
    """Unscaled dot products are exact enough when the sub-column's max-abs is in
    [1e-15, 1e15] and nothing overflowed."""
    return (amax <= 1.0e15) & ((amax >= 1.0e-15) | (amax == 0.0)) & (dsum < float("inf"))


@triton.jit
def _column_from_sums(P_, taus, j, c, x, xb, D, top, amax, wsb, cntb, p, na, n, P, rows,
                      NB: tl.constexpr, PMAX: tl.constexpr, WSTR: tl.constexpr,
                      FLOOR: tl.constexpr):
    """Reflector of column j (row c) from the round's sums (``D = P^T x`` below row c, ``top``
    = row c, ``amax`` of x below c), with the scaled round when the unscaled sums are not
    exact enough; this program's rows updated. Returns ``(P_, taus, plain, tau, scale, w)``
    (``plain``: no scaled round was needed)."""
    jj = tl.arange(0, NB)
    pp = tl.arange(0, PMAX)
    pmask = (pp < P)[:, None] & (jj < NB)[None, :]
    sel = jj == j
    is_top = rows == c
    below = rows > c
    plain = _unscaled_ok(amax, tl.sum(tl.abs(D), axis=0))
    if plain:
        d, s = scaled_by_max(D, amax)
    else:
        # Its own slot: slower programs may still be reading this round's slot.
        fslot = wsb + 2 * PMAX * WSTR
        xs, s = scaled_by_max(xb, amax)
        tl.store(fslot + p * WSTR + jj, tl.sum(P_ * xs[None, :], axis=1))
        _grid_barrier(cntb, n + c, P)
        d = tl.sum(tl.load(fslot + pp[:, None] * WSTR + jj[None, :], mask=pmask,
                           other=0.0, volatile=True), axis=0)
    alpha = tl.sum(tl.where(sel, top, 0.0), axis=0)
    # d = P^T x / s: its entry j is x^T x / s (as in panel_chunked_kernel).
    ssq, _ = scaled_by_max(tl.sum(tl.where(sel, d, 0.0), axis=0), amax)
    xnp, ps = scaled_norm(alpha, amax, ssq)
    tau, beta, scale, do = _reflector(alpha, xnp, ps, c < na, FLOOR)
    w = top + ((s * ps) * scale) * d
    vb = (xb * ps) * scale
    v = tl.where(is_top, 1.0, vb)
    P_ = tl.where((jj > j)[:, None], P_ - (tau * w)[:, None] * v[None, :], P_)
    newcol = tl.where(is_top, beta, tl.where(below & do, vb, x))
    P_ = tl.where(sel[:, None], newcol[None, :], P_)
    # scale * ps: 1 / (alpha - beta), finite wherever the column pair uses it (plain rounds).
    return P_, tl.where(sel, tau, taus), plain, tau, scale * ps, w


@triton.jit
def _store_partials(own, P_, xb, is_top, NB: tl.constexpr):
    """This program's three partial rows for one column (``xb``: its entries below the
    diagonal, ``is_top``: the diagonal row) at ``own``: ``P_^T xb``, the diagonal row of
    ``P_``, and ``max |xb|`` (in slot 0 of its row)."""
    jj = tl.arange(0, NB)
    tl.store(own + jj, tl.sum(P_ * xb[None, :], axis=1))
    tl.store(own + NB + jj, tl.sum(tl.where(is_top[None, :], P_, 0.0), axis=1))
    tl.store(own + 2 * NB + jj, tl.where(jj == 0, tl.max(tl.abs(xb), axis=0), 0.0))


@triton.jit
def _split_step(P_, taus, j, rnd, wsb, cntb, p, na, k, m, n, P,
                NB: tl.constexpr, RB: tl.constexpr, PMAX: tl.constexpr, WSTR: tl.constexpr,
                FLOOR: tl.constexpr):
    """One column (k + j) of the row-split panel: partial dot products through round slot
    ``rnd % 2``, one grid barrier (two when the column needs the scaled round), the
    reflector, this program's rows updated. Returns ``(P_, taus)``."""
    jj = tl.arange(0, NB)
    rows = k + p * RB + tl.arange(0, RB)
    c = k + j
    sel, x, is_top, below, xb = _column_of(P_, jj, rows, j, c)
    slot = rnd % 2
    own = wsb + slot * PMAX * WSTR + p * WSTR
    _store_partials(own, P_, xb, is_top, NB)
    _grid_barrier(cntb, c, P)
    D = _gather(wsb, slot, 0, p, P, WSTR, PMAX, NB)
    top = _top_row(wsb, slot, NB, PMAX, WSTR, NB)
    amax = _gather_max(wsb, slot, 2 * NB, p, P, WSTR, PMAX, NB)
    P_, taus, _plain, _tau, _scale, _w = _column_from_sums(P_, taus, j, c, x, xb, D, top, amax,
                                                           wsb, cntb, p, na, n, P, rows,
                                                           NB, PMAX, WSTR, FLOOR)
    return P_, taus


@triton.jit
def _split_finish(P_, taus, ptrs, mask, TAU, TW, SP, cntb, b, p, na, k, m, n, pw, tw_index,
                  n_tw, P, NB: tl.constexpr, RB: tl.constexpr, PMAX: tl.constexpr,
                  WRITE_T: tl.constexpr):
    """Store this program's rows of the factored panel, tau (program 0) and, with WRITE_T,
    T from the summed partial ``V^T V`` (one more barrier)."""
    jj = tl.arange(0, NB)
    rows = k + p * RB + tl.arange(0, RB)
    cols = k + jj
    colvalid = jj < pw
    rowvalid = rows < m
    tl.store(ptrs, P_, mask=mask)
    if p == 0:
        tl.store(TAU + b.to(tl.int64) * n + cols, taus, mask=colvalid)
    if WRITE_T:
        keep = colvalid & (cols < na)
        S_p = _vtv(P_, rows, cols, keep[:, None] & rowvalid[None, :], T_PREC)
        spb = SP + b.to(tl.int64) * PMAX * NB * NB
        tl.store(spb + p * NB * NB + jj[:, None] * NB + jj[None, :], S_p)
        _grid_barrier(cntb, 2 * n + k, P)
        if p == 0:
            # A chunk of programs' partials a load: their L2 round trips overlap.
            qq = tl.arange(0, T_SUM_CHUNK)
            tile = jj[None, :, None] * NB + jj[None, None, :]
            S = tl.zeros((NB, NB), dtype=tl.float32)
            for q0 in range(0, P, T_SUM_CHUNK):
                q = q0 + qq
                S += tl.sum(tl.load(spb + q[:, None, None] * NB * NB + tile,
                                    mask=(q < P)[:, None, None], other=0.0, volatile=True), axis=0)
            _store_t(TW, b, tw_index, n_tw, _build_t(S, taus, NB), NB)


#: Programs whose partial V^T V program 0 loads at once when it sums them for T ([4, 32, 32]:
#: 32 values a thread at 4 warps).
T_SUM_CHUNK = tl.constexpr(4)


#: Round-slot width of the split panel's workspace (floats a program): the column pair's
#: six vectors (split_pairs); one column uses three.
SPLIT_WSTR_NB = tl.constexpr(6)


@triton.jit
def split_columns(P_, ptrs, mask, TAU, TW, WS, SP, CNT, b, p, na, k, m, n, pw, tw_index, n_tw, P,
                  NB: tl.constexpr, RB: tl.constexpr, PMAX: tl.constexpr, WRITE_T: tl.constexpr,
                  FLOOR: tl.constexpr = 0.0):
    """The column loop of :func:`panel_split_kernel` on this program's rows ``P_`` (``[NB,
    RB]``, loaded from ``ptrs``/``mask``): reflectors, the stored panel, tau and (WRITE_T) T."""
    WSTR: tl.constexpr = SPLIT_WSTR_NB * NB
    wsb = WS + b.to(tl.int64) * 3 * PMAX * WSTR
    cntb = CNT + b.to(tl.int64) * 3 * n
    taus = tl.zeros((NB,), dtype=tl.float32)
    for j in range(0, pw):
        P_, taus = _split_step(P_, taus, j, j, wsb, cntb, p, na, k, m, n, P, NB, RB, PMAX, WSTR,
                               FLOOR)
    _split_finish(P_, taus, ptrs, mask, TAU, TW, SP, cntb, b, p, na, k, m, n, pw, tw_index,
                  n_tw, P, NB, RB, PMAX, WRITE_T)


#: A column pair's second reflector comes from the round's sums only while its sub-column
#: keeps at least this fraction of its squared norm after the first reflector: the formula
#: |y'|^2 = |y|^2 - 2g x.y + g^2 |x|^2 loses about eps * |y|^2 / |y'|^2 relative, so at 1/4
#: at most a few ulps. Below it the column gets a round of its own.
PAIR_MIN_KEEP = tl.constexpr(0.25)


@triton.jit
def _pair_step(P_, taus, j, rnd, wsb, cntb, p, na, k, m, n, P,
               NB: tl.constexpr, RB: tl.constexpr, PMAX: tl.constexpr, WSTR: tl.constexpr,
               FLOOR: tl.constexpr):
    """Columns k + j and k + j + 1 of the row-split panel with one grid barrier: the round
    carries, besides column j's sums, those of column j + 1 (``P^T y``, row c + 1), and the
    second reflector is derived from them by algebra. Returns ``(P_, taus, done)``, ``done``
    = 1 when only column j was done (it needed the scaled round, or column j + 1's sums are
    out of the unscaled range or would cancel): the caller gives j + 1 a round of its own.
    The same decision in every program: it reads only the summed values."""
    jj = tl.arange(0, NB)
    rows = k + p * RB + tl.arange(0, RB)
    c = k + j
    sel1 = jj == j
    sel2 = jj == j + 1
    x = tl.sum(tl.where(sel1[:, None], P_, 0.0), axis=0)
    y = tl.sum(tl.where(sel2[:, None], P_, 0.0), axis=0)
    is_top = rows == c
    below = rows > c
    is_top2 = rows == c + 1
    below2 = rows > c + 1
    xb = tl.where(below, x, 0.0)
    yb = tl.where(below2, y, 0.0)
    slot = rnd % 2
    own = wsb + slot * PMAX * WSTR + p * WSTR
    _store_partials(own, P_, xb, is_top, NB)
    _store_partials(own + 3 * NB, P_, yb, is_top2, NB)
    _grid_barrier(cntb, c, P)
    D = _gather(wsb, slot, 0, p, P, WSTR, PMAX, NB)
    top = _top_row(wsb, slot, NB, PMAX, WSTR, NB)
    amax = _gather_max(wsb, slot, 2 * NB, p, P, WSTR, PMAX, NB)
    E = _gather(wsb, slot, 3 * NB, p, P, WSTR, PMAX, NB)
    top2 = _top_row(wsb, slot, 4 * NB, PMAX, WSTR, NB)
    amax2 = _gather_max(wsb, slot, 5 * NB, p, P, WSTR, PMAX, NB)
    # Column j, as _split_step.
    P_, taus, plain, tau1, scale1, w1 = _column_from_sums(P_, taus, j, c, x, xb, D, top, amax,
                                                          wsb, cntb, p, na, n, P, rows,
                                                          NB, PMAX, WSTR, FLOOR)
    # Column j + 1 after reflector j, from the sums: y' = y - g x below row c + 1.
    h = tau1 * w1 * scale1
    g = tl.sum(tl.where(sel2, h, 0.0), axis=0)
    x1 = tl.sum(tl.where(sel1, top2, 0.0), axis=0)       # x at row c + 1
    nx2 = tl.sum(tl.where(sel1, D, 0.0), axis=0) - x1 * x1
    ny = tl.sum(tl.where(sel2, E, 0.0), axis=0)
    xy = tl.sum(tl.where(sel1, E, 0.0), axis=0)
    ny2 = ny - 2.0 * g * xy + g * g * nx2
    pair = plain & _unscaled_ok(amax2, tl.sum(tl.abs(E), axis=0)) \
        & (ny2 >= PAIR_MIN_KEEP * ny) & (ny2 < float("inf"))
    done = 1
    if pair:
        a2 = tl.sum(tl.where(sel2, top2, 0.0), axis=0) - g * x1
        xnp2, p2 = scaled_norm(a2, 1.0, tl.maximum(ny2, 0.0))
        tau2, beta2, scale2, do2 = _reflector(a2, xnp2, p2, c + 1 < na, FLOOR)
        scale2 = scale2 * p2  # finite: the pair's sums are in the unscaled range
        col_c1 = top2 - h * x1                             # every column at row c + 1
        S = E - g * (D - top2 * x1) - h * xy + h * g * nx2  # sum over rows > c + 1 of P' y'
        w2 = col_c1 + scale2 * S
        x2 = tl.sum(tl.where(sel2[:, None], P_, 0.0), axis=0)
        yb2 = tl.where(below2, x2, 0.0)
        v2 = tl.where(is_top2, 1.0, yb2 * scale2)
        P_ = tl.where((jj > j + 1)[:, None], P_ - (tau2 * w2)[:, None] * v2[None, :], P_)
        newcol = tl.where(is_top2, beta2, tl.where(below2 & do2, yb2 * scale2, x2))
        P_ = tl.where(sel2[:, None], newcol[None, :], P_)
        taus = tl.where(sel2, tau2, taus)
        done = 2
    return P_, taus, done


@triton.jit
def split_columns_pairs(P_, ptrs, mask, TAU, TW, WS, SP, CNT, b, p, na, k, m, n, pw, tw_index,
                        n_tw, P, NB: tl.constexpr, RB: tl.constexpr, PMAX: tl.constexpr,
                        WRITE_T: tl.constexpr, FLOOR: tl.constexpr = 0.0):
    """:func:`split_columns` with two columns a grid barrier where it can (``_pair_step``):
    half the barriers of a panel. Schedule ``split_pairs`` (EXPERIMENTS.md S3)."""
    WSTR: tl.constexpr = SPLIT_WSTR_NB * NB
    wsb = WS + b.to(tl.int64) * 3 * PMAX * WSTR
    cntb = CNT + b.to(tl.int64) * 3 * n
    taus = tl.zeros((NB,), dtype=tl.float32)
    j = 0
    rnd = 0
    while j < pw:
        if j + 1 < pw:
            P_, taus, done = _pair_step(P_, taus, j, rnd, wsb, cntb, p, na, k, m, n, P,
                                        NB, RB, PMAX, WSTR, FLOOR)
        else:
            P_, taus = _split_step(P_, taus, j, rnd, wsb, cntb, p, na, k, m, n, P,
                                   NB, RB, PMAX, WSTR, FLOOR)
            done = 1
        j += done
        rnd += 1
    _split_finish(P_, taus, ptrs, mask, TAU, TW, SP, cntb, b, p, na, k, m, n, pw, tw_index,
                  n_tw, P, NB, RB, PMAX, WRITE_T)
