"""Triton Q formation in wide panels (``householder_product`` of many or large matrices):
each panel of ``NBW`` reflectors (a few of the strip kernel's ``SB``-column panels) applied
to Q's trailing block by two batched GEMM-shaped launches, instead of one strip program
applying every ``SB``-column panel to its columns (:mod:`adaptqr.paths.kernels.qform`).

Storage as there: ``Ht`` ``(B, n, m)`` (row j of ``Ht[b]`` is column j of matrix b), ``Qt``
``(B, n, m)`` (Q transposed), ``TW`` ``(B, n_tw, SB, SB)`` the ``SB``-column panels' ``T``
(:func:`adaptqr.paths.kernels.qform.qform_t_kernel`), ``n_tw`` covering whole wide panels
(a sub-panel past ``k`` has a zero ``T``, so a zero ``Y``). Work buffers: ``S`` ``(B, P, NBW,
NBW)`` each wide panel's ``V^T V``, ``Y`` ``(B, n, NBW)``; for "f16x3", float16 halves
(:func:`adaptqr.paths.kernels.products.f16_halves`) of ``V^T`` (``V16``, ``VLO``: ``(B, n_tw *
SB, m)``, :func:`adaptqr.paths.kernels.qform.qform_t_kernel`'s) and of ``-Y`` (``Y16``,
``YLO``: ``Y``'s shape).

Q is formed backwards, ``Qt`` starting as the identity; the wide panel at ``k0`` (sub-panels
``0 .. NSUB-1`` of ``SB`` columns, applied last to first) updates ``Qt[k0:, k0:]``:

* :func:`wide_vtv_kernel`, grid ``(B, P)``, once: every wide panel's ``S = V^T V``.
* :func:`wide_w_kernel`, grid ``(cdiv(n - k0, BC), B)``: ``W = C^T V`` over the rows, then
  the sub-panels' ``Y`` by the recurrence (``S_ji = V_j^T V_i``)::

      Y_i = (W_i - sum_{j > i} Y_j S_ji) T_i^T

  (the ``W`` sub-panel ``i`` would see after the sub-panels right of it). ``Y`` holds the
  result, ``C^T (I - V T V^T)^T = C^T - Y V^T`` for the wide panel's whole ``T``, which is
  never formed (and ``-Y``'s halves).
* :func:`wide_update_kernel`, grid ``(cdiv(n - k0, BC), cdiv(m - k0, BR), B)``: ``C^T -=
  Y V^T`` tile by tile, one product of inner size ``NBW``.

Each pass over Q's trailing block serves ``NBW`` reflectors (the strip kernel's two passes
serve ``SB``), and each launch's programs of one matrix run side by side (column tile
first), so ``V`` and ``Y`` are read from L2. The two big products in ``PREC``: "f16x3" for
the matrices whose panels all are bounded (their ``Y`` is the strip kernel's, sub-panel by
sub-panel, within float16's range), each launch run twice as the strip kernel's
(``BOUNDED``), or tf32x3 for every matrix; the recurrence's small ones in tf32x3. In
"f16x3" the operands' halves are made once and stored, so that the update's product
loads them as they are, ``C``'s tile its accumulator (EXPERIMENTS.md QF28: made in every
program, their conversions and the ``V`` triangle's selects held the update to 0.95
instructions a cycle at 18 % occupancy).

Example: see :func:`adaptqr.qform.triton_householder_product`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from adaptqr.paths.kernels.panel import _stored_vtv
from adaptqr.paths.kernels.products import _dot, dot_halves, load_halves, store_halves
from adaptqr.paths.kernels.qform import column_vtc, column_vtc_halves, selected
from adaptqr.paths.kernels.trailing import _load_t, _load_v


@triton.jit
def wide_vtv_kernel(Ht, S, m, n, k, P, NBW: tl.constexpr, CH: tl.constexpr,
                    PREC: tl.constexpr):
    """``S[b, p] = V^T V`` (``[NBW, NBW]``) of the wide panel ``p = program_id(1)`` of matrix
    ``b = program_id(0)`` (reflectors at or past ``k``: zero columns), rows in chunks of
    ``CH``."""
    b = tl.program_id(0)
    p = tl.program_id(1)
    k0 = p * NBW
    jj = tl.arange(0, NBW)
    cols = k0 + jj
    base = Ht + b.to(tl.int64) * n * m
    Sv = _stored_vtv(base, cols, cols < k, k0, m, NBW, CH, PREC)
    slot = S + (b.to(tl.int64) * P + p) * NBW * NBW
    tl.store(slot + jj[:, None] * NBW + jj[None, :], Sv)


@triton.jit
def _column_tile(Ht, Qt, Y, b, m, n, k0, NBW: tl.constexpr, BC: tl.constexpr):
    """Matrix ``b``'s reflectors, ``Qt`` and ``Y`` (their starts), and the columns ``cc`` of
    column tile ``program_id(0)`` from ``k0`` with their mask."""
    cc = k0 + tl.program_id(0) * BC + tl.arange(0, BC)
    return (Ht + b.to(tl.int64) * n * m, Qt + b.to(tl.int64) * n * m,
            Y + b.to(tl.int64) * n * NBW, cc, cc < n)


@triton.jit
def wide_w_kernel(Ht, TW, OK, S, Qt, Y, V16, VLO, Y16, YLO, m, n, k, n_tw, P, k0,
                  NBW: tl.constexpr, SB: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr,
                  PREC: tl.constexpr, BOUNDED: tl.constexpr = 0, NTW: tl.constexpr = 0):
    """``Y[b, c, :]`` for the wide panel at ``k0`` and the columns ``c`` of tile
    ``program_id(0)`` (from ``k0``) of matrix ``program_id(1)``: ``W = C^T V`` over rows
    ``[k0, m)`` in chunks of ``BK``, stored, then overwritten sub-panel by sub-panel, last
    first, by the recurrence of the module doc. ``BOUNDED``: the matrices this launch
    forms (:func:`adaptqr.paths.kernels.qform.selected`, with ``NTW``). "f16x3": ``V`` from
    its halves, and ``-Y``'s halves stored too, for :func:`wide_update_kernel`."""
    b = tl.program_id(1)
    if not selected(OK, b, n_tw, BOUNDED, NTW):
        return
    base, qbase, _, cc, ccmask = _column_tile(Ht, Qt, Y, b, m, n, k0, NBW, BC)
    if PREC == "f16x3":
        W = column_vtc_halves(V16, VLO, qbase, cc, ccmask, b, k0, m, n_tw * SB, NBW, BC, BK)
    else:
        W = column_vtc(base, qbase, cc, ccmask, k0, m, m, k, NBW, BC, BK, PREC)
    # The tile's rows of Y (and of -Y's halves, laid out alike).
    yrow = b.to(tl.int64) * n * NBW + cc[:, None] * NBW
    jw = tl.arange(0, NBW)
    tl.store(Y + yrow + jw[None, :], W, mask=ccmask[:, None] & (jw < NBW)[None, :])
    # Each sub-panel's step reads slots other threads of the program wrote.
    tl.debug_barrier()
    NSUB: tl.constexpr = NBW // SB
    js = tl.arange(0, SB)
    smask = ccmask[:, None] & (js < SB)[None, :]
    smat = S + (b.to(tl.int64) * P + k0 // NBW) * NBW * NBW
    for i in tl.static_range(NSUB - 1, -1, -1):
        yoff = yrow + i * SB + js[None, :]
        X = tl.load(Y + yoff, mask=smask, other=0.0)
        for j in tl.static_range(i + 1, NSUB):
            Yj = tl.load(Y + yrow + j * SB + js[None, :], mask=smask, other=0.0)
            Sji = tl.load(smat + (j * SB + js[:, None]) * NBW + i * SB + js[None, :])
            X -= tl.dot(Yj, Sji, input_precision="tf32x3")
        T = _load_t(TW, b, k0 // SB + i, n_tw, SB)
        Yi = tl.dot(X, tl.trans(T), input_precision="tf32x3")
        tl.store(Y + yoff, Yi, mask=smask)
        if PREC == "f16x3":
            store_halves(Y16, YLO, yoff, -Yi, smask)
        tl.debug_barrier()


@triton.jit
def wide_update_kernel(Ht, OK, Y, Qt, V16, VLO, Y16, YLO, m, n, k, n_tw, k0,
                       NBW: tl.constexpr, SB: tl.constexpr, BC: tl.constexpr, BR: tl.constexpr,
                       PREC: tl.constexpr, BOUNDED: tl.constexpr = 0,
                       NTW: tl.constexpr = 0):
    """``C^T -= Y V^T`` on the tile ``(program_id(0), program_id(1))`` of columns and rows
    from ``k0`` of matrix ``program_id(2)``: in "f16x3" one product of inner size ``NBW``
    from the halves of ``-Y`` and ``V`` as loaded, ``C``'s tile its accumulator; else one
    sub-panel of ``SB`` at a time (a product of inner size ``NBW`` at once held twice the
    registers). ``BOUNDED`` and ``NTW`` as :func:`wide_w_kernel`'s."""
    b = tl.program_id(2)
    if not selected(OK, b, n_tw, BOUNDED, NTW):
        return
    base, qbase, ybase, cc, ccmask = _column_tile(Ht, Qt, Y, b, m, n, k0, NBW, BC)
    r = k0 + tl.program_id(1) * BR + tl.arange(0, BR)
    cptr = qbase + cc[:, None] * m + r[None, :]
    cmask = ccmask[:, None] & (r < m)[None, :]
    Ct = tl.load(cptr, mask=cmask, other=0.0)
    if PREC == "f16x3":
        jw = tl.arange(0, NBW)
        yoff = b.to(tl.int64) * n * NBW + cc[:, None] * NBW + jw[None, :]
        voff = (b.to(tl.int64) * n_tw * SB + k0 + jw[:, None]) * m + r[None, :]
        y_hi, y_lo = load_halves(Y16, YLO, yoff, ccmask[:, None])
        v_hi, v_lo = load_halves(V16, VLO, voff, (r < m)[None, :])
        Ct = dot_halves(y_hi, y_lo, v_hi, v_lo, Ct)
    else:
        js = tl.arange(0, SB)
        for i in tl.static_range(NBW // SB):
            Yi = tl.load(ybase + cc[:, None] * NBW + i * SB + js[None, :],
                         mask=ccmask[:, None] & (js < SB)[None, :], other=0.0)
            Ct -= _dot(Yi, _load_v(base, k0 + i * SB, r, m, m, k, SB, k - k0 - i * SB), PREC)
    tl.store(cptr, Ct, mask=cmask)
