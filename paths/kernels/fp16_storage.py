"""Triton helpers of the FP16-resident trailing matrix (issue 8; docs/NUMERICS.md "FP16 route").

A matrix routed to FP16 (its scale ``sc = SC[b] > 0``, a power of two from the route probe,
:func:`adaptqr.detectors.classify.fp16_scales`) keeps the part of its trailing matrix that
no panel needs yet in ``C16`` (``(B, n, m)`` float16, laid out as ``Ht``), in units of ``sc``
(its largest column 2-norm at most ``classify.FP16_TARGET`` there, so no entry overflows,
and what underflows is below ``2^-28`` of that norm). One panel's update at column ``k`` then:

* reads its tile from ``C16`` (from ``Ht``, scaled, on the first update, ``k == 0``);
* forms ``W = C^T V`` and ``C -= (W T) V^T`` with float16 operands on tensor cores and FP32
  accumulation (``V`` and ``Y = W T`` rounded to nearest; ``Y`` scaled by a power of two a
  tile first, so it cannot overflow);
* writes the panel's ``R`` rows (``r < k + NB``) and the next panel's columns
  (``c < k + 2 NB``) to ``Ht`` in float32 (those are final, or what the next panel kernel
  reads), everything else back to ``C16``: one float16 rounding an update.

An update of two panels (``Schedule.fp16_group`` 2) does the same with both panels' ``V``
in one pass (:func:`adaptqr.paths.kernels.trailing._apply_pair_f16`); its float32 entries are
then the two panels' R rows and the next two panels' columns.

So the panel kernels, the T kernel and the output never see float16. Only for groups of one
or two panels and matrices with ``n_active == n_nonzero`` (every tile up to ``n_nonzero``
runs every update: nothing ``H`` needs is left behind in ``C16``; the tiles of an exactly-zero
column suffix are never read or written, and ``H`` holds their zeros); the route probe
guarantees the latter.
"""

import triton
import triton.language as tl

#: The trailing kernels' ``F16`` modes: no FP16 route (0); a launch for the FP32-routed
#: matrices only (those with ``SC[b] > 0`` exit at once); a launch for the FP16-routed ones
#: only. Two launches, SKIP then ONLY, give each route its own register allocation and tile
#: (EXPERIMENTS.md N5: one launch branching per matrix was slower, and was removed; N16:
#: for the row-split W / U kernels too).
F16_NONE = tl.constexpr(0)
F16_SKIP = tl.constexpr(1)
F16_ONLY = tl.constexpr(2)
#: ``Y = W T`` is scaled to at most this before its rounding to float16 (65504 is the
#: largest float16; a power of two below it leaves room for log2's rounding).
Y_TARGET = tl.constexpr(16384.0)


@triton.jit
def load_scaled(base, base16, off, amask, src16, sc):
    """The tile at ``off`` in units of ``sc`` (float32 values): from C16 when ``src16``,
    else from Ht times ``sc`` (exact: a power of two)."""
    if src16:
        C = tl.load(base16 + off, mask=amask, other=0.0).to(tl.float32)
    else:
        C = tl.load(base + off, mask=amask, other=0.0) * sc
    return C


@triton.jit
def store_scaled(base, base16, off, amask, C, hot, sc):
    """Entries under ``hot`` back to Ht in float32 (divided by ``sc``), the rest to C16."""
    tl.store(base + off, C * (1.0 / sc), mask=amask & hot)
    tl.store(base16 + off, C.to(tl.float16), mask=amask & ~hot)


@triton.jit
def dot16(a, b):
    """``a @ b`` from float16 operands (rounded to nearest), FP32 accumulation."""
    return tl.dot(a.to(tl.float16), b.to(tl.float16))


@triton.jit
def abs_max(Y):
    return tl.max(tl.max(tl.abs(Y), axis=1), axis=0)


@triton.jit
def y_scale(ymax):
    """The power of two ``ys`` that keeps values up to ``ymax`` below ``Y_TARGET``."""
    return tl.exp2(tl.ceil(tl.log2(tl.maximum(ymax, 1e-30) / Y_TARGET)))


@triton.jit
def y_scaled(Y):
    """``(Y16, ys)``: ``Y / ys`` in float16 and the power of two ``ys`` that keeps it below
    ``Y_TARGET`` (so ``Y16 * ys`` is ``Y`` to float16's rounding)."""
    ys = y_scale(abs_max(Y))
    return (Y * (1.0 / ys)).to(tl.float16), ys


@triton.jit
def hot_mask(cc, r, k, span):
    """``[len(cc), len(r)]``: the entries an update at column ``k`` of ``span`` reflector
    columns (its panels) writes in float32: those panels' R rows and the next update's
    panel columns."""
    return (cc < k + 2 * span)[:, None] | (r < k + span)[None, :]
