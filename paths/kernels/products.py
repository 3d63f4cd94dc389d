"""Products at float32 accuracy on tensor cores, as the trailing updates and Q formation
take them: :func:`_dot` in a named precision ("ieee", "tf32", "tf32x3" or "f16x3", never a
global flag), :func:`_dot_small` for the small products nothing bounds, and "f16x3" from
float16 halves, split in the program (:func:`_dot_f16x3`) or made once, stored and loaded
(:func:`f16_halves`, :func:`store_halves`, :func:`load_halves`, :func:`dot_halves`;
EXPERIMENTS.md T10, QF28).

Example (interpreter or GPU)::

    c = _dot(a, b, "f16x3")                 # a: [M, K], b: [K, N] within float16's range
    a_hi, a_lo = f16_halves(a)
    b_hi, b_lo = f16_halves(b)
    c = dot_halves(a_hi, a_lo, b_hi, b_lo, c0)   # c0 + a @ b
"""

from __future__ import annotations

import triton
import triton.language as tl

#: ``"f16x3"``'s low halves are ``(x - f16(x)) * F16X3_LO``: at most 2^-11 of ``|x|`` before
#: the factor, so float16 holds them at the high halves' scale, not near its subnormals.
F16X3_LO = tl.constexpr(2048.0)


@triton.jit
def _dot(a, b, PREC: tl.constexpr):
    """``a @ b`` with FP32 accumulation, operands in PREC ("ieee", "tf32", "tf32x3" or
    "f16x3": :func:`_dot_f16x3`, whose operands must lie within float16's range)."""
    # One return: Triton generates the code after a constexpr branch's return too.
    if PREC == "f16x3":
        c = _dot_f16x3(a, b)
    else:
        c = tl.dot(a, b, input_precision=PREC)
    return c


@triton.jit
def _dot_small(a, b, PREC: tl.constexpr):
    """:func:`_dot` for the ``[BN, NB] x [NB, NB]`` products with ``T`` or ``G``, whose range
    nothing bounds: tf32x3 where PREC is "f16x3" (they are a small part of an update's
    work)."""
    if PREC == "f16x3":
        c = tl.dot(a, b, input_precision="tf32x3")
    else:
        c = tl.dot(a, b, input_precision=PREC)
    return c


@triton.jit
def _dot_f16x3(a, b):
    """``a @ b`` from float16 tensor-core products at float32 accuracy: each operand as a
    rounded float16 high half plus a float16 low half (22 significant bits, as tf32x3's two
    tf32 halves), the three products that matter summed small ones first. float16's
    products run at twice tf32's rate. The operands must lie below 65504; what lies under
    2^-14 keeps an absolute accuracy of 2^-36 (float16's subnormal spacing in the low half).
    Scaling each tile here to its largest entry cost most of the gain (EXPERIMENTS.md T10):
    the callers bound their operands instead (:func:`y_unit`)."""
    a_hi, a_lo = f16_halves(a)
    b_hi, b_lo = f16_halves(b)
    small = tl.dot(a_lo, b_hi, tl.dot(a_hi, b_lo))
    return tl.dot(a_hi, b_hi, small * (1.0 / F16X3_LO))


@triton.jit
def f16_halves(x):
    """``(hi, lo)``, float16: ``x``'s rounded high half and its low half times
    ``F16X3_LO`` (:func:`_dot_f16x3`'s operands; ``x`` within float16's range)."""
    hi = x.to(tl.float16)
    return hi, ((x - hi.to(tl.float32)) * F16X3_LO).to(tl.float16)


@triton.jit
def store_halves(HI, LO, off, x, mask):
    """``x``'s :func:`f16_halves` stored at ``HI + off`` and ``LO + off`` (two float16
    arrays of one layout)."""
    hi, lo = f16_halves(x)
    tl.store(HI + off, hi, mask=mask)
    tl.store(LO + off, lo, mask=mask)


@triton.jit
def load_halves(HI, LO, off, mask):
    """``(hi, lo)`` as :func:`store_halves` left them (zero where ``mask`` is False)."""
    return tl.load(HI + off, mask=mask, other=0.0), tl.load(LO + off, mask=mask, other=0.0)


@triton.jit
def dot_halves(a_hi, a_lo, b_hi, b_lo, acc):
    """``acc + a @ b`` ("f16x3", FP32 accumulation) from both operands' :func:`f16_halves`,
    made beforehand: loaded as they are, they feed the tensor cores with no conversion in
    the program (EXPERIMENTS.md QF28)."""
    small = tl.dot(a_lo, b_hi, tl.dot(a_hi, b_lo))
    return tl.dot(a_hi, b_hi, acc + small * (1.0 / F16X3_LO))
