"""``adaptqr.householder_product``: Q from geqrf's Householder vectors, a drop-in for
``torch.linalg.householder_product``, blocked in compact WY (issue 25).

torch forms Q on CUDA with a host loop of cuSOLVER ``orgqr`` calls, one a matrix (64x512:
about 32 ms). Forming Q has no serial chain of column reductions: it is LAPACK's ``orgqr``
order, the panels applied backwards to the identity, each as
``Q[k:, k:] -= V (T (V^T Q[k:, k:]))``, and every column of Q is independent of the others.

- CUDA float32 inputs that need no gradient take :func:`triton_householder_product`
  (:mod:`adaptqr.paths.kernels.qform`): every panel's ``T`` by LAPACK ``larft``'s
  recurrence in one launch, then launches in which each program applies every panel to
  its own identity columns: one in "f16x3" for the matrices whose reflectors are bounded,
  one in tf32x3 for the others (for columns of at most :data:`QFORM_RESIDENT_ROWS` rows one
  tf32x3 launch in all). Products at float32 accuracy on tensor cores (:data:`QFORM_PREC`),
  whatever ``torch.set_float32_matmul_precision`` says ("f16x3" from the reflectors'
  float16 halves, made once by the ``T`` launch, from :data:`QFORM_HALVES_MIN_N` columns).
  Where :func:`wide_width` says, the same in wide panels of :data:`QFORM_WIDE_NB`
  reflectors, each by two GEMM-shaped launches over Q's trailing block
  (:mod:`adaptqr.paths.kernels.qform_wide`).
- :func:`blocked_householder_product` is the same blocked product in batched torch ops
  (``T = (I + diag(tau) striu(V^T V))^{-1} diag(tau)``, the inverse of ``larft``'s
  ``T^{-1}`` without a ``1/tau``), for any device and dtype, at full float32 precision.
  In panels of :data:`QFORM_BLAS_NB` columns it forms Q for few large matrices that the
  wide panels do not take, where the kernel's strips are few and long (:func:`blas_width`;
  batch 1 at 3072-4096 3x faster, docs/EXPERIMENTS.md QF7), and for one matrix of
  512-2048 columns in one panel (QF9); it is also the CPU stand-in when a test forces the
  route.
- Q of few small matrices (:func:`small_q_preferred`: at most 64 rows, the bounds of the
  ``small`` geqrf path) takes :func:`small_householder_product`: one cupy launch, a warp a
  pair of columns, the inputs read through their strides (EXPERIMENTS.md QF24; the knob
  ``qform_small_cuda`` forces it on or off).
- Everything else goes to torch's function (:mod:`adaptqr.originals`), so dtypes, devices,
  errors and autograd are torch's own.

:func:`apply_qt` (``C <- Q^T C``, the wide path's other columns) uses the same kernels.

Example::

    >>> import torch, adaptqr
    >>> from adaptqr.qform import blocked_householder_product
    >>> A = torch.randn(3, 6, 4, dtype=torch.float64)
    >>> h, tau = torch.geqrf(A)
    >>> Q = blocked_householder_product(h, tau)
    >>> torch.allclose(Q, torch.linalg.householder_product(h, tau))
    True
    >>> adaptqr.householder_product(h, tau).shape
    torch.Size([3, 6, 4])
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import NamedTuple

import torch
import triton

from adaptqr import config, originals
from adaptqr.graphs.capture import on_device
from adaptqr.layout import aligned, rows_padded
from adaptqr.paths.householder import MAX_GRID_Y, interpreting
from adaptqr.paths.kernels import qform_small_cuda
from adaptqr.paths.kernels.qform import apply_qt_kernel, qform_kernel, qform_t_kernel
from adaptqr.paths.kernels.qform_wide import wide_update_kernel, wide_vtv_kernel, wide_w_kernel
from adaptqr.paths.schedules import next_pow2

#: Panel width of the blocked Q formation: the factorization's (its T kernel's helpers).
QFORM_NB = 32
#: Rows of a panel's ``V^T V`` a step of the T kernel sums. Run 0637 (ms, 64 / 128 / 256
#: rows): 640x512 6.17 / 7.05 / 17.9, 60x1024 4.19 / 4.29 / 7.46 (EXPERIMENTS.md QF16).
QFORM_T_ROWS = 64
#: The T kernel's ``V^T V`` products ("ieee": FMA, or "tf32x3": float32 accuracy on tensor
#: cores) and its warps a panel. ncu (run 0622, ``..._0622_ncu_qform_*.txt``): with "ieee"
#: on one warp it took 853 us of 640x512's Q (qform_kernel 5.48 ms) and 262 us of
#: 60x1024's (3.86 ms), at 86 % of its memory pipes' throughput and 9-10 % of DRAM's: the
#: FMA product's operand traffic. Run 0631 (``householder_product``, ms, ieee / tf32x3 /
#: ieee on 4 warps): 640x512 6.44 / 6.14 / 6.84, 60x1024 4.15 / 4.04 / 4.28, 64x1024x256
#: 0.719 / 0.624 / 0.734; n >= 2048 unchanged (cuBLAS or long strips). Run 0637 (tf32x3,
#: ms, one / two warps): 640x512 6.17 / 6.05 (its three other profiles 1-3 % faster too),
#: 60x1024 4.19 / 4.09, 40x176 0.079 / 0.073. Knobs ``qform_t_prec``, ``qform_t_warps``
#: (EXPERIMENTS.md QF16).
QFORM_T_PREC, QFORM_T_WARPS = "tf32x3", 2

#: The Q strip kernel's products (knob ``qform_prec``): "f16x3", float32 accuracy from float16
#: halves on tensor cores (:func:`adaptqr.paths.kernels.products._dot`), for the panels whose
#: reflectors are bounded (:func:`adaptqr.paths.kernels.qform.bounded_reflectors`), or
#: "tf32x3" (the other matrices, and columns of at most QFORM_RESIDENT_ROWS rows). Run 1907
#: (QF22, ``householder_product``, ms, tf32x3 / f16x3): 640x512 6.07 / 4.51, 60x1024 4.18
#: / 3.21, 40x352 0.211 / 0.143, 40x176 0.137 / 0.097, 640x512 rankdef 6.17 / 4.38; 8x2048
#: and 2x4096 (cuBLAS route) unchanged; orthogonality the same.
QFORM_PREC = "f16x3"

#: :func:`apply_qt`'s products: tf32x3, for its ``C`` is the caller's columns, whose range
#: nothing bounds.
APPLY_QT_PREC = "tf32x3"
#: Q of at most ``qform_small_cuda.MAX_ROWS`` rows by that CUDA C kernel (one cupy launch,
#: a warp a pair of columns, no copies of the inputs) instead of the Triton one, for at most
#: these many matrices of at most these many columns: at 20x32 the call is bound by the
#: host, and a Triton launch is ~40 % of its host time. H100, run 0447 of 12-06: 20x32
#: 0.0475 -> 0.0329 ms, the other 11 cases unchanged (EXPERIMENTS.md QF24). The bounds are
#: the small geqrf path's (``paths/small.py``, the same layout and chain of column steps),
#: past which its chain outlasts the host's time it saves. Knob ``qform_small_cuda`` (0 / 1:
#: never, or whenever the kernel takes the shape).
QFORM_SMALL_MAX_BATCH = 64
QFORM_SMALL_MAX_COLS = 32
#: Longest column (rows, a power of two) the register-resident kernel keeps whole. H200
#: (bench/results/nvidia-h200_2026-12-01_1615_qform-tiles-c1.json): at 40x176 resident
#: tiles (bm 256) took 0.104-0.128 ms against 0.095 for row chunks of 64; at 20x32 every
#: tiling is host-bound.
QFORM_RESIDENT_ROWS = 64
#: Row chunks and column tiles of the chunked kernel: 64 x 64, 4 warps, was the fastest or
#: within 5 % on every case of that run but the small batches (below).
QFORM_BM, QFORM_BN, QFORM_WARPS = 64, 64, 4
#: Below one program of 64 columns an SM, 32 columns a program: 2x4096 took 14.9 ms against
#: 16.4 (128 programs), 40x176 0.095 against 0.128; 4x4096 (256 programs) kept 64: 20.8 ms
#: against 23.3.
QFORM_NARROW_BN = 32
#: Panel width of Q formed by cuBLAS products at full float32 precision
#: (:func:`blocked_householder_product`) instead of the Triton strip kernel; 0: the kernel.
#: The kernel's time is one strip's chain of panels (QF2: 2x4096 14.6 ms, torch's orgqr
#: 11.1; batch 1 at 3072 ~6 ms against orgqr's ~3), while 128-column panels make the two
#: products a panel GEMM-shaped (~64 flop a byte): 2x4096's 1.8e11 flops are ~4 ms at
#: float32's rate. QF1 measured this route at width 32 (2x4096 20.4 ms: rank-32 updates,
#: bound by traffic). Run 0711-0713 (EXPERIMENTS.md QF7), ms, kernel / cuBLAS at 128 / 256:
#: 2x4096 14.85 / 8.72 / 7.53, 4x4096 20.90 / 14.22 / 13.59, 8x2048 5.47 / 4.60 / 4.74,
#: 1x3072 6.22 / 2.28 / 1.97, 1x4096 11.92 / 4.00 / 3.60; but 16x1024 1.47 / 1.76 / 2.02,
#: 1x512 0.26 / 0.60 / 0.52, 640x512 6.40 / 11.97 / 16.54. Knob ``qform_blas_nb``: 0 the
#: kernel always, 64 to 1024 cuBLAS always at that width; unset, :func:`blas_width`.
QFORM_BLAS_NB = 256
#: cuBLAS forms Q where it has at least this many columns and the kernel would have at most
#: ``QFORM_BLAS_MAX_STRIPS`` strips of ``QFORM_BN`` columns an SM (the kernel's time is its
#: longest strip's chain; with few strips the GPU waits on it): every case above where
#: cuBLAS won has n >= 2048 and at most 2 strips an SM (8x2048: 256 strips on 132 SMs);
#: 16x1024 (256 strips, n 1024) and 1x512 stay on the kernel. One matrix below 2048 columns
#: takes the rule below (QF9).
QFORM_BLAS_MIN_N = 2048
QFORM_BLAS_MAX_STRIPS = 2
#: One matrix of ``QFORM_ONE_MIN_N`` to ``QFORM_ONE_MAX_N`` columns: cuBLAS in one panel of
#: up to ``QFORM_ONE_NB`` columns (EXPERIMENTS.md QF9, run 0847-0848, ms, kernel / 256 /
#: 512): ``householder_product`` 1x1024 0.795 / 0.817 / 0.676, 1x2048 1.248 / 1.207 / 1.018,
#: but 1x3072 1.985 / 2.022 / 2.388 and 2x2048 1.629 / 1.628 / 2.118 (512 lost: those keep
#: QF7's rule). At 1x512 the kernel is faster alone (0.257 / 0.416 at 512: cuBLAS's dozen
#: launches wait on the host) but not in ``linalg.qr``, where they are queued behind the
#: factorization (1x512 1.142 / 1.057 at 512, 1x768 1.888 / 1.742, 1x1024 2.736 / 2.340):
#: ``QFORM_ONE_MIN_N_QUEUED`` there.
QFORM_ONE_NB = 512
QFORM_ONE_MIN_N = 1024
QFORM_ONE_MIN_N_QUEUED = 512
QFORM_ONE_MAX_N = 2048
#: The Triton route forms Q of ``m``-row reflectors, m not a multiple of this, from a copy
#: padded with zero rows (the padded rows of every reflector are zero, so Q's padded rows
#: and columns are the identity's and its first m rows are Q's), as the factorization does
#: (``schedules.ROW_ALIGN``: the kernels' row stride is m; EXPERIMENTS.md A1, QF15). Run
#: 0607 (``householder_product``, ms, 0 / 16): 60x1000 14.10 / 4.76, 640x500 21.58 / 7.51,
#: 40x350 0.751 / 0.273, 16x1000 4.74 / 1.55, 1x1000 2.37 / 0.845; the aligned neighbours
#: (60x1008, 640x496, 40x352) within 0.5 %. Knob ``qform_row_align`` (0 / 16).
QFORM_ROW_ALIGN = 16
#: Wide-panel Q formation (:mod:`adaptqr.paths.kernels.qform_wide`, EXPERIMENTS.md QF25):
#: panels of ``QFORM_WIDE_NB`` reflectors, each applied to Q's trailing block by two
#: GEMM-shaped launches, for ``QFORM_WIDE_MIN_N`` to ``QFORM_WIDE_MAX_N`` columns and more
#: than one matrix: from ``QFORM_WIDE_ANY_N`` columns at any such batch (instead of cuBLAS),
#: below it where the strip kernel would have at least ``QFORM_WIDE_MIN_STRIPS`` strips of
#: ``QFORM_BN`` columns an SM (its few wide launches a panel then have programs enough).
#: H100, runs 0934 and 0939 (after QF28, ``householder_product`` ms, the route before /
#: wide 128): 16x1024 (1.9 strips an SM) 1.156 (strip) / 0.950, 2x4096 7.434 (cuBLAS) /
#: 6.308, 4x4096 13.70 / 9.925, 2x6144 21.75 / 19.15; but 8x1024 (0.97 strips an SM) 0.689
#: (strip) / 0.990, 4x1024 0.498 / 0.993, 2x1024 0.496 / 1.185, 640x512 4.380 / 5.282,
#: 64x512 0.547 / 0.630, 40x352 0.156 / 0.423; batch 1 (cuBLAS) 1x2048 1.023 / 1.822,
#: 1x4096 3.587 / 5.077. Run 0722 (QF25, before QF28): 60x1024 3.909 / 3.603, 8x2048 4.794
#: / 3.585, 4x2048 2.659 / 2.557. Knob ``qform_wide`` (0: never, 64 / 128: that width
#: wherever the kernels take the shape, the cuBLAS route's shapes included).
QFORM_WIDE_NB = 128
QFORM_WIDE_MIN_N, QFORM_WIDE_ANY_N, QFORM_WIDE_MAX_N = 1024, 2048, 6144
QFORM_WIDE_MIN_STRIPS = 1.5
#: Its launches' tiles: columns ``BC`` and row chunks ``BK`` of the ``W`` launch, rows
#: ``BR`` of the update's tiles, warps of each; rows a step of the ``V^T V`` launch and its
#: warps. Offline (triton 3.6, sm_90, NBW 128): W 237 registers, the update 128 in
#: "f16x3" (one product of inner size 128 from the stored halves) and 200 in tf32x3 (by
#: sub-panel), ``V^T V`` 198 on 8 warps (488 B of stack on 4); none spills. Run 0746
#: (60x1024, 8x2048; before QF28): W on 8 warps, W in 64-row chunks on 8 warps, the update
#: on 8 warps and 32-column tiles each lost on both (EXPERIMENTS.md QF25).
QFORM_WIDE_BC, QFORM_WIDE_BK, QFORM_WIDE_BR = 64, 32, 64
QFORM_WIDE_W_WARPS, QFORM_WIDE_U_WARPS = 4, 4
QFORM_WIDE_S_ROWS, QFORM_WIDE_S_WARPS = 32, 8
#: Its two big products (knob ``qform_wide_prec``): "f16x3" for the matrices whose
#: reflectors are bounded (as ``QFORM_PREC``'s), or tf32x3; ``V^T V`` in ``QFORM_T_PREC``.
#: Run 0722, ms, tf32x3 / f16x3: 60x1024 4.536 / 3.603, 8x2048 4.339 / 3.585, 16x2048
#: 8.139 / 6.496. In "f16x3" the operands' float16 halves are made once and stored (``V``'s
#: by the T kernel, ``-Y``'s by the ``W`` launch), not in every program (EXPERIMENTS.md
#: QF28; H100 run 0924, ms, in every program / once): 60x1024 3.642 / 2.860, 8x2048 3.602 /
#: 3.026, 16x2048 6.692 / 5.104, 3x3072 5.112 / 4.202.
QFORM_WIDE_PREC = "f16x3"
#: The strip kernel's "f16x3" products from ``V``'s float16 halves made once by the T kernel
#: (EXPERIMENTS.md QF29), not split in every program, from ``QFORM_HALVES_MIN_N`` columns:
#: the halves are written once a reflector and read once a strip of Q's columns it
#: reaches, so they pay where a reflector reaches many strips. H100, runs 0934 and 0946
#: (``householder_product`` ms, split in every program / halves): 640x512 4.380 / 4.061,
#: rankdef 4.372 / 4.046, 64x512 0.547 / 0.491, 40x352 0.158 / 0.136, 8x1024 0.734 /
#: 0.669, 64x512x256 0.246 / 0.231, 64x256 0.111 / 0.110, 64x1024x256 0.590 / 0.591; but
#: 40x176 (32-column strips) 0.106 / 0.113. Knob ``qform_halves`` (0 / 1: never / wherever
#: the strip kernel forms Q in "f16x3").
QFORM_HALVES_MIN_N = 256
#: The strip kernel's programs in groups of this many matrices, each group's strips (the
#: rightmost first) before the next group's, or 0: every matrix's rightmost strip first
#: (knob ``qform_group``): the strips running side by side then read few matrices' ``V``
#: from L2. H100, runs 0713 and 0722 (EXPERIMENTS.md QF26; ``householder_product`` ms, 0 /
#: 4 / 8 / 16 / 32): 640x512 5.375 / 4.696 / 4.764 / 4.391, then 5.408 / - / - / 4.572 /
#: 4.653; rankdef 5.258 / 4.760 / 4.701 / 4.523, then 5.477 / 4.616 / 4.634; 60x1024 3.931
#: / 4.128 / 3.882 / 3.804; 2x4096 and 8x2048 (cuBLAS) unchanged.
QFORM_GROUP = 16
#: Each Q launch's program reads its matrix's per-panel flags (bounded or not) in one vector
#: load of a power of two at or above ``n_tw`` (at least 16) instead of ``n_tw`` dependent
#: scalar loads before its first product. H100, run 1204 (EXPERIMENTS.md QF31;
#: ``householder_product`` ms, one by one / one load): 2x4096 6.777 / 5.607, 4x4096 10.504 /
#: 8.820, 60x1024 2.893 / 2.799, 60x1024 mixed 2.819 / 2.559, nearrank 2.859 / 2.549,
#: 640x512 mixed 4.216 / 4.039, 640x512 4.091 / 4.095, 16x1024 1.082 / 1.102. Knob
#: ``qform_flag_block`` (0 / 1).
QFORM_FLAG_BLOCK = True


class QFormTiles(NamedTuple):
    """Launch shape of :func:`paths.kernels.qform.qform_kernel`: column tile ``bn``, row
    chunk (or whole resident column) ``bm``, ``resident``, ``warps`` and panel width ``nb``."""

    bn: int
    bm: int
    resident: bool
    warps: int
    nb: int = QFORM_NB


def qform_tiles(B: int, m: int, n: int, sm_count: int) -> QFormTiles:
    """The tiles for ``B`` ``m x n`` Q factors on a GPU of ``sm_count`` SMs: resident when a
    short column fits in registers, narrower column tiles when the wide ones leave SMs idle."""
    bm = max(16, next_pow2(m))
    if bm <= QFORM_RESIDENT_ROWS:
        return QFormTiles(32, bm, True, 4)
    narrow = B * triton.cdiv(n, QFORM_BN) < sm_count
    return QFormTiles(QFORM_NARROW_BN if narrow else QFORM_BN, QFORM_BM, False, QFORM_WARPS)


@functools.lru_cache(maxsize=None)
def _sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return 64  # the interpreter: any count (the tiles change, the result does not)
    return torch.cuda.get_device_properties(device).multi_processor_count


def householder_product(A: torch.Tensor, tau: torch.Tensor, *, out: torch.Tensor | None = None
                        ) -> torch.Tensor:
    """``Q = H_1 ... H_k`` (its first ``n`` columns) from ``A`` ``(*, m, n)``'s Householder
    vectors below the diagonal and ``tau`` ``(*, k)``, ``m >= n >= k``: a drop-in for
    ``torch.linalg.householder_product`` (same shapes, dtypes, errors, ``out=``, autograd).

    >>> import torch, adaptqr
    >>> h, tau = torch.geqrf(torch.randn(5, 3))
    >>> Q = adaptqr.householder_product(h, tau)
    >>> bool(torch.allclose(Q.mT @ Q, torch.eye(3), atol=1e-5))
    True
    """
    if torch.compiler.is_compiling() and out is None:
        # Traced: the op is opaque to the compiler (adaptqr.custom_ops).
        return torch.ops.adaptqr.householder_product(A, tau)
    return form_q(A, tau, out=out)


def form_q(A: torch.Tensor, tau: torch.Tensor, *, out: torch.Tensor | None = None,
           queued: bool = False) -> torch.Tensor:
    """:func:`householder_product` (same arguments, not traced); ``queued``: the call follows
    work of the caller's still running on the GPU (``linalg.qr``'s factorization), behind
    which the host's launches hide (:func:`blas_width`)."""
    if not (_blocked_applies(A, tau) and _shapes_ok(A, tau)):
        # torch's function, with its errors and messages for what the route rejects.
        if out is None:
            return originals.householder_product(A, tau)
        return originals.householder_product(A, tau, out=out)
    fn = _formation(A, queued, config.snapshot().knobs)
    if fn is small_householder_product:  # its launcher picks the device itself
        Q = fn(A, tau)
    else:
        with on_device(A.device):
            Q = fn(A, tau)
    if out is None:
        return Q
    _check_out(out, Q)
    out.resize_(Q.shape)
    out.copy_(Q)
    return out


def _formation(A: torch.Tensor, queued: bool, knobs: config.Knobs):
    """The function that forms Q: on the GPU cuBLAS products in panels of the width
    :func:`blas_width` gives, else the Triton kernels (the knob ``qform_blas_nb`` forces
    either); the blocked product in torch ops off the GPU (CPU tensors reach here only when
    a test forces the route). ``knobs``: the call's (its settings snapshot's)."""
    nb = knobs.qform_blas_nb
    small = knobs.get("qform_small_cuda", None)
    # The small route first: its calls are bound by the host's time (QF24).
    if (not nb and (small_q_preferred(A) if small is None else small)
            and qform_small_cuda.applies(A)):
        return small_householder_product
    B, n = math.prod(A.shape[:-2]), A.shape[-1]
    wide = _wide(B, n, A.device, knobs)
    if nb is None and A.is_cuda and not wide:
        nb = blas_width(B, n, _sm_count(A.device), queued)
    if nb:
        return functools.partial(blocked_householder_product, nb=nb)
    if A.is_cuda or interpreting():
        return functools.partial(triton_householder_product, knobs=knobs, wide=wide)
    return blocked_householder_product


def blas_width(B: int, n: int, sm_count: int, queued: bool = False) -> int:
    """The panel width at which ``B`` Q factors of ``n`` columns are formed by cuBLAS
    products, or 0 for the Triton strip kernel: one panel of up to ``QFORM_ONE_NB`` for one
    matrix of ``QFORM_ONE_MIN_N`` (``QFORM_ONE_MIN_N_QUEUED`` where ``queued``) to
    ``QFORM_ONE_MAX_N`` columns; ``QFORM_BLAS_NB`` for few long strips (see
    ``QFORM_BLAS_MIN_N``).

    >>> blas_width(2, 4096, 132), blas_width(1, 1024, 132), blas_width(640, 512, 132)
    (256, 512, 0)
    >>> blas_width(1, 512, 132), blas_width(1, 512, 132, queued=True)
    (0, 512)
    """
    one_min = QFORM_ONE_MIN_N_QUEUED if queued else QFORM_ONE_MIN_N
    if B == 1 and one_min <= n <= QFORM_ONE_MAX_N:
        return QFORM_ONE_NB
    if n >= QFORM_BLAS_MIN_N and B * triton.cdiv(n, QFORM_BN) <= QFORM_BLAS_MAX_STRIPS * sm_count:
        return QFORM_BLAS_NB
    return 0


def wide_width(B: int, n: int, sm_count: int) -> int:
    """The panel width at which ``B`` Q factors of ``n`` columns are formed in wide panels
    (:data:`QFORM_WIDE_NB`), or 0 for the other routes (see ``QFORM_WIDE_MIN_N``).

    >>> wide_width(60, 1024, 132), wide_width(16, 1024, 132), wide_width(2, 4096, 132)
    (128, 128, 128)
    >>> wide_width(8, 1024, 132), wide_width(2, 8192, 132), wide_width(1, 2048, 132)
    (0, 0, 0)
    """
    if B < 2 or not QFORM_WIDE_MIN_N <= n <= QFORM_WIDE_MAX_N:
        return 0
    fills = B * triton.cdiv(n, QFORM_BN) >= QFORM_WIDE_MIN_STRIPS * sm_count
    return QFORM_WIDE_NB if n >= QFORM_WIDE_ANY_N or fills else 0


def _wide(B: int, n: int, device: torch.device, knobs: config.Knobs) -> int:
    """The wide panels' width for this call: the knob ``qform_wide``, else :func:`wide_width`
    on the GPU (0 elsewhere: the interpreter takes it only by the knob)."""
    nbw = knobs.get("qform_wide", None)
    if nbw is None:
        nbw = wide_width(B, n, _sm_count(device)) if device.type == "cuda" else 0
    return nbw


def _blocked_applies(A: torch.Tensor, tau: torch.Tensor) -> bool:
    grad = torch.is_grad_enabled() and (A.requires_grad or tau.requires_grad)
    return (isinstance(A, torch.Tensor) and isinstance(tau, torch.Tensor) and A.is_cuda
            and A.dtype == torch.float32 and tau.dtype == torch.float32
            and tau.device == A.device and not grad)


def _shapes_ok(A: torch.Tensor, tau: torch.Tensor) -> bool:
    """torch's shape rules: ``A`` ``(*, m, n)``, ``tau`` ``(*, k)``, ``m >= n >= k`` (checked in
    Python: a meta-tensor check of torch's costs tens of microseconds a call)."""
    return (A.dim() >= 2 and tau.dim() == A.dim() - 1 and A.shape[:-2] == tau.shape[:-1]
            and A.shape[-2] >= A.shape[-1] >= tau.shape[-1])


def _check_out(out: torch.Tensor, Q: torch.Tensor) -> None:
    if out.dtype != Q.dtype:
        raise RuntimeError(f"householder_product: expected out tensor to have dtype {Q.dtype}, "
                           f"but got {out.dtype} instead")
    if out.device != Q.device:
        raise RuntimeError(f"householder_product: Expected out tensor to have device {Q.device}, "
                           f"but got {out.device} instead")


@contextlib.contextmanager
def full_fp32_matmul():
    """float32 products at full precision for the block (no TF32), whatever the caller set;
    restored after."""
    was = torch.get_float32_matmul_precision()
    if was == "highest":
        yield
        return
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(was)


def panel_t(V: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """Compact-WY ``T`` ``(..., nb, nb)`` (upper triangular, ``H_1 ... H_nb = I - V T V^T``)
    of unit lower trapezoidal ``V`` ``(..., rows, nb)`` and ``tau`` ``(..., nb)``.

    >>> import torch
    >>> V = torch.tensor([[1.0, 0.0], [0.5, 1.0], [0.25, 0.5]], dtype=torch.float64)
    >>> tau = torch.tensor([1.2, 0.0], dtype=torch.float64)
    >>> panel_t(V, tau)[..., 1].tolist()  # tau = 0: a zero column
    [0.0, 0.0]
    """
    S = V.mT @ V
    nb = S.shape[-1]
    eye = torch.eye(nb, dtype=V.dtype, device=V.device)
    M = eye + tau.unsqueeze(-1) * S.triu(1)
    return torch.linalg.solve_triangular(M, torch.diag_embed(tau), upper=True,
                                         unitriangular=True)


def reflector_panels(A: torch.Tensor, tau: torch.Tensor, nb: int) -> tuple:
    """``(V, tau)`` by panels of ``nb``: ``V`` ``(B, npan, m, nb)`` from the Householder
    vectors below the diagonal of ``A`` ``(B, m, n)`` (unit diagonal, zeros above it) and
    ``tau`` ``(B, npan, nb)`` from ``tau`` ``(B, k)``, with ``tau = 0`` past ``k`` (identity
    reflectors, whatever their ``V``); :func:`panel_t` takes them.

    >>> V, t = reflector_panels(torch.zeros(1, 4, 3), torch.ones(1, 2), 2)
    >>> V.shape, t.tolist()
    (torch.Size([1, 1, 4, 2]), [[[1.0, 1.0]]])
    """
    B, m, _ = A.shape
    k = tau.shape[-1]
    npan = -(-k // nb)
    kp = npan * nb
    V = torch.zeros(B, m, kp, dtype=A.dtype, device=A.device)
    V[:, :, :k] = A[:, :, :k].tril(-1)
    # fill_ rather than an indexed assignment: the latter copies a CPU scalar tensor, which a
    # CUDA graph capture (torch.compile's reduce-overhead) refuses.
    V.diagonal(dim1=-2, dim2=-1).fill_(1.0)
    taup = torch.zeros(B, kp, dtype=A.dtype, device=A.device)
    taup[:, :k] = tau
    return V.view(B, m, npan, nb).permute(0, 2, 1, 3), taup.view(B, npan, nb)


def blocked_householder_product(A: torch.Tensor, tau: torch.Tensor, nb: int = QFORM_NB
                                ) -> torch.Tensor:
    """``householder_product(A, tau)`` by blocked compact WY, in torch ops, on any device and
    real dtype (the CUDA float32 route of :func:`householder_product`; shapes as there, not
    checked here). Returns a new ``(*, m, n)`` tensor, each matrix column-major as torch's;
    ``A`` and ``tau`` are only read."""
    *batch, m, n = A.shape
    k = tau.shape[-1]
    B = 1
    for d in batch:
        B *= d
    # Q is formed as Qt = Q^T, row-major: Q column-major, as torch's.
    Qt = torch.eye(n, m, dtype=A.dtype, device=A.device).expand(B, n, m).contiguous()
    if B == 0 or k == 0:
        return Qt.mT.reshape(*batch, m, n)
    # No wider than the reflectors, in whole 32s: a panel past k is zero columns' work.
    nb = min(nb, -(-k // 32) * 32)
    npan = -(-k // nb)
    with full_fp32_matmul():
        Vp, taup = reflector_panels(A.reshape(B, m, n), tau.reshape(B, k), nb)
        T = panel_t(Vp, taup)                                        # (B, npan, nb, nb)
        Yt = (Vp @ T).mT                                             # (B, npan, nb, m)
        first = True
        for p in reversed(range(npan)):
            k0 = p * nb
            if k0 >= n:
                continue
            # C = Q[k0:, k0:] -= Y (V^T C), as Ct -= (Ct V) Y^T. The first panel applied
            # meets the identity: Ct V is V's rows k0..n, exactly (EXPERIMENTS.md QF11).
            Ct = Qt[:, k0:, k0:]
            W = Vp[:, p, k0:n, :] if first else Ct @ Vp[:, p, k0:, :]
            first = False
            Ct.baddbmm_(W, Yt[:, p, :, k0:], alpha=-1.0)
    return Qt.mT.reshape(*batch, m, n)


def triton_householder_product(A: torch.Tensor, tau: torch.Tensor,
                               tiles: QFormTiles | None = None,
                               knobs: config.Knobs | None = None,
                               wide: int | None = None) -> torch.Tensor:
    """``householder_product(A, tau)`` by the Triton kernels (CUDA float32, or CPU under
    ``TRITON_INTERPRET=1``): every panel's ``T``, then ``Q`` (one launch for columns of at
    most :data:`QFORM_RESIDENT_ROWS`; products at float32 accuracy). Shapes as
    :func:`householder_product` (not checked here); ``knobs``: the call's experiment knobs
    (None: the current snapshot's). Returns a new ``(*, m, n)`` tensor, each matrix
    column-major as torch's.

    >>> import torch
    >>> from adaptqr.paths.householder import MAX_GRID_Y, interpreting
    >>> A = torch.randn(2, 40, 24)
    >>> h, tau = torch.geqrf(A)
    >>> if torch.cuda.is_available() or interpreting():
    ...     dev = "cuda" if torch.cuda.is_available() else "cpu"
    ...     Q = triton_householder_product(h.to(dev), tau.to(dev))
    ...     torch.testing.assert_close(Q.cpu(), torch.linalg.householder_product(h, tau))
    """
    Qt, Ht, t2 = _q_layout(A, tau)
    if Ht is None:
        return Qt.mT
    B, n, m = Ht.shape
    knobs = knobs or config.snapshot().knobs
    mp = aligned(m, knobs.get("qform_row_align", QFORM_ROW_ALIGN))
    if mp == m:
        _form(Ht, t2, Qt, m, n, tiles, knobs, wide)
        return Qt.mT
    Qp = Ht.new_empty(B, n, mp)
    _form(rows_padded(Ht, mp), t2, Qp, mp, n, tiles, knobs, wide)
    Qt.view(B, n, m).copy_(Qp[:, :, :m])
    return Qt.mT


def small_q_preferred(A: torch.Tensor) -> bool:
    """Whether Q of ``A`` ``(*, m, n)`` is in the CUDA C kernel's measured bounds
    (:data:`QFORM_SMALL_MAX_BATCH` matrices of :data:`QFORM_SMALL_MAX_COLS` columns).

    >>> import torch
    >>> small_q_preferred(torch.empty(20, 32, 32)), small_q_preferred(torch.empty(640, 32, 32))
    (True, False)
    """
    return A.shape[-1] <= QFORM_SMALL_MAX_COLS and math.prod(A.shape[:-2]) <= QFORM_SMALL_MAX_BATCH


def small_householder_product(A: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """``householder_product(A, tau)`` by :mod:`~adaptqr.paths.kernels.qform_small_cuda` (CUDA
    float32, at most its ``MAX_ROWS`` rows; one cupy launch, EXPERIMENTS.md QF24). Shapes as
    :func:`householder_product` (not checked here); ``A`` and ``tau`` are read through their
    strides (a reshape copies only batch dims that do not merge). Q column-major as torch's."""
    *batch, m, n = A.shape
    B = math.prod(batch)
    if A.dim() == 3:  # the kernel's own (B, m, n) and (B, k): no views to make (host time)
        Q = torch.empty_strided((B, m, n), (m * n, 1, m), dtype=A.dtype, device=A.device)
        if B and n:
            qform_small_cuda.launch(A, tau, Q)
        return Q
    Q = torch.empty(*batch, n, m, dtype=A.dtype, device=A.device).mT
    if B and n:
        qform_small_cuda.launch(A.reshape(B, m, n), tau.reshape(B, tau.shape[-1]),
                                Q.reshape(B, m, n))
    return Q


def _q_layout(A: torch.Tensor, tau: torch.Tensor) -> tuple:
    """``(Qt, Ht, tau2)`` for Q of ``A`` ``(*, m, n)`` and ``tau`` ``(*, k)``: ``Qt`` a new
    ``(*, n, m)`` contiguous tensor (``Qt.mT`` has torch's strides, size-1 batch dims
    included), the reflectors as ``(B, n, m)`` and ``tau`` as ``(B, k)``, contiguous; ``Ht``
    None where Q is empty."""
    *batch, m, n = A.shape
    B = 1
    for d in batch:
        B *= d
    Qt = torch.empty(*batch, n, m, dtype=A.dtype, device=A.device)
    if B == 0 or n == 0:
        return Qt, None, None
    # Column-major A (geqrf's output) makes this a view.
    Ht = A.reshape(B, m, n).transpose(-2, -1).contiguous()
    return Qt, Ht, tau.reshape(B, tau.shape[-1]).contiguous()


def _form(Ht: torch.Tensor, tau: torch.Tensor, Qt: torch.Tensor, m: int, n: int,
          tiles: QFormTiles | None, knobs: config.Knobs, wide: int | None = None) -> None:
    """``Qt`` (``(B, n, m)`` contiguous, any batch view of it) ``= Q^T`` of the reflectors in
    ``Ht`` ``(B, n, m)`` and ``tau`` ``(B, k)`` contiguous: every panel's ``T`` (and, for
    "f16x3", whether its reflectors are bounded), then Q: in "f16x3" the matrices whose
    panels all are, in tf32x3 the others (a second launch whose other programs exit)."""
    B, k = tau.shape
    t = tiles or qform_tiles(B, m, n, _sm_count(Ht.device))
    nbw = _wide(B, n, Ht.device, knobs) if wide is None else wide
    if tiles is None and nbw and k and not t.resident and B <= MAX_GRID_Y:
        _form_wide(Ht, tau, Qt, m, n, nbw, knobs)
        return
    prec = knobs.get("qform_prec", QFORM_PREC)
    n_tw = triton.cdiv(k, t.nb)
    group = knobs.get("qform_group", QFORM_GROUP)
    group = group if group < B else 0
    grid = (B * triton.cdiv(n, t.bn),) if group else (B, triton.cdiv(n, t.bn))
    launch = dict(NB=t.nb, BN=t.bn, BM=t.bm, RESIDENT=t.resident, GROUP=group,
                  num_warps=t.warps)
    if t.resident or n_tw == 0:
        # One launch builds each T as it goes: nothing says beforehand whether a matrix's
        # reflectors are bounded. (Columns of at most QFORM_RESIDENT_ROWS: host-bound.)
        qform_kernel[grid](Ht, tau, tau, tau, tau, tau, Qt, m, n, k, n_tw, B,
                           PREC="tf32x3" if prec == "f16x3" else prec, **launch)
    elif prec == "f16x3":
        halves = t.nb if knobs.get("qform_halves", n >= QFORM_HALVES_MIN_N) else 0
        TW, OK, VH = _panel_ts(Ht, tau, m, n, n_tw, t.nb, knobs, flags=True, halves=halves)
        ntw = _flag_block(n_tw, knobs)
        qform_kernel[grid](Ht, tau, TW, OK, *VH, Qt, m, n, k, n_tw, B, PREC="f16x3", BOUNDED=1,
                           HALVES=bool(halves), NTW=ntw, **launch)
        qform_kernel[grid](Ht, tau, TW, OK, *VH, Qt, m, n, k, n_tw, B, PREC="tf32x3", BOUNDED=2,
                           NTW=ntw, **launch)
    else:
        TW, _, VH = _panel_ts(Ht, tau, m, n, n_tw, t.nb, knobs)
        qform_kernel[grid](Ht, tau, TW, tau, *VH, Qt, m, n, k, n_tw, B, PREC=prec, **launch)


def _form_wide(Ht: torch.Tensor, tau: torch.Tensor, Qt: torch.Tensor, m: int, n: int,
               nbw: int, knobs: config.Knobs) -> None:
    """:func:`_form` by panels of ``nbw`` reflectors (:mod:`adaptqr.paths.kernels.qform_wide`,
    operands as there, ``tau`` ``(B, k)`` with ``k >= 1``): the ``QFORM_NB``-column panels'
    ``T`` (and flags), every wide panel's ``V^T V``, ``Qt`` the identity, then the ``W`` and
    update launches a wide panel, last panel first: in "f16x3" (the knob ``qform_wide_prec``)
    once for the bounded matrices and once in tf32x3 for the others, as :func:`_form`."""
    B, k = tau.shape
    npan = triton.cdiv(k, nbw)
    # T slots for whole wide panels: those past k are zero (identity reflectors).
    n_tw = npan * (nbw // QFORM_NB)
    prec = knobs.get("qform_wide_prec", QFORM_WIDE_PREC)
    f16 = prec == "f16x3"
    TW, OK, (V16, VLO) = _panel_ts(Ht, tau, m, n, n_tw, QFORM_NB, knobs, flags=f16,
                                   halves=nbw if f16 else 0)
    S = Ht.new_empty(B, npan, nbw, nbw)
    Y = Ht.new_empty(B, n, nbw)
    Y16, YLO = Ht.new_empty(2, B, n, nbw, dtype=torch.float16).unbind(0) if f16 else (Y, Y)
    wide_vtv_kernel[(B, npan)](Ht, S, m, n, k, npan, NBW=nbw, CH=QFORM_WIDE_S_ROWS,
                               PREC=QFORM_T_PREC, num_warps=QFORM_WIDE_S_WARPS)
    Qt.zero_()
    Qt.diagonal(dim1=-2, dim2=-1).fill_(1.0)
    bc, br = QFORM_WIDE_BC, QFORM_WIDE_BR
    launches = [(prec, 0)] if prec != "f16x3" else [("f16x3", 1), ("tf32x3", 2)]
    ntw = _flag_block(n_tw, knobs)
    for p in reversed(range(npan)):
        k0 = p * nbw
        for pr, bounded in launches:
            wide_w_kernel[(triton.cdiv(n - k0, bc), B)](
                Ht, TW, OK, S, Qt, Y, V16, VLO, Y16, YLO, m, n, k, n_tw, npan, k0, NBW=nbw,
                SB=QFORM_NB, BC=bc, BK=QFORM_WIDE_BK, PREC=pr, BOUNDED=bounded, NTW=ntw,
                num_warps=QFORM_WIDE_W_WARPS)
            wide_update_kernel[(triton.cdiv(n - k0, bc), triton.cdiv(m - k0, br), B)](
                Ht, OK, Y, Qt, V16, VLO, Y16, YLO, m, n, k, n_tw, k0, NBW=nbw,
                SB=QFORM_NB, BC=bc, BR=br, PREC=pr, BOUNDED=bounded, NTW=ntw,
                num_warps=QFORM_WIDE_U_WARPS)


def _flag_block(n_tw: int, knobs: config.Knobs) -> int:
    """The launches' ``NTW`` (:func:`paths.kernels.qform.selected`): with
    ``QFORM_FLAG_BLOCK`` (knob ``qform_flag_block``), the power of two at or above ``n_tw``
    (at least 16) in which each program reads its matrix's flags at once; else 0, one by
    one."""
    on = knobs.get("qform_flag_block", QFORM_FLAG_BLOCK)
    return max(16, triton.next_power_of_2(n_tw)) if on else 0


def _panel_ts(Ht: torch.Tensor, tau: torch.Tensor, m: int, n: int, n_tw: int, nb: int,
              knobs: config.Knobs, flags: bool = False, halves: int = 0
              ) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """``(TW, OK, (V16, VLO))``: every panel's ``T`` ``(B, n_tw, nb, nb)`` of the reflectors
    in ``Ht`` ``(B, n, m)`` (``tau`` ``(B, k)`` contiguous), with ``flags`` whether each
    panel's reflectors are bounded (``(B, n_tw)`` int32, else ``tau``, unread), with
    ``halves`` ``V^T``'s float16 halves for products over panels of ``halves`` reflectors
    (each ``(B, n_tw * nb, m)``, else ``tau``, unread): one launch, one warp a panel."""
    B, k = tau.shape
    TW = torch.empty(B, n_tw, nb, nb, dtype=Ht.dtype, device=Ht.device)
    OK = torch.empty(B, n_tw, dtype=torch.int32, device=Ht.device) if flags else tau
    VH = (torch.empty(2, B, n_tw * nb, m, dtype=torch.float16, device=Ht.device).unbind(0)
          if halves else (tau, tau))
    qform_t_kernel[(B, n_tw)](Ht, tau, TW, OK, *VH, m, n, k, n_tw, 0, NB=nb, FLAGS=flags,
                              HALVES=halves, **_t_launch(knobs))
    return TW, OK, VH


def _t_launch(knobs: config.Knobs) -> dict:
    """The T kernel's row chunk, product precision and warps (:data:`QFORM_T_PREC`, the
    knobs) as launch arguments."""
    return dict(CH=QFORM_T_ROWS, PREC=knobs.get("qform_t_prec", QFORM_T_PREC),
                num_warps=knobs.get("qform_t_warps", QFORM_T_WARPS))


def apply_qt(H: torch.Tensor, tau: torch.Tensor, C: torch.Tensor,
             knobs: config.Knobs | None = None) -> None:
    """``C <- Q^T C`` in place, ``Q = H_1 ... H_k`` from ``H`` ``(B, m, k)``'s vectors and
    ``tau`` ``(B, k)``, ``C`` ``(B, m, c)``: the wide factorization's other columns
    (paths/wide.py). float32 with column-major ``H`` and contiguous columns of ``C``, where
    the Triton kernels run: :func:`paths.kernels.qform.apply_qt_kernel` (tf32x3 products);
    anything else :func:`blocked_apply_qt`. ``knobs``: the call's experiment knobs (None:
    the current snapshot's).

    >>> import torch
    >>> A = torch.randn(2, 4, 7, dtype=torch.float64)
    >>> h, tau = torch.geqrf(A[..., :4])
    >>> C = A[..., 4:].clone(); apply_qt(h, tau, C)
    >>> Q = torch.linalg.householder_product(h, tau)
    >>> torch.allclose(C, Q.mT @ A[..., 4:])
    True
    """
    B, _, k = H.shape
    if B == 0 or k == 0 or C.shape[-1] == 0:
        return
    if not apply_qt_in_triton(H, tau, C):
        blocked_apply_qt(H, tau, C)
        return
    TW = apply_qt_workspace(H)
    apply_qt_panels(H, tau, C, TW, 0, TW.shape[1], knobs)


def apply_qt_in_triton(H: torch.Tensor, tau: torch.Tensor, C: torch.Tensor) -> bool:
    """Whether :func:`apply_qt` takes the Triton kernels for these operands (float32,
    column-major ``H``, contiguous columns of ``C``, on the GPU or under the interpreter)."""
    return bool((H.is_cuda or interpreting()) and H.dtype == C.dtype == tau.dtype == torch.float32
                and H.mT.is_contiguous() and C.stride(-2) == 1 and tau.is_contiguous())


def apply_qt_workspace(H: torch.Tensor) -> torch.Tensor:
    """The panels' ``T`` buffer ``(B, cdiv(k, QFORM_NB), QFORM_NB, QFORM_NB)`` of
    :func:`apply_qt_panels` for ``H`` ``(B, m, k)``."""
    B, _, k = H.shape
    return torch.empty(B, triton.cdiv(k, QFORM_NB), QFORM_NB, QFORM_NB, dtype=H.dtype,
                       device=H.device)


def apply_qt_panels(H: torch.Tensor, tau: torch.Tensor, C: torch.Tensor, TW: torch.Tensor,
                    p0: int, p1: int, knobs: config.Knobs | None = None) -> None:
    """``C <- (H_{p0} ... H_{p1 - 1})^T C`` for the panels ``p0 .. p1 - 1`` of
    ``QFORM_NB`` columns of ``H`` ``(B, m, k)`` (their ``T`` into ``TW[:, p0:p1]``, from
    :func:`apply_qt_workspace`): :func:`apply_qt` a range of panels at a time, so that the
    wide path applies a panel range as soon as the factorization has made it
    (:mod:`adaptqr.paths.wide`). Operands as :func:`apply_qt_in_triton` takes them;
    ``knobs``: the call's experiment knobs (None: the current snapshot's)."""
    B, m, k = H.shape
    nc = C.shape[-1]
    if p1 <= p0 or nc == 0:
        return
    Ht = H.mT
    n_tw = TW.shape[1]
    qform_t_kernel[(B, p1 - p0)](Ht, tau, TW, tau, tau, tau, m, k, k, n_tw, p0, NB=QFORM_NB,
                                 **_t_launch(knobs or config.snapshot().knobs))
    narrow = B * triton.cdiv(nc, QFORM_BN) < _sm_count(H.device)
    bn = QFORM_NARROW_BN if narrow else QFORM_BN
    apply_qt_kernel[(B, triton.cdiv(nc, bn))](Ht, TW, C, m, k, k, nc, n_tw, C.stride(0),
                                              C.stride(-1), p0, p1, NB=QFORM_NB, BN=bn,
                                              BM=QFORM_BM, PREC=APPLY_QT_PREC,
                                              num_warps=QFORM_WARPS)


def blocked_apply_qt(H: torch.Tensor, tau: torch.Tensor, C: torch.Tensor, nb: int = QFORM_NB
                     ) -> None:
    """:func:`apply_qt` in batched torch products at full float32 precision (any device,
    dtype and strides): the panels applied forwards as ``C -= V (T^T (V^T C))``. (Its
    doctest is :func:`apply_qt`'s, which takes this route for float64.)"""
    B, m, k = H.shape
    if B == 0 or k == 0 or C.shape[-1] == 0:
        return
    with full_fp32_matmul():
        for k0 in range(0, k, nb):
            pw = min(nb, k - k0)
            V = H[:, k0:, k0:k0 + pw].tril(-1)
            V.diagonal(dim1=-2, dim2=-1).fill_(1.0)
            T = panel_t(V, tau[:, k0:k0 + pw])
            Cs = C[:, k0:, :]
            Cs.sub_(V @ (T.mT @ (V.mT @ Cs)))
