"""Q formation's strip kernel in CUDA C (cupy, compiled at first use by NVRTC), with the
strip in shared memory and float4 shared loads (EXPERIMENTS.md QF20, QF21).

Same contract as :func:`adaptqr.paths.kernels.qform.qform_kernel`'s chunked branch:
``Qt[b, c, :] = (H_1 ... H_k e_c)^T`` for the strip's ``BN`` columns ``c``, from the
reflectors in ``Ht`` ``(B, n, m)`` contiguous and every panel's ``T`` in ``TW``
``(B, n_tw, 32, 32)`` (row-major, :func:`~adaptqr.paths.kernels.qform.qform_t_kernel`'s);
``Qt`` ``(B, n, m)`` contiguous, ``m`` a multiple of 4 (Q formation pads rows to 16).
Grid ``(cdiv(n, BN), B)``, ``8 BN`` threads.

Why: the Triton strip kernel reads and writes its strip through L2 twice a panel, at 255
registers and two CTAs an SM, bound by that chain's latency (QF8, QF13, QF17, QF18). Here the
strip (``BN`` rows of ``Q^T``, ``m + 4`` floats each) stays in shared memory from the
identity to the store; a panel reads only ``V``, staged in chunks of ``RC`` rows (each
loaded into registers while the chunk before it is computed). Each panel::

    W  = C^T V        4 x 4 per thread over 4 rows a step, the rows split over WG groups
    Y  = W T^T
    C^T -= Y V^T      4 columns x 4 rows per thread

in float32 FMAs (as ``torch.linalg.householder_product``'s orgqr, no tensor cores), every
shared read a float4 (QF20's scalar reads left the kernel issue-bound on its address
arithmetic: ncu, run 1133).

Example::

    >>> from adaptqr.paths.kernels import qform_cuda
    >>> qform_cuda.smem_bytes(512, 32), qform_cuda.fits(510, 32)
    (108672, False)
"""

from __future__ import annotations

import functools

import numpy as np
import torch

#: Rows of ``V`` staged a chunk, the panel width (``T``'s) and the row-split groups of the
#: ``W`` phase; a CTA has :func:`threads` threads.
RC, NB, WG = 128, 32, 4


def threads(bn: int) -> int:
    """Threads a CTA of a strip of ``bn`` columns: ``bn / 4`` groups of 32 lanes."""
    return 8 * bn

SRC = r"""
#ifndef BN
#define BN 32
#endif
#define NB 32
// U phase: BN / 4 column groups of 32 lanes, each lane 4 consecutive rows of the chunk.
#define NT (8 * BN)
#define RC 128
// Row strides in floats, multiples of 4 (float4) and 4 mod 32: a warp's float4 reads of
// 8 reflectors (or 4 strip rows) at one row offset fall in distinct banks.
#define VS (RC + 4)
#define WS (NB + 1)
#define YS (BN + 4)
// W phase: a thread's 4 x 4 tile is the strip rows i0 + TI a and the reflectors j0 + 8 c
// (strided, for the banks above) over 4 consecutive chunk rows a step; WG groups of WT
// threads take every WG-th step.
#define TI (BN / 4)
#define WT (2 * BN)
#define WG (NT / WT)
// float4s of V a thread stages a chunk.
#define VQ (NB * RC / 4 / NT)

// This thread's share of V's rows [r0, r0 + RC) of the panel at column k0 (quad
// e = threadIdx.x + NT i is rows 4 (e % (RC / 4)) .. + 3 of reflector e / (RC / 4)): unit
// diagonal, zero above it, zero past row m (a multiple of 4) and for columns at or past
// k (tau = 0 there). Loaded into registers a chunk ahead of its use, so that the global
// loads fly while the previous chunk is computed.
__device__ __forceinline__ void load_v(float4 (&v)[VQ], const float* __restrict__ H, int k0,
                                       int r0, int m, int k) {
#pragma unroll
    for (int i = 0; i < VQ; ++i) {
        const int e = threadIdx.x + NT * i;
        const int j = e / (RC / 4);
        const int r = r0 + 4 * (e - j * (RC / 4)), col = k0 + j;
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
        if (col < k && r < m) {
            const float* h = H + (long long)col * m + r;
            if (r > col) {
                x = *reinterpret_cast<const float4*>(h);
            } else {
                float t[4];
#pragma unroll
                for (int q = 0; q < 4; ++q) t[q] = r + q > col ? h[q] : (r + q == col ? 1.f : 0.f);
                x = make_float4(t[0], t[1], t[2], t[3]);
            }
        }
        v[i] = x;
    }
}

__device__ __forceinline__ void store_v(float* Vs, const float4 (&v)[VQ]) {
#pragma unroll
    for (int i = 0; i < VQ; ++i) {
        const int e = threadIdx.x + NT * i;
        const int j = e / (RC / 4);
        *reinterpret_cast<float4*>(Vs + j * VS + 4 * (e - j * (RC / 4))) = v[i];
    }
}

__device__ __forceinline__ float4 ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }

extern "C" __global__ void __launch_bounds__(NT, 2)
qform_cuda(const float* __restrict__ Ht, const float* __restrict__ TW, float* __restrict__ Qt,
           int m, int n, int k, int n_tw) {
    extern __shared__ __align__(16) float smem[];
    const int cs = m + 4;                  // m % 16 == 0: cs is 4 or 20 mod 32
    float* C = smem;                       // [BN][cs]: the strip, Q^T's rows c0 .. c0 + BN
    float* Vs = C + BN * cs;               // [NB][VS]
    float* Wp = Vs + NB * VS;              // [WG][BN][WS]: partial W; W in group 0's
    float* Ts = Wp + WG * BN * WS;         // [NB][WS]
    float* Ys = Ts + NB * WS;              // [NB][YS]: Y^T

    const int tid = threadIdx.x;
    // The strips at the right do the most panels: they start first.
    const int c0 = (gridDim.x - 1 - blockIdx.x) * BN;
    const long long b = blockIdx.y;
    const float* H = Ht + b * (long long)n * m;
    float* Q = Qt + b * (long long)n * m;

    for (int i = 0; i < BN; ++i)
        for (int r = 4 * tid; r < m; r += 4 * NT) {
            const int d = c0 + i - r;
            *reinterpret_cast<float4*>(C + i * cs + r) =
                make_float4(d == 0 ? 1.f : 0.f, d == 1 ? 1.f : 0.f, d == 2 ? 1.f : 0.f, d == 3 ? 1.f : 0.f);
        }

    const int npan = (k + NB - 1) / NB;
    const int p_top = min(npan, (c0 + BN - 1) / NB + 1) - 1;
    const int g = tid / WT, i0 = (tid % WT) / 8, j0 = tid % 8;
    const int ui = 4 * (tid / 32), lane = tid % 32;
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
        float4 pre[VQ];
        load_v(pre, H, k0, k0, m, k);
        for (int r0 = k0; r0 < m; r0 += RC) {
            store_v(Vs, pre);
            __syncthreads();
            if (r0 + RC < m) load_v(pre, H, k0, r0 + RC, m, k);
            const int quads = min(RC, m - r0) / 4;
            const float* Cr = C + i0 * cs + r0;
            const float* Vr = Vs + j0 * VS;
            for (int q = g; q < quads; q += WG) {
                float4 cv[4], vv[4];
#pragma unroll
                for (int a = 0; a < 4; ++a) cv[a] = ld4(Cr + TI * a * cs + 4 * q);
#pragma unroll
                for (int c = 0; c < 4; ++c) vv[c] = ld4(Vr + 8 * c * VS + 4 * q);
#pragma unroll
                for (int a = 0; a < 4; ++a)
#pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        float t = fmaf(cv[a].x, vv[c].x, acc[a][c]);
                        t = fmaf(cv[a].y, vv[c].y, t);
                        t = fmaf(cv[a].z, vv[c].z, t);
                        acc[a][c] = fmaf(cv[a].w, vv[c].w, t);
                    }
            }
            __syncthreads();
        }
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int c = 0; c < 4; ++c) Wp[(g * BN + i0 + TI * a) * WS + j0 + 8 * c] = acc[a][c];
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
            const int i = e % BN, jj = e / BN;
            float y = 0.f;
#pragma unroll 8
            for (int l = 0; l < NB; ++l) y = fmaf(Wp[i * WS + l], Ts[jj * WS + l], y);
            Ys[jj * YS + i] = y;
        }
        __syncthreads();

        load_v(pre, H, k0, k0, m, k);
        for (int r0 = k0; r0 < m; r0 += RC) {
            store_v(Vs, pre);
            __syncthreads();
            if (r0 + RC < m) load_v(pre, H, k0, r0 + RC, m, k);
            const int r = r0 + 4 * lane;
            if (r < m) {
                float4 u[4];
#pragma unroll
                for (int a = 0; a < 4; ++a) u[a] = ld4(C + (ui + a) * cs + r);
#pragma unroll 8
                for (int j = 0; j < NB; ++j) {
                    const float4 y = ld4(Ys + j * YS + ui), v = ld4(Vs + j * VS + 4 * lane);
                    const float ya[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
                    for (int a = 0; a < 4; ++a) {
                        u[a].x = fmaf(-ya[a], v.x, u[a].x);
                        u[a].y = fmaf(-ya[a], v.y, u[a].y);
                        u[a].z = fmaf(-ya[a], v.z, u[a].z);
                        u[a].w = fmaf(-ya[a], v.w, u[a].w);
                    }
                }
#pragma unroll
                for (int a = 0; a < 4; ++a) *reinterpret_cast<float4*>(C + (ui + a) * cs + r) = u[a];
            }
            __syncthreads();
        }
    }

    for (int i = 0; i < BN; ++i) {
        if (c0 + i >= n) break;
        for (int r = 4 * tid; r < m; r += 4 * NT)
            *reinterpret_cast<float4*>(Q + (long long)(c0 + i) * m + r) = ld4(C + i * cs + r);
    }
}
"""


def smem_bytes(m: int, bn: int) -> int:
    """Dynamic shared memory of one CTA: the strip, a chunk of ``V``, ``W``'s partials, ``T``
    and ``Y`` (float32)."""
    return 4 * (bn * (m + 4) + NB * (RC + 4) + (WG * bn + NB) * (NB + 1) + NB * (bn + 4))


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
    return bn in (16, 32) and m % 4 == 0 and smem_bytes(m, bn) <= smem_limit(device_index)


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
        kern(grid, (threads(bn),), args, shared_mem=smem)
