"""Q of small matrices in CUDA C (cupy): one CTA a matrix, one warp a pair of Q's columns,
for matrices of at most :data:`MAX_ROWS` rows (EXPERIMENTS.md QF24).

``Q[b] = H_1 ... H_k`` (its first ``n`` columns) from the reflectors below the diagonal of
``H[b]`` ``(m, n)`` and ``TAU[b]`` ``(k,)``, ``m >= n >= k``, read through their strides
(geqrf's column-major output, a sliced ``tau``: no copies); ``Q`` ``(B, m, n)`` column-major
(``Q[b, i, c]`` at ``b * m * n + c * m + i``, torch's layout for the result).

Why: at these sizes (20x32: a few microseconds of GPU work) ``householder_product`` is
bound by the host, and a Triton launch costs the host tens of microseconds more than a cupy
launch of a compiled kernel. QF23 launched this way with one thread a column: 32 dependent
dot products of 32 terms each on one warp a matrix took longer on the GPU than the host
saved. Here a column's dot product is spread over a warp's lanes (a lane holds rows
``lane`` and ``lane + 32``) and summed by a butterfly, so a reflector is a few dependent
instructions a column; a warp holds :data:`COLUMNS_PER_WARP` columns whose sums interleave,
and the reflectors sit in shared memory, read once from global memory. Column ``c`` takes
``H_j`` for ``j`` from ``min(c, k - 1)`` down (``H_j`` leaves ``e_c`` as it is for
``j > c``); a reflector with ``tau == 0`` is skipped, as LAPACK's ``larf`` skips it.
Products in float32 FMA, one reflector at a time, as LAPACK's ``org2r``.

Example (GPU with cupy)::

    >>> from adaptqr.paths.kernels import qform_small_cuda
    >>> qform_small_cuda.available() in (True, False)
    True
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from adaptqr.paths.kernels.small_layout import (  # noqa: F401  (MAX_ROWS: this kernel's bound too)
    COLUMNS_PER_WARP,
    LAYOUT_SRC,
    MAX_ROWS,
    check_strides,
    rows_of,
)

# The reflectors (at most MAX_ROWS x MAX_ROWS floats, 16 KB) sit in shared memory.
SRC = LAYOUT_SRC + r"""
extern "C" __global__ void __launch_bounds__(1024)
qform_small(const float* __restrict__ H, long long hb, long long hr, long long hc,
            const float* __restrict__ TAU, long long tb, long long tk,
            float* __restrict__ Q, int m, int n, int k) {
    __shared__ float hs[MR * MR];  // v_j at hs[j * MR ...]: 1 on row j, 0 above it and past m
    __shared__ float ts[MR];
    const int b = blockIdx.x, t = threadIdx.x, lane = t % 32, w = t / 32;
    const int nthreads = blockDim.x, nw = nthreads / 32;
    const float* hm = H + b * hb;
    for (int e = t; e < k * MR; e += nthreads) {
        const int j = e / MR, i = e % MR;
        hs[e] = i == j ? 1.0f : (i > j && i < m ? hm[i * hr + j * hc] : 0.0f);
    }
    for (int e = t; e < k; e += nthreads) ts[e] = TAU[b * tb + e * tk];
    __syncthreads();
    float q[CPW][RPL];
#pragma unroll
    for (int cc = 0; cc < CPW; ++cc)
#pragma unroll
        for (int r = 0; r < RPL; ++r) q[cc][r] = lane + 32 * r == w + cc * nw ? 1.0f : 0.0f;
    for (int j = k - 1; j >= 0; --j) {
        const float tj = ts[j];
        if (tj == 0.0f) continue;
        float v[RPL], d[CPW];
#pragma unroll
        for (int r = 0; r < RPL; ++r) v[r] = hs[j * MR + lane + 32 * r];
#pragma unroll
        for (int cc = 0; cc < CPW; ++cc) {
            d[cc] = 0.0f;
#pragma unroll
            for (int r = 0; r < RPL; ++r) d[cc] = fmaf(v[r], q[cc][r], d[cc]);
        }
        // A butterfly: every lane ends with the same bits (each level adds the same two
        // values, in either order).
#pragma unroll
        for (int s = 16; s >= 1; s >>= 1)
#pragma unroll
            for (int cc = 0; cc < CPW; ++cc) d[cc] += __shfl_xor_sync(0xffffffffu, d[cc], s);
#pragma unroll
        for (int cc = 0; cc < CPW; ++cc) {
            const int c = w + cc * nw;
            if (c >= j && c < n) {
                const float f = tj * d[cc];
#pragma unroll
                for (int r = 0; r < RPL; ++r) q[cc][r] = fmaf(-f, v[r], q[cc][r]);
            }
        }
    }
    float* qm = Q + (long long)b * m * n;
#pragma unroll
    for (int cc = 0; cc < CPW; ++cc) {
        const int c = w + cc * nw;
#pragma unroll
        for (int r = 0; r < RPL; ++r)
            if (c < n && lane + 32 * r < m) qm[(long long)c * m + lane + 32 * r] = q[cc][r];
    }
}
"""


def warps_of(n: int) -> int:
    """Warps of a CTA for ``n`` columns: :data:`COLUMNS_PER_WARP` columns a warp.

    >>> warps_of(32), warps_of(5), warps_of(64)
    (16, 3, 32)
    """
    return max(1, -(-n // COLUMNS_PER_WARP))


def applies(A: torch.Tensor) -> bool:
    """Whether the kernel takes the Q of ``A`` ``(*, m, n)``: CUDA, 1 to :data:`MAX_ROWS`
    rows, and the kernel available (:func:`available`)."""
    return A.is_cuda and 0 < A.shape[-2] <= MAX_ROWS and available()


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """Whether cupy imports, a CUDA device is there and the kernel compiles for it (once a
    process): else the Triton kernel forms these Q factors, with one warning logged."""
    from adaptqr.paths.kernels.panel_cuda import cupy_builds

    return cupy_builds(lambda: _kernel(MAX_ROWS, torch.cuda.current_device()),
                       "small-Q CUDA C kernel", "the Triton kernel forms Q instead")


@functools.lru_cache(maxsize=None)
def _kernel(mr: int, device_index: int):
    from adaptqr.paths.kernels.panel_cuda import compile_function

    return compile_function(SRC, "qform_small", device_index, f"-DMR={mr}")


def launch_args(H: torch.Tensor, tau: torch.Tensor, Q: torch.Tensor) -> tuple:
    """``(MR, warps, args)`` of one launch for ``H`` ``(B, m, n)`` (any strides), ``tau``
    ``(B, k)`` (any strides) and ``Q`` ``(B, m, n)`` column-major, float32 on one device;
    ``args`` the kernel's, pointers and element strides."""
    B, m, n = H.shape
    if Q.shape != H.shape or Q.stride() != (m * n, 1, m):
        check_strides("qform_small_cuda", "Q (column-major)", Q, (B, m, n), (m * n, 1, m))
    k = tau.shape[-1]
    if tau.shape[0] != B or not m >= n >= k:
        raise ValueError(f"qform_small_cuda: tau {tuple(tau.shape)} for H {tuple(H.shape)}")
    hs, ts, mnk, mr, nw = _shape_args(H.stride(), tau.stride(), m, n, k)
    u64 = np.uint64
    args = (u64(H.data_ptr()), *hs, u64(tau.data_ptr()), *ts, u64(Q.data_ptr()), *mnk)
    return mr, nw, args


@functools.lru_cache(maxsize=256)
def _shape_args(h_strides: tuple, tau_strides: tuple, m: int, n: int, k: int) -> tuple:
    """The launch's arguments that follow the shapes alone, converted once (each numpy
    scalar costs the host ~0.25 us, and this kernel is for host-bound calls)."""
    i64 = np.int64
    return (tuple(i64(s) for s in h_strides), tuple(i64(s) for s in tau_strides),
            (np.int32(m), np.int32(n), np.int32(k)), rows_of(m), warps_of(n))


def launch(H: torch.Tensor, tau: torch.Tensor, Q: torch.Tensor) -> None:
    """``Q`` ``(B, m, n)`` column-major ``= H_1 ... H_k`` of the reflectors in ``H``
    ``(B, m, n)`` and ``tau`` ``(B, k)`` (:func:`launch_args`; ``m <= MAX_ROWS``): one launch
    on torch's current stream, no allocation (capturable)."""
    from adaptqr.paths.kernels.panel_cuda import run_on_torch_stream

    mr, nw, args = launch_args(H, tau, Q)
    if H.shape[0] == 0 or H.shape[2] == 0:
        return
    dev = H.device.index if H.device.index is not None else torch.cuda.current_device()
    run_on_torch_stream(_kernel(mr, dev), (H.shape[0],), (32 * nw,), args, H.device, dev)
