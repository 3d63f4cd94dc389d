"""Triton Q formation (``householder_product``): compact-WY panels applied backwards to the
identity's columns, one launch for every panel's ``T`` and one for ``Q`` in each precision
(``BOUNDED``, below).

Storage: ``Ht`` is ``(B, n, m)`` contiguous (row j of ``Ht[b]`` is column j of matrix b, the
layout of geqrf's column-major output), ``TAU`` is ``(B, k)`` contiguous, ``TW`` is
``(B, n_tw, NB, NB)`` (panel p's ``T`` at ``TW[b, p]``, row-major) and ``Qt`` is
``(B, n, m)`` contiguous, ``Q`` transposed (so ``Q`` is column-major, as torch's). With
``HALVES``, ``V16`` and ``VLO`` are ``(B, n_tw * NB, m)`` float16: row j of ``V16[b]`` is
reflector j's high half, of ``VLO[b]`` its low half (``products.f16_halves``).

* :func:`qform_t_kernel`, grid ``(B, n_tw)``: panel p's ``T`` from its stored reflectors by
  larft's recurrence (:func:`adaptqr.paths.kernels.panel._build_t`), one warp a panel
  (not for ``RESIDENT``, which builds ``T`` itself); with ``HALVES`` also the panel's
  halves, so that the "f16x3" products load ``V`` as it is (EXPERIMENTS.md QF28, QF29).
* :func:`qform_kernel`, grid ``(B, cdiv(n, BN))`` (or its programs in one axis, grouped by
  matrices: :func:`_strip_program`): program ``(b, t)`` owns Q's columns
  ``[t*BN, (t+1)*BN)``. Columns of ``Q = H_1 ... H_k I`` are independent, so one program
  applies every panel to its columns, last panel first, in transposed form::

      W  = C^T V        (BN x NB, over rows [k0, m))
      Y  = W T^T
      C^T -= Y V^T

  A panel starting right of the tile's last column leaves the tile's identity columns as
  they are (``V``'s rows above ``k0`` are zero), so it is skipped: the tile at columns
  ``c`` does ``c / NB`` panels' work. ``RESIDENT``: the tile ``[BN, BM]`` (``BM >= m``)
  stays in registers from the identity to the store, with each panel's ``T`` built there;
  otherwise it is written as the identity, and each panel takes one pass over row chunks
  of BM for ``W`` and one to update (:func:`_chunked_update`).

* :func:`apply_qt_kernel`: ``C <- Q^T C`` for other columns (the wide path's), the panels
  first to last with ``T`` as stored.

Products in ``PREC`` ("ieee", "tf32x3" or "f16x3": float32 accuracy on tensor cores; see
:func:`adaptqr.paths.kernels.products._dot`). "f16x3" needs Q's entries, ``V`` and ``Y``
within float16's range: :func:`bounded_reflectors` checks each panel (``OK``), and the
matrices with a panel that fails are formed by a second launch in tf32x3 (``BOUNDED``).

Example: see :func:`adaptqr.qform.triton_householder_product`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from adaptqr.paths.kernels.panel import _build_t, _store_t, _stored_vtv
from adaptqr.paths.kernels.products import (
    F16X3_LO,
    _dot,
    _dot_small,
    dot_halves,
    f16_halves,
    load_halves,
    store_halves,
)
from adaptqr.paths.kernels.trailing import _load_t, _load_v

#: A panel counts as bounded for "f16x3" (:func:`bounded_reflectors`) when its ``T`` has no
#: entry above this: with Q's columns of norm <= e^(1/2) and ``||v|| <= 2.03``, ``Y = W T^T``
#: then stays under ``NB * 3.35 * T_MAX`` = 27443 at NB 32, within float16's 65504.
T_MAX = tl.constexpr(256.0)


@triton.jit
def bounded_reflectors(S, T, taus, k, NB: tl.constexpr):
    """1 (int32) where the panel with ``S = V^T V``, ``T`` and ``taus`` keeps "f16x3"'s
    operands within float16's range, else 0: every reflector orthogonal to within
    ``1 / (2k)`` (``tau`` in [1/2, 5/2], ``|tau ||v||^2 - 2| <= 1/(2k)``, as geqrf's are to
    ~1e-5), so that Q's columns keep norms below ``e^(1/2)`` over all ``k``, or the identity
    (``tau = 0``) with ``||v||^2 <= 4``; and ``|T| <= T_MAX``. torch's
    ``householder_product`` takes any ``tau``."""
    ii = tl.arange(0, NB)
    d = tl.sum(tl.where(ii[:, None] == ii[None, :], S, 0.0), axis=1)
    tol = 0.5 / tl.maximum(k, 1).to(tl.float32)
    ok = ((taus == 0.0) & (d <= 4.0)) | ((taus >= 0.5) & (taus <= 2.5)
                                         & (tl.abs(taus * d - 2.0) <= tol))
    ok = ok & (tl.max(tl.abs(T), axis=1) <= T_MAX)
    return tl.min(ok.to(tl.int32), axis=0)


@triton.jit
def qform_t_kernel(Ht, TAU, TW, OK, V16, VLO, m, n, k, n_tw, p0, NB: tl.constexpr,
                   CH: tl.constexpr, PREC: tl.constexpr, FLAGS: tl.constexpr = False,
                   HALVES: tl.constexpr = 0):
    """``TW[b, p]``: the ``T`` of the reflectors in columns ``[p*NB, p*NB + NB)`` of matrix b
    (columns at or past ``k`` count as ``tau = 0``: a zero column of ``T``), for the panels
    ``p = p0 + program_id(1)``; ``V^T V``'s products in ``PREC``. ``FLAGS``: also
    ``OK[b, p]`` (``(B, n_tw)`` int32), :func:`bounded_reflectors` of the panel.
    ``HALVES`` (a multiple of ``NB``, or 0): also the panel's ``V^T`` as float16 halves
    (:func:`adaptqr.paths.kernels.products.f16_halves`) in ``V16`` and ``VLO`` ``(B, n_tw *
    NB, m)``, rows ``[p*NB, m)`` of each reflector and the zeros above them from the last
    multiple of ``HALVES``, its unit diagonal written out (for "f16x3" products that load
    them as they are, a panel of ``HALVES`` reflectors at a time, EXPERIMENTS.md QF28)."""
    b = tl.program_id(0)
    p = p0 + tl.program_id(1)
    k0 = p * NB
    jj = tl.arange(0, NB)
    cols = k0 + jj
    keep = cols < k
    base = Ht + b.to(tl.int64) * n * m
    taus = tl.load(TAU + b.to(tl.int64) * k + cols, mask=keep, other=0.0)
    if HALVES:
        rr = tl.arange(0, CH)
        half = (b.to(tl.int64) * n_tw * NB + cols[:, None]) * m
        S = tl.zeros((NB, NB), dtype=tl.float32)
        for r0 in range(k0 // HALVES * HALVES, m, CH):
            r = r0 + rr
            Vt = _load_v(base, k0, r, m, m, k, NB, k - k0)
            S += tl.dot(Vt, tl.trans(Vt), input_precision=PREC)
            store_halves(V16 + half, VLO + half, r[None, :], Vt, (r < m)[None, :])
    else:
        S = _stored_vtv(base, cols, keep, k0, m, NB, CH, PREC)
    T = _build_t(S, taus, NB)
    _store_t(TW, b, p, n_tw, T, NB)
    if FLAGS:
        tl.store(OK + b.to(tl.int64) * n_tw + p, bounded_reflectors(S, T, taus, k, NB))


@triton.jit
def selected(OK, b, n_tw, BOUNDED: tl.constexpr, NTW: tl.constexpr):
    """Whether matrix ``b`` is this launch's: every matrix for ``BOUNDED`` 0, those whose
    ``n_tw`` panels all are :func:`bounded_reflectors` (``OK[b, :]``) for 1, the others
    for 2. ``NTW`` (a power of two at least ``n_tw``, or 0): the flags in one vector load,
    else one by one (EXPERIMENTS.md QF31)."""
    go = True
    if BOUNDED != 0:
        if NTW:
            jj = tl.arange(0, NTW)
            bounded = tl.min(tl.load(OK + b.to(tl.int64) * n_tw + jj, mask=jj < n_tw, other=1),
                             axis=0)
        else:
            bounded = tl.full((), 1, tl.int32)
            for p in range(0, n_tw):
                bounded = bounded & tl.load(OK + b.to(tl.int64) * n_tw + p)
        go = (bounded != 0) if BOUNDED == 1 else (bounded == 0)
    return go


@triton.jit
def _strip_program(B, S, GROUP: tl.constexpr):
    """``(b, t)``, the matrix and strip of this program, the strips at the right (the most
    panels) first. ``GROUP`` 0: grid ``(B, S)``, every matrix's strip ``t`` before any
    matrix's strip ``t - 1``; else grid ``(B * S,)`` in groups of ``GROUP`` matrices, each
    group's strips in that order before the next group's, so that the programs running side
    by side are few matrices' strips and read their ``V`` from L2 (QF26)."""
    if GROUP == 0:
        b = tl.program_id(0)
        t = S - 1 - tl.program_id(1)
    else:
        lin = tl.program_id(0)
        g = lin // (GROUP * S)
        size = tl.minimum(B - g * GROUP, GROUP)
        idx = lin - g * GROUP * S
        b = g * GROUP + idx % size
        t = S - 1 - idx // size
    return b, t


@triton.jit
def qform_kernel(Ht, TAU, TW, OK, V16, VLO, Qt, m, n, k, n_tw, B, NB: tl.constexpr,
                 BN: tl.constexpr, BM: tl.constexpr, RESIDENT: tl.constexpr, PREC: tl.constexpr,
                 BOUNDED: tl.constexpr = 0, GROUP: tl.constexpr = 0,
                 HALVES: tl.constexpr = False, NTW: tl.constexpr = 0):
    """``Qt[b, c, :] = (H_1 ... H_k e_c)^T`` for the tile's columns c (see the module doc).
    ``RESIDENT`` builds each panel's ``T`` from the panel it holds whole (``TW`` and ``OK``
    unread: one launch in all); otherwise ``TW`` holds :func:`qform_t_kernel`'s (``TAU``
    unread). ``BOUNDED`` (not ``RESIDENT``): 1 forms only the matrices whose panels are all
    :func:`bounded_reflectors` (``OK``), 2 only the others, 0 every matrix: "f16x3" takes
    the first launch, tf32x3 the second, each one code path (a branch between the two
    precisions in one program cost 20 % at 640x512, run 1946). ``HALVES`` (with "f16x3",
    not ``RESIDENT``): ``V`` from :func:`qform_t_kernel`'s halves (:func:`_update_halves`).
    ``NTW``: :func:`selected`'s."""
    b, t = _strip_program(B, tl.cdiv(n, BN), GROUP)
    if selected(OK, b, n_tw, BOUNDED, NTW):
        base = Ht + b.to(tl.int64) * n * m
        qbase = Qt + b.to(tl.int64) * n * m
        cc = t * BN + tl.arange(0, BN)
        ccmask = cc < n
        rr = tl.arange(0, BM)
        # The last panel that reaches the tile's last column.
        p_top = tl.minimum(tl.cdiv(k, NB), (t * BN + BN - 1) // NB + 1) - 1
        if RESIDENT:
            amask = ccmask[:, None] & (rr < m)[None, :]
            Ct = tl.where(cc[:, None] == rr[None, :], 1.0, 0.0)
            jj = tl.arange(0, NB)
            for i in range(0, p_top + 1):
                k0 = (p_top - i) * NB
                Vt = _load_v(base, k0, rr, m, m, k, NB, k - k0)
                taus = tl.load(TAU + b.to(tl.int64) * k + k0 + jj, mask=k0 + jj < k, other=0.0)
                T = _build_t(tl.dot(Vt, tl.trans(Vt), input_precision="ieee"), taus, NB)
                Y = _dot_small(_dot(Ct, tl.trans(Vt), PREC), tl.trans(T), PREC)
                Ct -= _dot(Y, Vt, PREC)
            tl.store(qbase + cc[:, None] * m + rr[None, :], Ct, mask=amask)
        else:
            for r0 in range(0, m, BM):
                r = r0 + rr
                tl.store(qbase + cc[:, None] * m + r[None, :],
                         tl.where(cc[:, None] == r[None, :], 1.0, 0.0),
                         mask=ccmask[:, None] & (r < m)[None, :])
            tl.debug_barrier()
            for i in range(0, p_top + 1):
                k0 = (p_top - i) * NB
                if HALVES and PREC == "f16x3":
                    _update_halves(V16, VLO, qbase, cc, ccmask, b, k0, m, TW, n_tw, NB, BN, BM)
                else:
                    _chunked_update(base, qbase, cc, ccmask, k0, m, m, k, TW, b, n_tw, True,
                                    NB, BN, BM, PREC)


@triton.jit
def column_vtc(base, cbase, cc, ccmask, k0, m, cstride, k, NB: tl.constexpr, BN: tl.constexpr,
               BM: tl.constexpr, PREC: tl.constexpr):
    """``W = C^T V`` (``[BN, NB]``) of the ``NB`` reflectors at ``k0`` (matrix at ``base``) and
    the columns ``cc`` of ``C`` (row ``c`` of ``C^T`` at ``cbase + c * cstride``), summed over
    rows ``[k0, m)`` in chunks of ``BM``, products in ``PREC``."""
    rr = tl.arange(0, BM)
    W = tl.zeros((BN, NB), dtype=tl.float32)
    for r0 in range(k0, m, BM):
        r = r0 + rr
        Ct = tl.load(cbase + cc[:, None] * cstride + r[None, :],
                     mask=ccmask[:, None] & (r < m)[None, :], other=0.0)
        W += _dot(Ct, tl.trans(_load_v(base, k0, r, m, m, k, NB, k - k0)), PREC)
    return W


@triton.jit
def column_vtc_halves(V16, VLO, cbase, cc, ccmask, b, k0, m, kp, NB: tl.constexpr,
                      BN: tl.constexpr, BM: tl.constexpr):
    """:func:`column_vtc` in "f16x3" (``C``'s rows of ``m`` entries) with ``V`` from
    :func:`qform_t_kernel`'s halves (``kp`` reflector slots a matrix; matrix ``b``'s slots
    ``[k0, k0 + NB)``): only ``C``'s chunks are split in the program; the small products
    summed apart over every chunk, and added once."""
    rr = tl.arange(0, BM)
    half = (b.to(tl.int64) * kp + k0 + tl.arange(0, NB)[None, :]) * m
    W = tl.zeros((BN, NB), dtype=tl.float32)
    small = tl.zeros((BN, NB), dtype=tl.float32)
    for r0 in range(k0, m, BM):
        r = r0 + rr
        c_hi, c_lo = f16_halves(tl.load(cbase + cc[:, None] * m + r[None, :],
                                        mask=ccmask[:, None] & (r < m)[None, :], other=0.0))
        v_hi, v_lo = load_halves(V16 + half, VLO + half, r[:, None], (r < m)[:, None])
        small = tl.dot(c_lo, v_hi, tl.dot(c_hi, v_lo, small))
        W = tl.dot(c_hi, v_hi, W)
    return W + small * (1.0 / F16X3_LO)


@triton.jit
def _update_halves(V16, VLO, cbase, cc, ccmask, b, k0, m, TW, n_tw, NB: tl.constexpr,
                   BN: tl.constexpr, BM: tl.constexpr):
    """:func:`_chunked_update` of Q formation (``C^T -= (C^T V) T^T V^T``, ``C``'s rows of
    ``m`` entries) in "f16x3" with ``V`` from :func:`qform_t_kernel`'s halves: ``-Y``'s
    halves made once, each row chunk's product loading ``V``'s as they are into ``C``'s
    chunk as its accumulator."""
    kp = n_tw * NB
    W = column_vtc_halves(V16, VLO, cbase, cc, ccmask, b, k0, m, kp, NB, BN, BM)
    Y = tl.dot(W, tl.trans(_load_t(TW, b, k0 // NB, n_tw, NB)), input_precision="tf32x3")
    y_hi, y_lo = f16_halves(-Y)
    rr = tl.arange(0, BM)
    vrow = (b.to(tl.int64) * kp + k0 + tl.arange(0, NB)[:, None]) * m
    for r0 in range(k0, m, BM):
        r = r0 + rr
        cptr = cbase + cc[:, None] * m + r[None, :]
        cmask = ccmask[:, None] & (r < m)[None, :]
        v_hi, v_lo = load_halves(V16 + vrow, VLO + vrow, r[None, :], (r < m)[None, :])
        Ct = dot_halves(y_hi, y_lo, v_hi, v_lo, tl.load(cptr, mask=cmask, other=0.0))
        tl.store(cptr, Ct, mask=cmask)
    # The next panel re-reads rows this program just wrote.
    tl.debug_barrier()


@triton.jit
def _chunked_update(base, cbase, cc, ccmask, k0, m, cstride, k, TW, b, n_tw, TRANS_T: tl.constexpr,
                    NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, PREC: tl.constexpr):
    """``C^T -= (C^T V) T' V^T`` for the panel at ``k0`` on the columns ``cc`` of ``C`` (row
    ``c`` of ``C^T`` at ``cbase + c * cstride``, rows ``[k0, m)``), ``T' = T^T`` with
    ``TRANS_T`` (``Q C``: Q formation) else ``T`` (``Q^T C``): one pass over row chunks for
    ``W``, one to update."""
    rr = tl.arange(0, BM)
    W = column_vtc(base, cbase, cc, ccmask, k0, m, cstride, k, NB, BN, BM, PREC)
    T = _load_t(TW, b, k0 // NB, n_tw, NB)
    if TRANS_T:
        T = tl.trans(T)
    Y = _dot_small(W, T, PREC)
    for r0 in range(k0, m, BM):
        r = r0 + rr
        cptr = cbase + cc[:, None] * cstride + r[None, :]
        cmask = ccmask[:, None] & (r < m)[None, :]
        Ct = tl.load(cptr, mask=cmask, other=0.0)
        Ct -= _dot(Y, _load_v(base, k0, r, m, m, k, NB, k - k0), PREC)
        tl.store(cptr, Ct, mask=cmask)
    # The next panel re-reads rows this program just wrote.
    tl.debug_barrier()


@triton.jit
def apply_qt_kernel(Ht, TW, C, m, n, k, nc, n_tw, c_batch, c_col, p0, p1,
                    NB: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, PREC: tl.constexpr):
    """``C <- Q^T C`` in place, ``Q = H_1 ... H_k`` from ``Ht``'s reflectors and ``TW``'s
    ``T`` (:func:`qform_t_kernel`), or the part of it from panels ``p0`` to ``p1 - 1``;
    ``C``: ``nc`` columns of ``m`` contiguous rows (column j of matrix b at
    ``C + b * c_batch + j * c_col``). Grid ``(B, cdiv(nc, BN))``: program ``(b, t)`` applies
    the panels, first to last, to its ``BN`` columns."""
    b = tl.program_id(0)
    t = tl.program_id(1)
    base = Ht + b.to(tl.int64) * n * m
    cbase = C + b.to(tl.int64) * c_batch
    cc = t * BN + tl.arange(0, BN)
    ccmask = cc < nc
    for p in range(p0, p1):
        _chunked_update(base, cbase, cc, ccmask, p * NB, m, c_col, k, TW, b, n_tw, False,
                        NB, BN, BM, PREC)
