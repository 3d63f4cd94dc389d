"""Triton kernel of the per-matrix prescaling (issue 22, :mod:`adaptqr.paths.prescale`).

``scale_kernel``: grid ``(B, G)``; program ``(b, g)`` reads ``EXP[b]`` and, only when it is
not 0, multiplies its share of matrix ``b``'s entries (``Ht`` rows: ``(B, n, m)``
contiguous, column ``j`` of matrix ``b`` at ``Ht[b, j, :]``) by ``2^(SIGN * EXP[b])``, as two
exact multiplications by powers of two (one could leave float32's range). ``UPPER``: only
the entries on and above the diagonal (R). A matrix with ``EXP[b] == 0`` costs one load.
"""

import triton
import triton.language as tl


@triton.jit
def scale_kernel(Ht, EXP, m, n, SIGN: tl.constexpr, UPPER: tl.constexpr,
                 BLOCK_C: tl.constexpr, BLOCK_M: tl.constexpr):
    b = tl.program_id(0)
    e = tl.load(EXP + b) * SIGN
    if e != 0:
        e1 = e // 2
        f1 = tl.exp2(e1.to(tl.float32))
        f2 = tl.exp2((e - e1).to(tl.float32))
        base = Ht + b.to(tl.int64) * m * n
        cc = tl.arange(0, BLOCK_C)
        rr = tl.arange(0, BLOCK_M)
        for c0 in range(tl.program_id(1) * BLOCK_C, n, tl.num_programs(1) * BLOCK_C):
            c = c0 + cc
            for r0 in range(0, m, BLOCK_M):
                r = r0 + rr
                mask = (c < n)[:, None] & (r < m)[None, :]
                if UPPER:
                    mask = mask & (r[None, :] <= c[:, None])
                ptr = base + c[:, None] * m + r[None, :]
                x = tl.load(ptr, mask=mask, other=0.0)
                tl.store(ptr, (x * f1) * f2, mask=mask)
