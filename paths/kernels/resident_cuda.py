"""The whole QR of a matrix in one CTA, resident in its registers (CUDA C, cupy / NVRTC).

One CTA factors matrix ``blockIdx.x`` (LAPACK geqr2, column by column) with no trailing
launches and no round trip through global memory between the columns: the matrix is
loaded once and stored once. For matrices whose ``m x n`` entries fit one SM's registers
(:func:`shape_for`), where the blocked schedule's chain of panel and update launches sets
the time (40x176: six panel launches of ~29 us, EXPERIMENTS.md H26).

Storage: ``Ht`` ``(B, n, m)`` contiguous (column ``c`` of matrix ``b`` is ``Ht[b, c, :]``),
``TAU`` ``(B, n)``, ``NA`` ``(B,)`` int32 (``n_active``: columns from it on get ``tau = 0``
and are left as the earlier reflectors left them).

Layout: ``NW`` warps; lane ``l`` holds rows ``l + 32 i`` (``i < RPL``), warp ``w`` columns
``w + NW q`` (``q < CPW``), in ``a[q][i]``. So each column lives in one warp, and a column
step's sums over the rows are warp reductions (shuffles), with no exchange between warps
but the reflector itself. Step ``k``:

1. one barrier, after which every warp reads ``v_k`` (below its unit top) and ``tau_k``
   from shared memory (two buffers, alternating: the buffer a step writes was last read
   before the step's barrier);
2. every warp applies ``H_k`` to its columns after ``k`` (``w = v^T a``, then
   ``a -= tau w v``), in column order, so that the warp owning column ``k + 1`` updates
   it first and then makes reflector ``k + 1`` from it (the scalars of
   :func:`adaptqr.paths.kernels.panel._reflector`, with its guards for tiny, huge and
   degenerate columns) while the other warps finish step ``k``.

Example (GPU with cupy)::

    >>> from adaptqr.paths.kernels import resident_cuda
    >>> resident_cuda.shape_for(176, 176)
    (16, 6, 11)
    >>> resident_cuda.shape_for(4096, 64) is None
    True
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from adaptqr.paths.kernels.panel_cuda import compiles

SRC = r"""
#define FULL 0xffffffffu
// NW, RPL, CPW and CP2 (the power of two >= CPW, at most 32) come from the compile options.
#define NT (NW * 32)
#define SAFE_LO 8.673617379884035e-19f
#define SAFE_HI 1.152921504606847e18f
#define SAFE_UP 1.2089258196146292e24f
#define PLAIN_SS_LO 7.888609052210118e-31f
#define PLAIN_SS_HI 1.2676506002282294e30f

__device__ __forceinline__ float range_scale(float x) {
    return (x < SAFE_LO && x > 0.0f) ? SAFE_UP : (x > SAFE_HI ? 1.0f / SAFE_UP : 1.0f);
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(FULL, x, o);
    return x;
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(FULL, x, o));
    return x;
}

// One round of the transposing butterfly (panel_cuda's): lanes with bit H keep the upper
// H values, the others the lower H, each adding its partner's copy of the half it keeps.
template <int H>
__device__ __forceinline__ void fold(float* pp, int lane) {
    const bool up = (lane & H) != 0;
#pragma unroll
    for (int q = 0; q < H; ++q) {
        const float send = up ? pp[q] : pp[q + H];
        const float keep = up ? pp[q + H] : pp[q];
        pp[q] = keep + __shfl_xor_sync(FULL, send, H);
    }
}

// The warp sums of CP2 values a lane at once: lane l (< CP2) ends with value l's. CP2 - 1
// shuffles and 5 - log2 CP2 more, against 5 CP2 summed one by one.
__device__ __forceinline__ float warp_sums(float* pp, int lane) {
    if constexpr (CP2 >= 32) fold<16>(pp, lane);
    if constexpr (CP2 >= 16) fold<8>(pp, lane);
    if constexpr (CP2 >= 8) fold<4>(pp, lane);
    if constexpr (CP2 >= 4) fold<2>(pp, lane);
    if constexpr (CP2 >= 2) fold<1>(pp, lane);
    float x = pp[0];
#pragma unroll
    for (int o = 16; o >= CP2; o >>= 1) x += __shfl_xor_sync(FULL, x, o);
    return x;
}

// Column c (this warp's; lane l staged rows l + 32 i of it in `stage`, as step c - 1 found
// it): H_{c-1} applied (`upd`: tau != 0; v, tau its reflector), then its reflector: v (unit
// top, zeros above) into vout, tau into tout[0] and TAU, and the column as geqrf leaves it
// (R's entries, then v below the top) into col, rows < m. Every lane computes the scalars
// from the same butterfly sums, so they are warp-uniform.
__device__ __forceinline__ void reflect(const float* stage, int c, int lane, int m, float floor_,
                                        const float (&v)[RPL], float tau_prev, bool upd,
                                        float* vout, float* tout, float* tau_g, float* col) {
    float x[RPL];
#pragma unroll
    for (int i = 0; i < RPL; ++i) x[i] = stage[lane + 32 * i];
    if (upd) {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < RPL; ++i) s += x[i] * v[i];
        const float tw = tau_prev * warp_sum(s);
#pragma unroll
        for (int i = 0; i < RPL; ++i) x[i] -= tw * v[i];
    }
    float ap = 0.0f, sp = 0.0f;
#pragma unroll
    for (int i = 0; i < RPL; ++i) {
        const int r = lane + 32 * i;
        if (r == c) ap = x[i];
        if (r > c) sp += x[i] * x[i];
    }
    const float alpha = __shfl_sync(FULL, ap, c & 31);
    const float ss = warp_sum(sp);
    float xnp, p;
    if (ss >= PLAIN_SS_LO && ss <= PLAIN_SS_HI) {
        const float xnorm = sqrtf(ss);
        p = range_scale(fmaxf(fabsf(alpha), xnorm));
        xnp = xnorm * p;
    } else {
        float mx = 0.0f;
#pragma unroll
        for (int i = 0; i < RPL; ++i)
            if (lane + 32 * i > c) mx = fmaxf(mx, fabsf(x[i]));
        const float amax = warp_max(mx);
        const float q = range_scale(amax);
        const float s = amax > 0.0f ? amax : 1.0f;
        const float inv = 1.0f / (s * q);
        float s2 = 0.0f;
#pragma unroll
        for (int i = 0; i < RPL; ++i) {
            if (lane + 32 * i > c) {
                const float xs = (x[i] * q) * inv;
                s2 += xs * xs;
            }
        }
        s2 = warp_sum(s2);
        p = range_scale(fmaxf(fabsf(alpha), amax));
        xnp = (s * p) * sqrtf(s2);
    }
    // dlarfg's scalars (panel._reflector).
    const float apv = alpha * p;
    const float mxv = fmaxf(fabsf(apv), xnp);
    const float mxs = mxv > 0.0f ? mxv : 1.0f;
    const float a_ = apv / mxs, x_ = xnp / mxs;
    const float nrm = mxs * sqrtf(a_ * a_ + x_ * x_);
    const bool d = (xnp != 0.0f) && !(xnp < floor_ * p);
    const float beta_p = alpha >= 0.0f ? -nrm : nrm;
    const float tau = d ? (beta_p - apv) / beta_p : 0.0f;
    const float scale = d ? 1.0f / (apv - beta_p) : 0.0f;
    const float beta = d ? beta_p * (1.0f / p) : alpha;
#pragma unroll
    for (int i = 0; i < RPL; ++i) {
        const int r = lane + 32 * i;
        const float vb = r > c ? (x[i] * p) * scale : 0.0f;
        vout[r] = r == c ? 1.0f : vb;
        if (r < m) col[r] = r == c ? beta : ((r > c && d) ? vb : x[i]);
    }
    if (lane == 0) {
        tout[0] = tau;
        tau_g[c] = tau;
    }
}

// Reflectors travel through a ring of RING buffers with two counters instead of a CTA
// barrier a step: `pub`, the reflectors published (the owner of column k + 1 raises it to
// k + 2 once v_{k+1} and tau_{k+1} are written), and `cons[w]`, the reflectors warp w has
// read. A warp waits only for the reflector it needs, and the owner of k + 1 waits only
// for every warp to have read v_{k+1-RING}, whose buffer it reuses: the warps run up to
// RING - 1 steps apart instead of in lockstep.
#define RING 4
// A waiting warp sleeps a little between polls, leaving the issue slots of its scheduler
// to the warp that makes the next reflector; the host shim (adaptqr.testing.cuda_host)
// yields its thread instead.
#ifndef SPIN_PAUSE
#define SPIN_PAUSE() __nanosleep(20)
#endif

__device__ __forceinline__ void wait_at_least(volatile int* x, int target) {
    while (*x < target) SPIN_PAUSE();
    __threadfence_block();
}

extern "C" __global__ void __launch_bounds__(NT)
resident_qr(float* __restrict__ Ht, float* __restrict__ TAU, const int* __restrict__ NA,
            int m, int n, int has_na, float floor_) {
    __shared__ float vbuf[RING][RPL * 32];
    __shared__ float stage[NW][RPL * 32];
    __shared__ float tbuf[RING];
    __shared__ volatile int pub;
    __shared__ volatile int cons[NW];
    const int b = blockIdx.x, t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float* base = Ht + (long long)b * m * n;
    float* tau_g = TAU + (long long)b * n;
    float* my_stage = stage[warp];
    float a[CPW][RPL];
#pragma unroll
    for (int q = 0; q < CPW; ++q) {
        const int c = warp + NW * q;
#pragma unroll
        for (int i = 0; i < RPL; ++i) {
            const int r = lane + 32 * i;
            a[q][i] = (c < n && r < m) ? base[(long long)c * m + r] : 0.0f;
        }
    }
    const int na = has_na ? NA[b] : n;
    const int kend = na < n ? (na > 0 ? na : 0) : n;
    for (int c = kend + t; c < n; c += NT) tau_g[c] = 0.0f;
    if (t == 0) pub = 0;
    if (t < NW) cons[t] = 0;
    __syncthreads();
    // This warp's slots of columns < n; a reflected column is stored at once (final from
    // then on) and its registers go unused.
    const int qhi = (n - warp + NW - 1) / NW;
    float v[RPL];
#pragma unroll
    for (int i = 0; i < RPL; ++i) v[i] = 0.0f;
    if (kend > 0 && warp == 0) {
#pragma unroll
        for (int i = 0; i < RPL; ++i) my_stage[lane + 32 * i] = a[0][i];
        reflect(my_stage, 0, lane, m, floor_, v, 0.0f, false, vbuf[0], &tbuf[0], tau_g, base);
        __threadfence_block();
        __syncwarp();
        if (lane == 0) pub = 1;
    }
#pragma unroll 1
    for (int k = 0; k < kend; ++k) {
        wait_at_least(&pub, k + 1);
        const int slot = k % RING;
        const float tau = tbuf[slot];
        // H_k = I where tau is 0 (a zero or negligible column).
        const bool upd = tau != 0.0f;
#pragma unroll
        for (int i = 0; i < RPL; ++i) v[i] = vbuf[slot][lane + 32 * i];
        __threadfence_block();
        __syncwarp();
        if (lane == 0) cons[warp] = k + 1;
        // This warp's columns <= k are done: slots from qlo on are left.
        int qlo = k >= warp ? (k - warp) / NW + 1 : 0;
        // Column k + 1 first, if it is this warp's (its slot qlo): staged as it is, then
        // updated and reflected from the stage (one inlined reflector, no register array
        // indexed at run time), while the other warps update their columns.
        if ((k + 1) % NW == warp && k + 1 < kend) {
#pragma unroll
            for (int q = 0; q < CPW; ++q)
                if (q == qlo)
#pragma unroll
                    for (int i = 0; i < RPL; ++i) my_stage[lane + 32 * i] = a[q][i];
            const int slot1 = (k + 1) % RING;
            if (lane < NW) wait_at_least(&cons[lane], k + 2 - RING);
            __syncwarp();
            reflect(my_stage, k + 1, lane, m, floor_, v, tau, upd, vbuf[slot1], &tbuf[slot1],
                    tau_g, base + (long long)(k + 1) * m);
            __threadfence_block();
            __syncwarp();
            if (lane == 0) pub = k + 2;
            ++qlo;
        }
        if (upd) {
            float pp[CP2];
#pragma unroll
            for (int q = 0; q < CP2; ++q) {
                float s = 0.0f;
                if (q < CPW && q >= qlo && q < qhi) {
#pragma unroll
                    for (int i = 0; i < RPL; ++i) s += a[q < CPW ? q : 0][i] * v[i];
                }
                pp[q] = s;
            }
            const float w = warp_sums(pp, lane);
#pragma unroll
            for (int q = 0; q < CPW; ++q) {
                if (q >= qlo && q < qhi) {
                    const float tw = tau * __shfl_sync(FULL, w, q);
#pragma unroll
                    for (int i = 0; i < RPL; ++i) a[q][i] -= tw * v[i];
                }
            }
        }
    }
    // The columns never reflected (n_active): as the reflectors before them left them.
#pragma unroll
    for (int q = 0; q < CPW; ++q) {
        const int c = warp + NW * q;
#pragma unroll
        for (int i = 0; i < RPL; ++i) {
            const int r = lane + 32 * i;
            if (c >= kend && c < n && r < m) base[(long long)c * m + r] = a[q][i];
        }
    }
}
"""

#: Most matrix entries a thread holds (``RPL * CPW``): at 16 warps (128 registers a thread)
#: 72 values left the rest room without spills; at 8 warps or fewer (255 registers) 132
#: (176 x 176: 210 registers; ptxas 13, sm_90).
MAX_HELD, MAX_HELD_FEW_WARPS = 72, 132
#: Warps a CTA: 16 (512 threads, one CTA an SM at ~100 registers).
WARPS = 16


def shape_for(m: int, n: int, warps: int = WARPS) -> tuple[int, int, int] | None:
    """``(NW, RPL, CPW)`` of the build that holds an ``m x n`` matrix (``m >= n``) in one CTA
    of ``warps`` warps, or None where it would hold more than :data:`MAX_HELD` entries a
    thread (or more than 32 columns a warp, the batched sums' most).

    >>> shape_for(176, 176), shape_for(128, 100), shape_for(300, 300)
    ((16, 6, 11), (16, 4, 7), None)
    >>> shape_for(176, 176, 8)
    (8, 6, 22)
    """
    rpl, cpw = -(-m // 32), -(-n // warps)
    if rpl * cpw > (MAX_HELD if warps > 8 else MAX_HELD_FEW_WARPS) or cpw > 32:
        return None
    return warps, rpl, cpw


def defines(nw: int, rpl: int, cpw: int) -> tuple:
    """The build's compile-time constants for :func:`shape_for`'s ``(NW, RPL, CPW)``, with
    ``CP2``, the power of two the warp's batched sums pad ``CPW`` to (at most 32).

    >>> defines(16, 6, 11)
    (('NW', 16), ('RPL', 6), ('CPW', 11), ('CP2', 16))
    """
    return ("NW", nw), ("RPL", rpl), ("CPW", cpw), ("CP2", 1 << (cpw - 1).bit_length())


@functools.lru_cache(maxsize=None)
def _kernel(nw: int, rpl: int, cpw: int, device_index: int):
    import cupy as cp

    with cp.cuda.Device(device_index):
        opts = ("-std=c++17",) + tuple(f"-D{k}={v}" for k, v in defines(nw, rpl, cpw))
        return cp.RawModule(code=SRC, options=opts).get_function("resident_qr")


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """Whether cupy imports, a CUDA device is there and the kernel compiles for it (else the
    blocked schedule runs, with one warning logged)."""
    from adaptqr.paths.kernels import panel_cuda

    if not panel_cuda.available():
        return False
    return compiles(lambda: _kernel(*shape_for(176, 176), torch.cuda.current_device()),
                    "resident CUDA C QR", "the blocked schedule runs instead")


def launch(Ht: torch.Tensor, tau: torch.Tensor, na: torch.Tensor, m: int, n: int,
           has_na: bool, floor: float, warps: int = WARPS) -> None:
    """geqrf of the ``Ht.shape[0]`` matrices ``Ht`` ``(B, n, m)`` in place, ``tau`` ``(B, n)``
    written; one launch on torch's current stream (capturable: no allocation, no sync).
    ``na``: ``n_active`` (read where ``has_na``); ``floor``: a sub-column norm below it
    gives no reflector (``panel.NEGLIGIBLE_SUBCOLUMN`` or 0)."""
    from adaptqr.paths.kernels.panel_cuda import _stream

    shape = shape_for(m, n, warps)
    if shape is None:
        raise ValueError(f"resident_cuda: a {m}x{n} matrix does not fit one CTA of {warps} warps")
    dev = Ht.device.index if Ht.device.index is not None else torch.cuda.current_device()
    kern = _kernel(*shape, dev)
    stream = _stream(torch.cuda.current_stream(Ht.device).cuda_stream, dev)
    args = (np.uint64(Ht.data_ptr()), np.uint64(tau.data_ptr()), np.uint64(na.data_ptr()),
            np.int32(m), np.int32(n), np.int32(1 if has_na else 0), np.float32(floor))
    import cupy as cp

    # cupy's current device is its own (thread-local, 0 by default), not torch's.
    if cp.cuda.runtime.getDevice() != dev:
        with cp.cuda.Device(dev), stream:
            kern((Ht.shape[0],), (shape[0] * 32,), args)
        return
    with stream:
        kern((Ht.shape[0],), (shape[0] * 32,), args)
