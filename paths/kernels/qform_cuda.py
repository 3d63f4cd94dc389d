"""Q formation's strip kernel in CUDA C (cupy, compiled at first use by NVRTC), with the
strip in shared memory (EXPERIMENTS.md QF20).

Same contract as :func:`adaptqr.paths.kernels.qform.qform_kernel`'s chunked branch:
``Qt[b, c, :] = (H_1 ... H_k e_c)^T`` for the strip's ``BN`` columns ``c``, from the
reflectors in ``Ht`` ``(B, n, m)`` contiguous and every panel's ``T`` in ``TW``
``(B, n_tw, 32, 32)`` (row-major, :func:`~adaptqr.paths.kernels.qform.qform_t_kernel`'s);
``Qt`` ``(B, n, m)`` contiguous. Grid ``(cdiv(n, BN), B)``, 256 threads.

Why: the Triton strip kernel reads and writes its strip through L2 twice a panel, at 255
registers and two CTAs an SM, bound by that chain's latency (QF8, QF13, QF17, QF18). Here the
strip (``BN`` rows of ``Q^T``, ``m + 1`` floats each: an odd stride, so a column's entries
fall in distinct banks) stays in shared memory from the identity to the store; a panel
reads only ``V``, staged in chunks of ``RC`` rows (each loaded into registers while the
chunk before it is computed). Each panel::

    W  = C^T V        4 x 4 per thread, the rows split over WG groups, partials summed
    Y  = W T^T
    C^T -= Y V^T      4 x US per thread

in float32 FMAs (as ``torch.linalg.householder_product``'s orgqr, no tensor cores).

Example::

    >>> from adaptqr.paths.kernels import qform_cuda
    >>> qform_cuda.smem_bytes(512, 32)
    107520
"""

from __future__ import annotations

import functools

import numpy as np
import torch

#: Threads a CTA, rows of ``V`` staged a chunk, and the panel width (``T``'s).
NT, RC, NB = 256, 128, 32

SRC = r"""
#ifndef BN
#define BN 32
#endif
#define NB 32
#define NT 256
#define RC 128
// W = C^T V: 4 x 4 tiles, (BN / 4) x (NB / 4) of them, the chunk's rows split over WG groups.
#define WG (NT / ((BN / 4) * (NB / 4)))
// C^T -= Y V^T: 4 rows of C^T a thread, the chunk's rows over UR lanes, US rows a lane.
#define UR (NT / (BN / 4))
#define US (RC / UR)
#define VS (RC + 1)
#define WS (NB + 1)

#define VPT (NB * RC / NT)

// This thread's share of V's rows [r0, r0 + RC) of the panel at column k0 (element
// e = threadIdx.x + NT i is Vs[e / RC][e % RC]): unit diagonal, zero above it, zero past
// row m and for columns at or past k (tau = 0 there). Loaded into registers a chunk ahead
// of its use, so that the global loads fly while the previous chunk is computed.
__device__ __forceinline__ void load_v(float (&v)[VPT], const float* __restrict__ H, int k0,
                                       int r0, int m, int k) {
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int e = threadIdx.x + NT * i;
        const int j = e / RC, rr = e - j * RC;
        const int r = r0 + rr, col = k0 + j;
        float x = 0.f;
        if (col < k && r < m) {
            x = r > col ? H[(long long)col * m + r] : (r == col ? 1.f : 0.f);
        }
        v[i] = x;
    }
}

__device__ __forceinline__ void store_v(float* Vs, const float (&v)[VPT]) {
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int e = threadIdx.x + NT * i;
        const int j = e / RC;
        Vs[j * VS + e - j * RC] = v[i];
    }
}

extern "C" __global__ void __launch_bounds__(NT, 2)
qform_cuda(const float* __restrict__ Ht, const float* __restrict__ TW, float* __restrict__ Qt,
           int m, int n, int k, int n_tw) {
    extern __shared__ float smem[];
    const int cs = m + 1;
    float* C = smem;                       // [BN][cs]: the strip, Q^T's rows c0 .. c0 + BN
    float* Vs = C + BN * cs;               // [NB][VS]
    float* Wp = Vs + NB * VS;              // [WG][BN][WS]: partial W; W in group 0's
    float* Ts = Wp + WG * BN * WS;         // [NB][WS]
    float* Ys = Ts + NB * WS;              // [BN][WS]

    const int tid = threadIdx.x;
    // The strips at the right do the most panels: they start first.
    const int c0 = (gridDim.x - 1 - blockIdx.x) * BN;
    const long long b = blockIdx.y;
    const float* H = Ht + b * (long long)n * m;
    float* Q = Qt + b * (long long)n * m;

    for (int i = 0; i < BN; ++i)
        for (int r = tid; r < m; r += NT) C[i * cs + r] = (c0 + i == r) ? 1.f : 0.f;

    const int npan = (k + NB - 1) / NB;
    const int p_top = min(npan, (c0 + BN - 1) / NB + 1) - 1;
    const int g = tid / (NT / WG);
    const int wi = ((tid % (NT / WG)) / (NB / 4)) * 4, wj = (tid % (NB / 4)) * 4;
    const int ui = (tid / UR) * 4, ur = tid % UR;
    __syncthreads();

    for (int p = p_top; p >= 0; --p) {
        const int k0 = p * NB;
        const float* T = TW + (b * n_tw + p) * (long long)(NB * NB);
        for (int e = tid; e < NB * NB; e += NT) Ts[(e / NB) * WS + e % NB] = T[e];

        float acc[4][4];
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[a][c] = 0.f;
        float pre[VPT];
        load_v(pre, H, k0, k0, m, k);
        for (int r0 = k0; r0 < m; r0 += RC) {
            store_v(Vs, pre);
            __syncthreads();
            if (r0 + RC < m) load_v(pre, H, k0, r0 + RC, m, k);
            const int rows = min(RC, m - r0);
            for (int s = g; s < rows; s += WG) {
                float cv[4], vv[4];
#pragma unroll
                for (int a = 0; a < 4; ++a) cv[a] = C[(wi + a) * cs + r0 + s];
#pragma unroll
                for (int c = 0; c < 4; ++c) vv[c] = Vs[(wj + c) * VS + s];
#pragma unroll
                for (int a = 0; a < 4; ++a)
#pragma unroll
                    for (int c = 0; c < 4; ++c) acc[a][c] = fmaf(cv[a], vv[c], acc[a][c]);
            }
            __syncthreads();
        }
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int c = 0; c < 4; ++c) Wp[(g * BN + wi + a) * WS + wj + c] = acc[a][c];
        __syncthreads();
        for (int e = tid; e < BN * NB; e += NT) {
            const int i = e / NB, j = e % NB;
            float w = 0.f;
#pragma unroll
            for (int q = 0; q < WG; ++q) w += Wp[(q * BN + i) * WS + j];
            Wp[i * WS + j] = w;  // group 0's slot: only this thread reads or writes it here
        }
        __syncthreads();
        for (int e = tid; e < BN * NB; e += NT) {
            const int i = e / NB, jj = e % NB;
            float y = 0.f;
#pragma unroll 8
            for (int l = 0; l < NB; ++l) y = fmaf(Wp[i * WS + l], Ts[jj * WS + l], y);
            Ys[i * WS + jj] = y;
        }
        __syncthreads();

        load_v(pre, H, k0, k0, m, k);
        for (int r0 = k0; r0 < m; r0 += RC) {
            store_v(Vs, pre);
            __syncthreads();
            if (r0 + RC < m) load_v(pre, H, k0, r0 + RC, m, k);
            float u[4][US];
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
                for (int s = 0; s < US; ++s) {
                    const int r = r0 + ur + UR * s;
                    u[a][s] = r < m ? C[(ui + a) * cs + r] : 0.f;
                }
#pragma unroll 4
            for (int j = 0; j < NB; ++j) {
                float yv[4], vv[US];
#pragma unroll
                for (int a = 0; a < 4; ++a) yv[a] = Ys[(ui + a) * WS + j];
#pragma unroll
                for (int s = 0; s < US; ++s) vv[s] = Vs[j * VS + ur + UR * s];
#pragma unroll
                for (int a = 0; a < 4; ++a)
#pragma unroll
                    for (int s = 0; s < US; ++s) u[a][s] = fmaf(-yv[a], vv[s], u[a][s]);
            }
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
                for (int s = 0; s < US; ++s) {
                    const int r = r0 + ur + UR * s;
                    if (r < m) C[(ui + a) * cs + r] = u[a][s];
                }
            __syncthreads();
        }
    }

    for (int i = 0; i < BN; ++i) {
        if (c0 + i >= n) break;
        for (int r = tid; r < m; r += NT) Q[(long long)(c0 + i) * m + r] = C[i * cs + r];
    }
}
"""


def smem_bytes(m: int, bn: int) -> int:
    """Dynamic shared memory of one CTA: the strip, a chunk of ``V``, ``W``'s partials, ``T``
    and ``Y`` (float32)."""
    wg = NT // ((bn // 4) * (NB // 4))
    return 4 * (bn * (m + 1) + NB * (RC + 1) + (wg * bn + NB + bn) * (NB + 1))


#: Shared memory a CTA may take where the device cannot say (an H200's opt-in: 227 KB).
SMEM_MAX = 232448


@functools.lru_cache(maxsize=None)
def smem_limit(device_index: int | None = None) -> int:
    """The opt-in shared memory of one CTA on the device (:data:`SMEM_MAX` off the GPU)."""
    if not torch.cuda.is_available():
        return SMEM_MAX
    props = torch.cuda.get_device_properties(
        device_index if device_index is not None else torch.cuda.current_device())
    # A torch whose properties lack it: the 48 KB every CUDA device gives (torch's own
    # fallback in torch.cuda._utils).
    return int(getattr(props, "shared_memory_per_block_optin", 49152))


def fits(m: int, bn: int, device_index: int | None = None) -> bool:
    """Whether a strip of ``bn`` columns (16 or 32) of ``m`` rows fits one CTA's shared
    memory on the device."""
    return bn in (16, 32) and smem_bytes(m, bn) <= smem_limit(device_index)


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """Whether cupy imports, a CUDA device is there and the kernel compiles for it (else
    the Triton strip kernel runs, with one warning logged where the compile failed)."""
    if not torch.cuda.is_available():
        return False
    try:
        import cupy  # noqa: F401
    except Exception:
        return False
    from adaptqr.paths.kernels.panel_cuda import compiles

    return compiles(lambda: _kernel(32, torch.cuda.current_device()),
                    "CUDA C Q strip kernel", "the Triton kernel runs instead")


@functools.lru_cache(maxsize=None)
def _kernel(bn: int, device_index: int):
    import cupy as cp

    with cp.cuda.Device(device_index):
        mod = cp.RawModule(code=SRC, options=("-std=c++17", f"-DBN={bn}"))
        fn = mod.get_function("qform_cuda")
        # Above 48 KB, dynamic shared memory is opt-in, once a function.
        fn.max_dynamic_shared_size_bytes = smem_limit(device_index)
        return fn


def launch(Ht: torch.Tensor, TW: torch.Tensor, Qt: torch.Tensor, m: int, n: int, k: int,
           n_tw: int, bn: int = 32) -> None:
    """``Qt`` ``= Q^T`` (see the module doc) on torch's current stream (capturable: no
    allocation, no sync); ``bn``: the strip's columns (16 or 32, :func:`fits`)."""
    dev = Ht.device.index if Ht.device.index is not None else torch.cuda.current_device()
    if not fits(m, bn, dev):
        raise ValueError(f"qform_cuda: a strip of {bn} columns of {m} rows does not fit "
                         f"{smem_limit(dev)} bytes of shared memory")
    import cupy as cp

    from adaptqr.paths.kernels.panel_cuda import _stream

    kern = _kernel(bn, dev)
    smem = smem_bytes(m, bn)
    B = Ht.shape[0]
    grid = ((n + bn - 1) // bn, B)
    args = (np.uint64(Ht.data_ptr()), np.uint64(TW.data_ptr()), np.uint64(Qt.data_ptr()),
            np.int32(m), np.int32(n), np.int32(k), np.int32(n_tw))
    stream = _stream(torch.cuda.current_stream(Ht.device).cuda_stream, dev)
    with cp.cuda.Device(dev), stream:
        kern(grid, (NT,), args, shared_mem=smem)
