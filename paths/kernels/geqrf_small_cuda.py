"""The whole QR of small matrices in CUDA C (cupy): one CTA a matrix, one warp a pair of its
columns, for matrices of at most :data:`MAX_ROWS` rows and :data:`MAX_COLS` columns
(EXPERIMENTS.md H37).

``H[b], TAU[b] = geqrf(A[b])`` for ``A`` ``(B, m, n)`` read through its strides (the
caller's tensor as it is: no copy into geqrf's layout first), ``H`` ``(B, m, n)``
column-major (``H[b, i, c]`` at ``b * m * n + c * m + i``, torch.geqrf's layout) and
``TAU`` ``(B, min(m, n))`` contiguous. ``H`` may be ``A`` itself: a CTA reads its whole
matrix before it writes.

Why: at these sizes (20x32: a few microseconds of GPU work) a call is bound by the host.
The householder path replays a CUDA graph after copying the input into its layout (a
graph launch, a copy launch and the cache's bookkeeping); this is one cupy launch on the
caller's tensor. On the GPU, a column's sums are spread over a warp's lanes (a lane holds
rows ``lane`` and ``lane + 32``) and summed by a butterfly, so a column step is a few
dependent instructions: the warp holding column ``j`` makes its reflector (the scalars of
:func:`adaptqr.paths.kernels.panel._reflector`: the plain sum of squares first, the
max-scaled one where it is out of range, powers of two for tiny and huge columns, as the
CUDA C panel's column steps), posts it in shared memory, and after one barrier every warp
applies it to its columns right of ``j`` (LAPACK's ``larf``, skipped for ``tau == 0``).

Example (GPU with cupy)::

    >>> from adaptqr.paths.kernels import geqrf_small_cuda
    >>> geqrf_small_cuda.available() in (True, False)
    True
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from adaptqr.paths.kernels.reflector_cuda import REFLECTOR_FUNCS
from adaptqr.paths.kernels.small_layout import (  # noqa: F401  (MAX_ROWS: this kernel's bound too)
    COLUMNS_PER_WARP,
    LAYOUT_SRC,
    MAX_ROWS,
    check_strides,
    rows_of,
)

#: The most columns: a CTA of at most 32 warps.
MAX_COLS = 32 * COLUMNS_PER_WARP

SRC = LAYOUT_SRC + r"""
#define FULL 0xffffffffu
""" + REFLECTOR_FUNCS + r"""

// Butterflies: every lane ends with the same bits (each level adds the same two values).
__device__ __forceinline__ float lanes_sum(float x) {
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) x += __shfl_xor_sync(FULL, x, s);
    return x;
}

__device__ __forceinline__ float lanes_max(float x) {
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) x = fmaxf(x, __shfl_xor_sync(FULL, x, s));
    return x;
}

// A may be H itself (the path's in-place impl): neither is __restrict__.
extern "C" __global__ void __launch_bounds__(1024)
geqrf_small(const float* A, long long ab, long long ar, long long ac, float* H,
            float* __restrict__ TAU, int m, int n) {
    __shared__ float vs[2][MR];  // the step's reflector, 1 on its row, 0 above and past m
    __shared__ float ts[2];      // and its tau; two of each: a step posts while the last is read
    const int b = blockIdx.x, t = threadIdx.x, lane = t % 32, w = t / 32;
    const int nw = blockDim.x / 32;
    const int kk = m < n ? m : n;
    const float* am = A + b * ab;
    // Column w + cc nw in slot cc, rows lane + 32 r in slot r.
    float a[CPW][RPL];
#pragma unroll
    for (int cc = 0; cc < CPW; ++cc) {
        const int c = w + cc * nw;
#pragma unroll
        for (int r = 0; r < RPL; ++r) {
            const int i = lane + 32 * r;
            a[cc][r] = (c < n && i < m) ? am[i * ar + c * ac] : 0.0f;
        }
    }
    __syncthreads();  // every read of A before H (maybe A) is written
    for (int j = 0; j < kk; ++j) {
        const int buf = j & 1;
        if (w == j % nw) {
            const bool hi = j >= nw;  // column j's slot (uniform in the warp)
            float x[RPL];
#pragma unroll
            for (int r = 0; r < RPL; ++r) x[r] = hi ? a[CPW - 1][r] : a[0][r];
            // alpha from its own lane: a sum with the other lanes' zeros would turn -0 into 0.
            const float alpha = __shfl_sync(FULL, (j >= 32) ? x[RPL - 1] : x[0], j % 32);
            float ss = 0.0f;
#pragma unroll
            for (int r = 0; r < RPL; ++r) {
                const int i = lane + 32 * r;
                if (i > j && i < m) ss += x[r] * x[r];
            }
            ss = lanes_sum(ss);
            float p, tau, beta, scale;
            bool d;
            // EXPERIMENTS.md H38: in float32's middle range the norm by one square root of
            // one FMA, tau and v's scale by two independent divisions.
            if (DIRECT_IN_RANGE(alpha, ss)) {
                DIRECT_SCALARS(alpha, ss, true, 0.0f, d, tau, beta, scale, p)
            } else {
                float xnp;
                if (ss >= PLAIN_SS_LO && ss <= PLAIN_SS_HI) {
                    PLAIN_NORM(alpha, ss, xnp, p)
                } else {
                    float mx = 0.0f;
#pragma unroll
                    for (int r = 0; r < RPL; ++r) {
                        const int i = lane + 32 * r;
                        if (i > j && i < m) mx = fmaxf(mx, fabsf(x[r]));
                    }
                    const float amax = lanes_max(mx);
                    const float q = range_scale(amax);
                    const float s = amax > 0.0f ? amax : 1.0f;
                    const float inv = 1.0f / (s * q);
                    float s2 = 0.0f;
#pragma unroll
                    for (int r = 0; r < RPL; ++r) {
                        const int i = lane + 32 * r;
                        if (i > j && i < m) {
                            const float xs = (x[r] * q) * inv;
                            s2 += xs * xs;
                        }
                    }
                    s2 = lanes_sum(s2);
                    p = range_scale(fmaxf(fabsf(alpha), amax));
                    xnp = (s * p) * sqrtf(s2);
                }
                // No floor under the norm: this path does not prescale.
                REFLECTOR_SCALARS(alpha, xnp, p, true, 0.0f, d, tau, beta, scale)
            }
#pragma unroll
            for (int r = 0; r < RPL; ++r) {
                const int i = lane + 32 * r;
                const float vb = (x[r] * p) * scale;
                vs[buf][i] = i == j ? 1.0f : ((i > j && i < m) ? vb : 0.0f);
                // The column as stored: R above, beta on the diagonal, v below (where made).
                const float y = i == j ? beta : ((i > j && d) ? vb : x[r]);
                if (hi) a[CPW - 1][r] = y; else a[0][r] = y;
            }
            if (lane == 0) {
                ts[buf] = tau;
                TAU[(long long)b * kk + j] = tau;
            }
        }
        __syncthreads();
        const float tj = ts[buf];
        if (tj == 0.0f) continue;  // H_j = I (LAPACK's larf skips it too)
        float v[RPL], dot[CPW];
#pragma unroll
        for (int r = 0; r < RPL; ++r) v[r] = vs[buf][lane + 32 * r];
#pragma unroll
        for (int cc = 0; cc < CPW; ++cc) {
            dot[cc] = 0.0f;
#pragma unroll
            for (int r = 0; r < RPL; ++r) dot[cc] = fmaf(v[r], a[cc][r], dot[cc]);
        }
#pragma unroll
        for (int s = 16; s >= 1; s >>= 1)
#pragma unroll
            for (int cc = 0; cc < CPW; ++cc) dot[cc] += __shfl_xor_sync(FULL, dot[cc], s);
#pragma unroll
        for (int cc = 0; cc < CPW; ++cc) {
            const int c = w + cc * nw;
            if (c > j && c < n) {
                const float f = tj * dot[cc];
#pragma unroll
                for (int r = 0; r < RPL; ++r) a[cc][r] = fmaf(-f, v[r], a[cc][r]);
            }
        }
    }
    float* hm = H + (long long)b * m * n;
#pragma unroll
    for (int cc = 0; cc < CPW; ++cc) {
        const int c = w + cc * nw;
#pragma unroll
        for (int r = 0; r < RPL; ++r) {
            const int i = lane + 32 * r;
            if (c < n && i < m) hm[(long long)c * m + i] = a[cc][r];
        }
    }
}
"""


def warps_of(n: int) -> int:
    """Warps of a CTA for ``n`` columns: :data:`COLUMNS_PER_WARP` columns a warp.

    >>> warps_of(32), warps_of(5), warps_of(64)
    (16, 3, 32)
    """
    if not 0 < n <= MAX_COLS:
        raise ValueError(f"geqrf_small_cuda: {n} columns, 1 to {MAX_COLS}")
    return -(-n // COLUMNS_PER_WARP)


def takes(m: int, n: int) -> bool:
    """Whether the kernel takes ``m x n`` matrices (its row and column bounds).

    >>> takes(32, 32), takes(64, 64), takes(65, 8), takes(8, 65), takes(0, 4)
    (True, True, False, False, False)
    """
    return 0 < m <= MAX_ROWS and 0 < n <= MAX_COLS


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """Whether cupy imports, a CUDA device is there and the kernel compiles for it (once a
    process): else the small path declines and householder takes these inputs, with one
    warning logged."""
    from adaptqr.paths.kernels.panel_cuda import cupy_builds

    return cupy_builds(lambda: _kernel(MAX_ROWS, torch.cuda.current_device()),
                       "small-QR CUDA C kernel", "the householder path takes small inputs")


@functools.lru_cache(maxsize=None)
def _kernel(mr: int, device_index: int):
    from adaptqr.paths.kernels.panel_cuda import compile_function

    return compile_function(SRC, "geqrf_small", device_index, f"-DMR={mr}")


def launch_args(A: torch.Tensor, H: torch.Tensor, tau: torch.Tensor) -> tuple:
    """``(MR, warps, args)`` of one launch for ``A`` ``(B, m, n)`` (any strides), ``H``
    ``(B, m, n)`` column-major and ``tau`` ``(B, min(m, n))`` contiguous, float32 on one
    device; ``args`` the kernel's, pointers and element strides."""
    B, m, n = A.shape
    k = min(m, n)
    if H.stride() != (m * n, 1, m) or tau.stride() != (k, 1) or H.shape != A.shape \
            or tau.shape != (B, k):
        _check_outputs(H, tau, B, m, n)
    strides, mn, mr, nw = _shape_args(A.stride(), m, n)
    u64 = np.uint64
    args = (u64(A.data_ptr()), *strides, u64(H.data_ptr()), u64(tau.data_ptr()), *mn)
    return mr, nw, args


@functools.lru_cache(maxsize=256)
def _shape_args(strides: tuple, m: int, n: int) -> tuple:
    """The launch's arguments that follow the shape alone, converted once (each numpy scalar
    costs the host ~0.25 us: a small call's host time is this path's point)."""
    return (tuple(np.int64(s) for s in strides), (np.int32(m), np.int32(n)), rows_of(m),
            warps_of(n))


def _check_outputs(H: torch.Tensor, tau: torch.Tensor, B: int, m: int, n: int) -> None:
    """Raise unless ``H`` and ``tau`` have the shapes and the strides the kernel writes by."""
    k = min(m, n)
    check_strides("geqrf_small_cuda", "H", H, (B, m, n), (m * n, 1, m))
    check_strides("geqrf_small_cuda", "tau", tau, (B, k), (k, 1))


def launch(A: torch.Tensor, H: torch.Tensor, tau: torch.Tensor) -> None:
    """``H, tau = geqrf(A)`` for ``A`` ``(B, m, n)`` (:func:`launch_args`; ``m <=
    MAX_ROWS``, ``n <= MAX_COLS``): one launch on torch's current stream, no allocation
    (capturable). ``H`` may be ``A``."""
    from adaptqr.paths.kernels.panel_cuda import run_on_torch_stream

    mr, nw, args = launch_args(A, H, tau)
    if A.shape[0] == 0:
        return
    dev = A.device.index if A.device.index is not None else torch.cuda.current_device()
    run_on_torch_stream(_kernel(mr, dev), (A.shape[0],), (32 * nw,), args, A.device, dev)
