"""OC26 family 1, a feasibility prototype (device script, EXPERIMENTS.md N27): the FP16
pair rest update with its column tile resident in shared memory, on tensor cores (WMMA,
float16 operands, float32 accumulation), against torch on the same operands.

Not the library's kernel: one fixed configuration, no routes (every matrix takes the FP16
route, ``SC[b] > 0``), a float16 source (an update after the first, ``k > 0``), ``m - k`` a
multiple of 16. It computes what ``trailing._apply_pair_f16`` computes for a tile of 64
columns (in transposed form, ``C`` the tile in units of ``sc``)::

    W1 = C^T V1, W2 = C^T V2, G = V1^T V2
    Y1 = W1 T1, Y2 = (W2 - Y1 G) T2, ys = 2^ceil(log2(max |Y| / 16384))
    C^T -= ys (f16(Y1 / ys) V1^T + f16(Y2 / ys) V2^T)

and writes rows ``< k + 64`` and columns ``< k + 128`` to ``Ht`` in float32 (divided by
``sc``), the rest to ``C16``: one read of the tile and one write, where the Triton pair
kernel reads it twice. The question it answers: how far below the Triton kernel's ~350 us
(640x512's update at k = 64, run 1153 with the look-ahead off) one such launch gets.

Two kernels, timed side by side: v2 (``SRC``: 64-column tiles, 256 threads, V and T staged
whole in shared memory with the tile: one CTA an SM) and v3 (``SRC3``: 32-column tiles, 128
threads, V streamed through two 64-row chunk buffers whose next chunk is in flight while
the current one's products run: ~70 KB, three CTAs an SM).

Run there: ``python3 bench/devscripts/smem_pair_proto.py [B] [m] [k ...]``. On the CPU,
``--host``: both kernels through :mod:`adaptqr.testing.cuda_host` (float16 and WMMA stood
in for on the host) against the same reference (:func:`host`).
"""

import functools
import sys

import torch

# Device code both kernels share (after their BN, NB, NT, WP, YP, SP): the Y phase and a
# warp's 16 x 16 block of the update.
COMMON = r"""
/* Y1 = W1 T1, then Y2 = (W2 - Y1 G) T2 (Z = W2 - Y1 G in W2's place), in float32 by the
   CTA; returns ys and leaves Yh = f16([Y1 Y2] / ys). W: [BN][WP], G: [NB][NB + 4], Ts: T1 | T2,
   Y: [BN][2 NB], Yh: [BN][YP], red: NT / 32 floats. */
__device__ float pair_y(float* W, const float* G, const float* Ts, float* Y, __half* Yh,
                        float* red, int tid)
{
    const float* T1 = Ts;
    const float* T2 = Ts + NB * NB;
    for (int e = tid; e < BN * NB; e += NT) {
        int i = e / NB, j = e - i * NB;
        float t = 0.0f;
        for (int l = 0; l <= j; ++l) t += W[i * WP + l] * T1[l * NB + j];
        Y[i * 2 * NB + j] = t;
    }
    __syncthreads();
    for (int e = tid; e < BN * NB; e += NT) {
        int i = e / NB, j = e - i * NB;
        float t = W[i * WP + NB + j];
        for (int l = 0; l < NB; ++l) t -= Y[i * 2 * NB + l] * G[l * (NB + 4) + j];
        W[i * WP + NB + j] = t;
    }
    __syncthreads();
    float ymax = 0.0f;
    for (int e = tid; e < BN * NB; e += NT) {
        int i = e / NB, j = e - i * NB;
        float t = 0.0f;
        for (int l = 0; l <= j; ++l) t += W[i * WP + NB + l] * T2[l * NB + j];
        Y[i * 2 * NB + NB + j] = t;
        ymax = fmaxf(ymax, fmaxf(fabsf(t), fabsf(Y[i * 2 * NB + j])));
    }
    for (int o = 16; o > 0; o >>= 1) ymax = fmaxf(ymax, __shfl_xor_sync(0xffffffffu, ymax, o));
    if ((tid & 31) == 0) red[tid >> 5] = ymax;
    __syncthreads();
    ymax = red[0];
    for (int w = 1; w < NT / 32; ++w) ymax = fmaxf(ymax, red[w]);
    const float ys = exp2f(ceilf(log2f(fmaxf(ymax, 1e-30f) / 16384.0f)));
    const float inv = 1.0f / ys;
    for (int e = tid; e < BN * 2 * NB; e += NT) {
        int i = e / (2 * NB), j = e - i * 2 * NB;
        Yh[i * YP + j] = __float2half_rn(Y[i * 2 * NB + j] * inv);
    }
    __syncthreads();
    return ys;
}

/* One warp's 16 x 16 block of the update: D = Yh's 16 rows at yb [V1 V2]^T's 16 columns
   at vb (V's rows, pitch vp), through the warp's scratch my (row-major, pitch SP), applied
   to the tile's block at tb (pitch tp; its first column col0, first row row0): C = tile -
   ys D, the update's R rows (< k + 2 NB) and the next group's columns (< k + 4 NB) to Ht
   in float32 (times isc = 1 / sc), the rest to C16. */
__device__ void pair_block(const __half* yb, const __half* vb, int vp, float* my,
                           const __half* tb, int tp, int col0, int row0, int k, int m,
                           int c_end, float ys, float isc, size_t mat, __half* C16, float* Ht,
                           int lane)
{
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> d;
    wmma::fill_fragment(d, 0.0f);
    for (int kk = 0; kk < 2 * NB; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> bv;
        wmma::load_matrix_sync(a, yb + kk, YP);
        wmma::load_matrix_sync(bv, vb + kk * vp, vp);
        wmma::mma_sync(d, a, bv, d);
    }
    wmma::store_matrix_sync(my, d, SP, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
        int i = e >> 4, r = e & 15, col = col0 + i, row = row0 + r;
        if (col < c_end) {
            float c = __half2float(tb[i * tp + r]) - ys * my[i * SP + r];
            size_t off = mat + (size_t)col * m + row;
            if (row < k + 2 * NB || col < k + 4 * NB) Ht[off] = c * isc;
            else C16[off] = __float2half_rn(c);
        }
    }
    __syncwarp();
}
"""

SRC = r"""
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

#define BN 64
#define NB 32
#define NT 256
#define TP (RMAX + 8)   /* tile row pitch (halves): a multiple of 8 for WMMA */
#define WP 68           /* W pitch (floats) */
#define YP 72           /* Yh pitch (halves) */
#define SP 20           /* a warp's scratch pitch (floats) */
""" + COMMON + r"""
extern "C" __global__ void __launch_bounds__(NT) pair_smem(
    const __half* __restrict__ V16, const float* __restrict__ TW, const float* __restrict__ SC,
    __half* C16, float* Ht, int k, int m, int n, int n_tw, int c_start, int c_end)
{
    extern __shared__ __align__(16) float smem_f[];
    unsigned char* smem = (unsigned char*)smem_f;
    __half* tile = (__half*)smem;                                /* [BN][TP] */
    __half* Vs = tile + BN * TP;                                 /* [2 NB][TP]: V1 | V2 */
    float* W = (float*)(Vs + 2 * NB * TP);                       /* [BN][WP]: W1 | W2 */
    float* G = W + BN * WP;                                      /* [NB][NB + 4] */
    float* Y = G + NB * (NB + 4);                                /* [BN][2 NB]: Y1 | Y2 */
    __half* Yh = (__half*)(Y + BN * 2 * NB);                     /* [BN][YP] */
    float* Ts = (float*)(Yh + BN * YP);                          /* [2][NB][NB]: T1 | T2 */
    float* scr = Y;            /* [8][16][SP] in phase 4, where Y (float) is dead: 10 of 16 KB */
    __shared__ float red[NT / 32];

    const int b = blockIdx.y, c0 = c_start + blockIdx.x * BN, tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31;
    const float sc = SC[b];
    if (sc == 0.0f) return;
    const int R = m - k;
    const size_t mat = (size_t)b * n * m;
    const __half* V = V16 + (size_t)b * 2 * NB * m + k;          /* V[j * m + r]: row k + r */

    /* 1. The tile and both panels' V, 8 halves a load; T1, T2. */
    const int R8 = R >> 3;
    for (int i = tid; i < BN * R8; i += NT) {
        int c = i / R8, r8 = i - c * R8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (c0 + c < c_end) v = *(const uint4*)(C16 + mat + (size_t)(c0 + c) * m + k + r8 * 8);
        *(uint4*)(tile + c * TP + r8 * 8) = v;
        *(uint4*)(Vs + c * TP + r8 * 8) = *(const uint4*)(V + (size_t)c * m + r8 * 8);
    }
    const float* Tg = TW + ((size_t)b * n_tw + k / NB) * NB * NB;
    for (int i = tid; i < 2 * NB * NB; i += NT) Ts[i] = Tg[i];
    __syncthreads();

    /* 2. W = C^T [V1 V2] (64 x 64): warp w owns column block w / 2, reflector blocks
          2 (w % 2) and 2 (w % 2) + 1; warps 0-3 also G = V1^T V2 (32 x 32). */
    {
        const int cb = warp >> 1, rb0 = (warp & 1) * 2;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc0, acc1, accg;
        wmma::fill_fragment(acc0, 0.0f);
        wmma::fill_fragment(acc1, 0.0f);
        wmma::fill_fragment(accg, 0.0f);
        const int gi = warp >> 1, gj = warp & 1;
        for (int kk = 0; kk < R; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b0, b1;
            wmma::load_matrix_sync(a, tile + cb * 16 * TP + kk, TP);
            wmma::load_matrix_sync(b0, Vs + (rb0 * 16) * TP + kk, TP);
            wmma::load_matrix_sync(b1, Vs + (rb0 * 16 + 16) * TP + kk, TP);
            wmma::mma_sync(acc0, a, b0, acc0);
            wmma::mma_sync(acc1, a, b1, acc1);
            if (warp < 4) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> va;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> vb;
                wmma::load_matrix_sync(va, Vs + (gi * 16) * TP + kk, TP);
                wmma::load_matrix_sync(vb, Vs + (NB + gj * 16) * TP + kk, TP);
                wmma::mma_sync(accg, va, vb, accg);
            }
        }
        wmma::store_matrix_sync(W + cb * 16 * WP + rb0 * 16, acc0, WP, wmma::mem_row_major);
        wmma::store_matrix_sync(W + cb * 16 * WP + rb0 * 16 + 16, acc1, WP, wmma::mem_row_major);
        if (warp < 4)
            wmma::store_matrix_sync(G + gi * 16 * (NB + 4) + gj * 16, accg, NB + 4,
                                    wmma::mem_row_major);
    }
    __syncthreads();

    /* 3. Y and its float16 form. */
    const float ys = pair_y(W, G, Ts, Y, Yh, red, tid);

    /* 4. D = Yh [V1 V2]^T by 16 x 16 tiles (columns x rows), C -= ys D, stored. */
    float* my = scr + warp * 16 * SP;
    const int nrb = R >> 4;
    const float isc = 1.0f / sc;
    for (int tIdx = warp; tIdx < 4 * nrb; tIdx += NT / 32) {
        const int cb = tIdx & 3, rbk = tIdx >> 2;
        pair_block(Yh + cb * 16 * YP, Vs + rbk * 16, TP, my, tile + cb * 16 * TP + rbk * 16, TP,
                   c0 + cb * 16, k + rbk * 16, k, m, c_end, ys, isc, mat, C16, Ht, lane);
    }
}
"""


# v3: 32-column tiles of 128 threads, V streamed through two 64-row chunk buffers whose
# next chunk's loads are in flight (in registers) while the current chunk's products run;
# the chunk buffers, the warps' scratch, Y and T share one region (phases 2 and 4 against
# phase 3). ~70 KB of shared memory at 448 rows: three CTAs an SM. The pitch is a run-time
# value: one build for every k.
SRC3 = r"""
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

#define BN 32
#define NB 32
#define NT 128
#define VC 64           /* rows a V chunk */
#define VP (VC + 8)     /* a chunk buffer's pitch (halves) */
#define WP 68
#define YP 72
#define SP 20
""" + COMMON + r"""
/* The tile's rows [r0, r0 + rows) and V's into registers: 2 + 4 uint4 a thread. */
__device__ __forceinline__ void fetch(uint4* t, uint4* v, const __half* C, const __half* V, int m,
                                      int c0, int c_end, int r0, int rows, int tid)
{
    const int r8 = rows >> 3;
    for (int q = 0; q < 2; ++q) {
        int i = tid + q * NT, c = i >> 3, j = i & 7;
        t[q] = make_uint4(0, 0, 0, 0);
        if (j < r8 && c0 + c < c_end) t[q] = *(const uint4*)(C + (size_t)(c0 + c) * m + r0 + j * 8);
    }
    for (int q = 0; q < 4; ++q) {
        int i = tid + q * NT, c = i >> 3, j = i & 7;
        v[q] = make_uint4(0, 0, 0, 0);
        if (j < r8) v[q] = *(const uint4*)(V + (size_t)c * m + r0 + j * 8);
    }
}

/* ... and from registers into the tile (rows past the chunk's would run into the next
   column's) and a chunk buffer. */
__device__ __forceinline__ void put(const uint4* t, const uint4* v, __half* tile, int tp,
                                    __half* vb, int r0, int rows, bool with_tile, int tid)
{
    if (with_tile)
        for (int q = 0; q < 2; ++q) {
            int i = tid + q * NT, c = i >> 3, j = i & 7;
            if (j < (rows >> 3)) *(uint4*)(tile + c * tp + r0 + j * 8) = t[q];
        }
    for (int q = 0; q < 4; ++q) {
        int i = tid + q * NT, c = i >> 3, j = i & 7;
        *(uint4*)(vb + c * VP + j * 8) = v[q];
    }
}

extern "C" __global__ void __launch_bounds__(NT) pair_smem3(
    const __half* __restrict__ V16, const float* __restrict__ TW, const float* __restrict__ SC,
    __half* C16, float* Ht, int k, int m, int n, int n_tw, int c_start, int c_end)
{
    extern __shared__ __align__(16) float smem_f[];
    const int R = m - k, tp = R + 8;
    __half* tile = (__half*)smem_f;                              /* [BN][tp] */
    float* X = (float*)(tile + BN * tp);                         /* the shared region */
    __half* vbuf = (__half*)X;                                   /* [2][2 NB][VP] */
    float* scr = (float*)(vbuf + 2 * 2 * NB * VP);               /* [4][16][SP] */
    float* Y = X;                                                /* [BN][2 NB] */
    float* Ts = X + BN * 2 * NB;                                 /* [2][NB][NB] */
    float* W = scr + 4 * 16 * SP;                                /* [BN][WP]: W1 | W2 */
    float* G = W + BN * WP;                                      /* [NB][NB + 4] */
    __half* Yh = (__half*)(G + NB * (NB + 4));                   /* [BN][YP] */
    __shared__ float red[NT / 32];

    const int b = blockIdx.y, c0 = c_start + blockIdx.x * BN, tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31;
    const float sc = SC[b];
    if (sc == 0.0f) return;
    const size_t mat = (size_t)b * n * m;
    const __half* C = C16 + mat + k;                             /* C[col * m + r]: row k + r */
    const __half* V = V16 + (size_t)b * 2 * NB * m + k;
    const int nch = (R + VC - 1) / VC;
    uint4 pt[2], pv[4];

    /* 1-2. W = C^T [V1 V2] (32 x 64; warp w: reflector block w of both column blocks) and
       G = V1^T V2 (warp w: block w of four), chunk by chunk, the tile kept as it comes. */
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc0, acc1, accg;
    wmma::fill_fragment(acc0, 0.0f);
    wmma::fill_fragment(acc1, 0.0f);
    wmma::fill_fragment(accg, 0.0f);
    fetch(pt, pv, C, V, m, c0, c_end, 0, min(VC, R), tid);
    put(pt, pv, tile, tp, vbuf, 0, min(VC, R), true, tid);
    __syncthreads();
    for (int ch = 0; ch < nch; ++ch) {
        const int r0 = ch * VC, rows = min(VC, R - r0);
        if (ch + 1 < nch) fetch(pt, pv, C, V, m, c0, c_end, r0 + VC, min(VC, R - r0 - VC), tid);
        const __half* vb = vbuf + (ch & 1) * 2 * NB * VP;
        const int gi = warp >> 1, gj = warp & 1;
        for (int kk = 0; kk < rows; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a0, a1, va;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> bw, vb2;
            wmma::load_matrix_sync(a0, tile + r0 + kk, tp);
            wmma::load_matrix_sync(a1, tile + 16 * tp + r0 + kk, tp);
            wmma::load_matrix_sync(bw, vb + warp * 16 * VP + kk, VP);
            wmma::mma_sync(acc0, a0, bw, acc0);
            wmma::mma_sync(acc1, a1, bw, acc1);
            wmma::load_matrix_sync(va, vb + gi * 16 * VP + kk, VP);
            wmma::load_matrix_sync(vb2, vb + (NB + gj * 16) * VP + kk, VP);
            wmma::mma_sync(accg, va, vb2, accg);
        }
        if (ch + 1 < nch)
            put(pt, pv, tile, tp, vbuf + ((ch + 1) & 1) * 2 * NB * VP, r0 + VC,
                min(VC, R - r0 - VC), true, tid);
        __syncthreads();
    }
    wmma::store_matrix_sync(W + warp * 16, acc0, WP, wmma::mem_row_major);
    wmma::store_matrix_sync(W + 16 * WP + warp * 16, acc1, WP, wmma::mem_row_major);
    wmma::store_matrix_sync(G + (warp >> 1) * 16 * (NB + 4) + (warp & 1) * 16, accg, NB + 4,
                            wmma::mem_row_major);
    const float* Tg = TW + ((size_t)b * n_tw + k / NB) * NB * NB;
    for (int i = tid; i < 2 * NB * NB; i += NT) Ts[i] = Tg[i];
    __syncthreads();

    /* 3. Y and its float16 form. */
    const float ys = pair_y(W, G, Ts, Y, Yh, red, tid);

    /* 4. D = Yh [V1 V2]^T chunk by chunk (V streamed again), C -= ys D, stored. */
    fetch(pt, pv, C, V, m, c0, c_end, 0, min(VC, R), tid);
    put(pt, pv, tile, tp, vbuf, 0, min(VC, R), false, tid);
    __syncthreads();
    float* my = scr + warp * 16 * SP;
    const float isc = 1.0f / sc;
    for (int ch = 0; ch < nch; ++ch) {
        const int r0 = ch * VC, rows = min(VC, R - r0);
        if (ch + 1 < nch) fetch(pt, pv, C, V, m, c0, c_end, r0 + VC, min(VC, R - r0 - VC), tid);
        const __half* vb = vbuf + (ch & 1) * 2 * NB * VP;
        for (int t = warp; t < 2 * (rows >> 4); t += NT / 32) {
            const int cb = t & 1, rb = t >> 1;
            pair_block(Yh + cb * 16 * YP, vb + rb * 16, VP, my, tile + cb * 16 * tp + r0 + rb * 16,
                       tp, c0 + cb * 16, k + r0 + rb * 16, k, m, c_end, ys, isc, mat, C16, Ht, lane);
        }
        if (ch + 1 < nch)
            put(pt, pv, tile, tp, vbuf + ((ch + 1) & 1) * 2 * NB * VP, r0 + VC,
                min(VC, R - r0 - VC), false, tid);
        __syncthreads();
    }
}
"""


def smem_bytes3(R: int) -> int:
    x = max(2 * 64 * 72 * 2 + 4 * 16 * 20 * 4, 32 * 64 * 4 + 2 * 32 * 32 * 4)
    return 32 * (R + 8) * 2 + x + 32 * 68 * 4 + 32 * 36 * 4 + 32 * 72 * 2


#: The H200's opt-in shared memory a CTA (227 KB).
MAX_SMEM = 227 * 1024


def smem_bytes(rmax: int) -> int:
    return (2 * 64 * (rmax + 8) * 2 + 64 * 68 * 4 + 32 * 36 * 4 + 64 * 64 * 4 + 64 * 72 * 2
            + 2 * 32 * 32 * 4)


def _module(src: str, defines: tuple):
    import os

    import cupy as cp
    import triton

    # The device's NVRTC headers lack crt/mma.h (run 1222); triton's CUDA headers have it.
    inc = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "include")
    opts = ("-std=c++17", f"-I{inc}") + tuple(f"-D{k}={v}" for k, v in defines)
    return cp.RawModule(code=src, options=opts)


def kernel(rmax: int):
    """v2's build for tiles of ``rmax`` rows."""
    fn = _module(SRC, (("RMAX", rmax),)).get_function("pair_smem")
    fn.max_dynamic_shared_size_bytes = smem_bytes(rmax)
    return fn


@functools.lru_cache(maxsize=None)
def kernel3(R: int):
    """v3's build (one for every k; ``R`` sets only its shared memory's opt-in size)."""
    fn = _module(SRC3, ()).get_function("pair_smem3")
    fn.max_dynamic_shared_size_bytes = smem_bytes3(R)
    return fn


def reference(C16, V16, TW, SC, k, c_start, c_end):
    """The update in torch (float32 from the float16 operands), as the kernel writes it."""
    B, n, m = C16.shape
    C = C16[:, c_start:c_end, k:].float()                    # (B, cols, R): C^T
    V = V16[:, :, k:].float()                                # (B, 64, R)
    V1, V2 = V[:, :32], V[:, 32:]
    T1 = TW[:, k // 32]
    T2 = TW[:, k // 32 + 1]
    W1, W2 = C @ V1.mT, C @ V2.mT
    G = V1 @ V2.mT
    Y1 = W1 @ T1
    Y2 = (W2 - Y1 @ G) @ T2
    ymax = torch.maximum(Y1.abs().amax((1, 2)), Y2.abs().amax((1, 2)))
    ys = torch.exp2(torch.ceil(torch.log2(ymax.clamp_min(1e-30) / 16384.0)))[:, None, None]
    Y1h, Y2h = (Y1 / ys).half().float(), (Y2 / ys).half().float()
    return C - ys * (Y1h @ V1 + Y2h @ V2)


HOST_MAIN = r"""
int main(int argc, char** argv) {
    const int B = std::atoi(argv[1]), m = std::atoi(argv[2]), n = std::atoi(argv[3]);
    const int k = std::atoi(argv[4]), c_start = std::atoi(argv[5]), c_end = std::atoi(argv[6]);
    const int n_tw = n / 32;
    std::vector<float> Cf = read_floats(argv[7], (size_t)B * n * m);
    std::vector<float> Ht = read_floats(argv[8], (size_t)B * n * m);
    std::vector<float> Vf = read_floats(argv[9], (size_t)B * 64 * m);
    std::vector<float> TW = read_floats(argv[10], (size_t)B * n_tw * 1024);
    std::vector<float> SC = read_floats(argv[11], (size_t)B);
    std::vector<__half> C16(Cf.size()), V16(Vf.size());
    for (size_t i = 0; i < Cf.size(); ++i) C16[i] = __float2half_rn(Cf[i]);
    for (size_t i = 0; i < Vf.size(); ++i) V16[i] = __float2half_rn(Vf[i]);
    gridDim = {(unsigned)((c_end - c_start + 63) / 64), (unsigned)B, 1};
    run_grid<256>((size_t)std::atol(argv[12]), [&] {
        pair_smem(V16.data(), TW.data(), SC.data(), C16.data(), Ht.data(), k, m, n, n_tw,
                  c_start, c_end);
    });
    for (size_t i = 0; i < Cf.size(); ++i) Cf[i] = __half2float(C16[i]);
    write_floats(argv[7], Cf);
    write_floats(argv[8], Ht);
    return 0;
}
"""


def compare(C16_in, C_out, Ht, ref, k, c_start, c_end) -> float:
    """The kernel's result (``C_out`` float16 where it stores float16, ``Ht`` where float32)
    against ``ref``, relative to ``ref``'s largest entry; raises where it wrote outside its
    tile."""
    n = C_out.shape[1]
    out = C_out[:, c_start:c_end, k:].float()
    hot = torch.zeros_like(out, dtype=torch.bool)
    hot[:, :, :64] = True
    hot[:, : max(0, k + 128 - c_start), :] = True
    out = torch.where(hot, Ht[:, c_start:c_end, k:], out)
    keep = torch.ones(C_out.shape, dtype=torch.bool, device=C_out.device)
    keep[:, c_start:c_end, k:] = False
    if not torch.equal(C_out[keep], C16_in[keep]) or bool((Ht[keep] != 0).any()) or n < c_end:
        raise AssertionError("the kernel wrote outside its tile")
    return float((out - ref).abs().max() / ref.abs().max())


def operands(B, m, k, dev):
    """Random float16 ``C16`` (B, m, m), ``V16`` (B, 64, m; zero above row k), upper
    triangular ``TW`` and unit scales, as the GPU run and the host run draw them."""
    n = m
    g = torch.Generator().manual_seed(0)
    C16 = (torch.randn(B, n, m, generator=g) * 100).half()
    V16 = (torch.randn(B, 64, m, generator=g) * 0.05).half()
    V16[:, :, :k] = 0
    TW = torch.triu(torch.randn(B, n // 32, 32, 32, generator=g) * 0.1)
    return C16.to(dev), V16.to(dev), TW.to(dev), torch.ones(B, device=dev)


HOST_MAIN3 = HOST_MAIN.replace("run_grid<256>", "run_grid<128>").replace(
    "(c_end - c_start + 63) / 64", "(c_end - c_start + 31) / 32").replace("pair_smem(", "pair_smem3(")


def host():
    """Both kernels through the host shim against :func:`reference`: 2 x 256 x 256 at
    k = 64 (whole 64-row chunks) and 2 x 208 x 208 (a 16-row last chunk, a part tile)."""
    from adaptqr.testing import cuda_host

    for B, m, k in ((2, 256, 64), (2, 208, 64)):
        R, n, c_start = m - k, m, k + 64
        C16, V16, TW, SC = operands(B, m, k, "cpu")
        ref = reference(C16, V16, TW, SC, k, c_start, n)
        for name, src, main, defines, smem in (
                ("v2", SRC, HOST_MAIN, (("RMAX", R),), smem_bytes(R)),
                ("v3", SRC3, HOST_MAIN3, (), smem_bytes3(R))):
            C, Ht = C16.float(), torch.zeros(B, n, m)
            exe = cuda_host.build(src, main, defines)
            cuda_host.run(exe, [B, m, n, k, c_start, n], (C, Ht, V16.float(), TW, SC), [smem], 2)
            err = compare(C16.float(), C, Ht, ref, k, c_start, n)
            print(f"host {name} {B}x{m} k={k}: max rel err vs torch {err:.2e}")
            assert err < 2e-3, (name, err)


def main():
    if sys.argv[1:2] == ["--host"]:
        return host()
    import cupy as cp
    import numpy as np

    B = int(sys.argv[1]) if len(sys.argv) > 1 else 640
    m = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    ks = [int(x) for x in sys.argv[3:]] or [64, 128, 192]
    n = m
    n_tw = n // 32
    dev = torch.device("cuda")
    for k in ks:
        R = m - k
        C16, Vk, TW, SC = operands(B, m, k, dev)
        c_start, c_end = k + 64, n
        ref = reference(C16, Vk, TW, SC, k, c_start, c_end)
        stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        for name, build, bn, nt, smem in (("v2", kernel, 64, 256, smem_bytes(R)),
                                          ("v3", kernel3, 32, 128, smem_bytes3(R))):
            if smem > MAX_SMEM:
                print(f"{name} {B}x{m} k={k}: {smem / 1024:.0f} KB of shared memory, over the "
                      f"{MAX_SMEM // 1024} KB a CTA may take: not run", flush=True)
                continue
            fn = build(R)
            tiles = (c_end - c_start + bn - 1) // bn
            C = C16.clone()
            Ht = torch.zeros(B, n, m, device=dev)
            args = (np.uint64(Vk.data_ptr()), np.uint64(TW.data_ptr()), np.uint64(SC.data_ptr()),
                    np.uint64(C.data_ptr()), np.uint64(Ht.data_ptr()), np.int32(k), np.int32(m),
                    np.int32(n), np.int32(n_tw), np.int32(c_start), np.int32(c_end))
            with stream:
                fn((tiles, B), (nt,), args, shared_mem=smem)
            torch.cuda.synchronize()
            err = compare(C16, C, Ht, ref, k, c_start, c_end)
            # Time: 20 launches, L2 flushed before each.
            flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
            times = []
            for _ in range(20):
                C.copy_(C16)  # in place: each timed launch starts from the same values
                flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                with stream:
                    fn((tiles, B), (nt,), args, shared_mem=smem)
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e) * 1e3)
            times.sort()
            tb = B * (c_end - c_start) * R * 2 * 2
            print(f"{name} {B}x{m} k={k}: {tiles}x{B} CTAs, smem {smem / 1024:.0f} KB, median "
                  f"{times[10]:.1f} us (min {times[0]:.1f}), tile bytes {tb / 1e6:.0f} MB -> "
                  f"{tb / times[10] / 1e6:.2f} TB/s; max rel err vs torch {err:.2e}", flush=True)


if __name__ == "__main__":
    main()
