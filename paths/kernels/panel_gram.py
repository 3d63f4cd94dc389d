"""The CUDA C panel's Gram build (``GRAM=1``, EXPERIMENTS.md H22): its device functions,
spliced into :data:`adaptqr.paths.kernels.panel_cuda_src.SRC` before the kernel, and which
launches take it.

A panel is first factored as CholeskyQR2 (two Grams of the held rows, two 32 x 32
Cholesky factors by one warp, two triangular solves of every row) and rebuilt into
Householder form (one more solve) by LAPACK ``orhr_col``'s sign-choosing LU of ``Q_top - S``: geqrf's
reflectors, taus, R and the panel's T. Its serial chains are three 32-step chains on
32 x 32 matrices in one warp instead of the column steps' 32 reductions over every row.
The kernel takes the column steps instead, from the untouched input, for a matrix whose
panel its tests reject (docs/NUMERICS.md, "Gram panels"). The algebra, step for step in
torch: tests/test_gram_panel_math.py.

Example::

    >>> gram_build(128, 32, 32), gram_smem(128)
    (True, 18432)
"""

from __future__ import annotations

GRAM_FUNCS = r"""
// GRAM 1: the panel is first tried as CholeskyQR2 rebuilt into Householder form (LAPACK
// orhr_col's sign-choosing LU of Q_top - S; Ballard et al. 2015): two Grams, two 32x32
// Cholesky factors, one LU, each a short chain in one warp, instead of 32 column steps that
// each reduce over every row (EXPERIMENTS.md H22). A panel the tests reject (a pivot below
// GRAM_TOL of its column's squared norm, a Gram diagonal out of the plain sum's range, a
// second Gram far from I, a reflector whose sub-column nearly vanishes: tau near 2) is
// factored by the column steps after all, from the untouched input. Every test reads
// values with the same bits in every CTA of a cluster, so the choice is uniform.
#ifndef GRAM
#define GRAM 0
#endif
// The Cholesky's 32 steps are unrolled (EXPERIMENTS.md H32), so no slot rotates (register
// names instead of moves) and no step updates a slot past the last row, which slot s at step
// i holds from i + s = NB on: about half a step's fmas and loads (sm_90: 47 instructions a
// step against a loop's 96). The LU stays a loop of two steps a pass (H45): unrolled whole,
// it spilled at every step.
#define CHAIN_LIVE(i, s) ((i) + (s) < NB)
#if GRAM
#define GS 36                       // row stride of float4-read arrays
// Numerical margins (docs/NUMERICS.md, "Gram panels"), not timings. 2^-10: a column at
// least ~1.8 degrees from the span of the ones before, so the first pass's Q stays close
// enough to orthonormal for the second to restore it; 0.5: the second Gram near I, i.e.
// it did; 2 - 2^-12: a sub-column under ~2 % of its column's norm is left to the column
// steps, which give tau = 0 where it is exactly zero, as geqrf does.
#define GRAM_TOL 9.765625e-4f       // 2^-10
#define GRAM_TOL2 0.5f
#define GRAM_TAU_MAX 1.999755859375f  // 2 - 2^-12

// GRAM_MMA 1 (EXPERIMENTS.md H52, off: an A/B build): each warp's Gram on tensor cores,
// mma.sync m16n8k8 with tf32 operands split in two (3xTF32: hi hi + hi lo + lo hi, the
// lo lo term left out; 72 mma on the six tiles at or above G's diagonal blocks), ~500
// instructions a staged block of 32 rows instead of ~1,300, on the warp's path that H50
// found is the panel's time.
#ifndef GRAM_MMA
#define GRAM_MMA 0
#endif
#if GRAM_MMA
// x rounded to tf32 (10 stored bits, to nearest, ties away from zero), as a float whose
// low 13 bits are zero; infinities and NaNs pass (the range test rejects their panel).
#ifdef ADAPTQR_HOST
static unsigned __float_as_uint(float x) { unsigned u; memcpy(&u, &x, 4); return u; }
static float __uint_as_float(unsigned u) { float x; memcpy(&x, &u, 4); return x; }
#endif
__device__ __forceinline__ float tf32_hi(float x) {
    unsigned u = __float_as_uint(x);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    return __uint_as_float(u);
}

// d (a 16 x 8 tile, the m16n8k8 accumulator layout) += A (16 x 8) B (8 x 8) in tf32.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const float (&a)[4], const float (&b)[2]) {
#ifdef ADAPTQR_HOST
    // The shim: lane (g, t) = (lane / 4, lane % 4) holds A[g + 8 (r % 2)][t + 4 (r / 2)] in
    // a[r], B[t + 4 r][g] in b[r] and D[g + 8 (r / 2)][2 t + r % 2] in d[r] (PTX ISA,
    // "Matrix Fragments for mma.m16n8k8" with .tf32); each product gathered by exchanges.
    const int lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    for (int k = 0; k < 8; ++k) {
        const float a_top = __shfl_sync(FULL, a[2 * (k >> 2)], 4 * g + (k & 3));      // row g
        const float a_bot = __shfl_sync(FULL, a[2 * (k >> 2) + 1], 4 * g + (k & 3));  // g + 8
        const float b0 = __shfl_sync(FULL, b[k >> 2], 4 * (2 * t) + (k & 3));
        const float b1 = __shfl_sync(FULL, b[k >> 2], 4 * (2 * t + 1) + (k & 3));
        d[0] = fmaf(a_top, b0, d[0]);
        d[1] = fmaf(a_top, b1, d[1]);
        d[2] = fmaf(a_bot, b0, d[2]);
        d[3] = fmaf(a_bot, b1, d[3]);
    }
#else
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])),
                   "r"(__float_as_uint(a[2])), "r"(__float_as_uint(a[3])),
                   "r"(__float_as_uint(b[0])), "r"(__float_as_uint(b[1])));
#endif
}

// The warp's 32 staged rows st (row l at st + l * GS): d[q] += the q-th upper 16 x 8 tile of
// st^T st in the accumulator layout (GRAM_TILES; G is symmetric, so the two tiles below
// its diagonal blocks are left to gram_partial's mirrored store). A and B are the same
// matrix, so A's fragments are B's: B[k][j] = st[k][j] at k = t + 4 r, j = 8 nj + g is
// b[nj][r], and A[i][k] = st[k][i] at i = 16 mi + g + 8 (r % 2), k = t + 4 (r / 2) is
// b[2 mi + r % 2][r / 2].
// Tile q's (mi, nj): rows 0-15 by columns 0-31 (q < 4), rows 16-31 by columns 16-31.
#define GRAM_TILES 6
#define GRAM_TILE_MI(q) ((q) >= 4)
#define GRAM_TILE_NJ(q) ((q) < 4 ? (q) : (q) - 2)
__device__ __forceinline__ void gram_mma_block(const float* st, float (&d)[GRAM_TILES][4], int lane) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
        const float* r0 = st + (8 * ks + t) * GS;      // staged row k = 8 ks + t
        const float* r1 = r0 + 4 * GS;                  // and k + 4
        float bh[4][2], bl[4][2];
#pragma unroll
        for (int nj = 0; nj < 4; ++nj) {
            const float x[2] = {r0[8 * nj + g], r1[8 * nj + g]};
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                bh[nj][r] = tf32_hi(x[r]);
                bl[nj][r] = tf32_hi(x[r] - bh[nj][r]);
            }
        }
#pragma unroll
        for (int q = 0; q < GRAM_TILES; ++q) {
            const int mi = GRAM_TILE_MI(q), nj = GRAM_TILE_NJ(q);
            const float ah[4] = {bh[2 * mi][0], bh[2 * mi + 1][0], bh[2 * mi][1], bh[2 * mi + 1][1]};
            const float al[4] = {bl[2 * mi][0], bl[2 * mi + 1][0], bl[2 * mi][1], bl[2 * mi + 1][1]};
            mma_tf32(d[q], al, bh[nj]);  // the small terms first
            mma_tf32(d[q], ah, bl[nj]);
            mma_tf32(d[q], ah, bh[nj]);
        }
    }
}
#endif

// This CTA's partial Gram of the held rows into gcp: each warp stages its 32 rows in
// shared memory, lane j sums column j of the warp's 32 x 32 products (GRAM_MMA: the
// warp's tensor cores sum them), the warps' partials are added in warp order.
__device__ __forceinline__ void gram_partial(const float (&a)[R][NB], float* gb,
                                             float (*gcp)[NB + 1], int t, int lane, int warp) {
    float* st = gb + warp * (32 * GS);
#if GRAM_MMA
    float d[GRAM_TILES][4];
#pragma unroll
    for (int q = 0; q < GRAM_TILES; ++q)
#pragma unroll
        for (int r = 0; r < 4; ++r) d[q][r] = 0.0f;
#else
    float g[NB];
#pragma unroll
    for (int q = 0; q < NB; ++q) g[q] = 0.0f;
#endif
#pragma unroll
    for (int i = 0; i < R; ++i) {
        float4* dst = reinterpret_cast<float4*>(st + lane * GS);
#pragma unroll
        for (int p = 0; p < NB / 4; ++p)
            dst[p] = make_float4(a[i][4 * p], a[i][4 * p + 1], a[i][4 * p + 2], a[i][4 * p + 3]);
        __syncwarp();
#if GRAM_MMA
        gram_mma_block(st, d, lane);
#else
#pragma unroll 2
        for (int l = 0; l < 32; ++l) {
            const float4* src = reinterpret_cast<const float4*>(st + l * GS);
            const float own = st[l * GS + lane];
#pragma unroll
            for (int p = 0; p < NB / 4; ++p) {
                const float4 x = src[p];
                g[4 * p] = fmaf(x.x, own, g[4 * p]);
                g[4 * p + 1] = fmaf(x.y, own, g[4 * p + 1]);
                g[4 * p + 2] = fmaf(x.z, own, g[4 * p + 2]);
                g[4 * p + 3] = fmaf(x.w, own, g[4 * p + 3]);
            }
        }
#endif
        __syncwarp();
    }
#if GRAM_MMA
    {
        // Tile q's entry r at (i, j) = (16 mi + g + 8 (r / 2), 8 nj + 2 t + r % 2); the
        // off-diagonal block (rows 0-15, columns 16-31) at (j, i) too.
        const int g = lane >> 2, tg = lane & 3;
#pragma unroll
        for (int q = 0; q < GRAM_TILES; ++q)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int i = 16 * GRAM_TILE_MI(q) + g + 8 * (r >> 1);
                const int j = 8 * GRAM_TILE_NJ(q) + 2 * tg + (r & 1);
                st[i * GS + j] = d[q][r];
                if (q == 2 || q == 3) st[j * GS + i] = d[q][r];  // the off-diagonal block
            }
    }
#else
#pragma unroll
    for (int q = 0; q < NB; ++q) st[q * GS + lane] = g[q];
#endif
    __syncthreads();
#pragma unroll
    for (int x = 0; x < NB * NB / NT; ++x) {
        const int e = t + x * NT, r = e >> 5, c = e & 31;
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < NW; ++w) s += gb[w * 32 * GS + r * GS + c];
        gcp[r][c] = s;
    }
    __syncthreads();
}

// Lane j's column of G into g; returns its diagonal entry.
__device__ __forceinline__ float chol_column(const float (*G)[NB + 1], float (&g)[NB], int lane) {
#pragma unroll
    for (int q = 0; q < NB; ++q) g[q] = G[q][lane];
    return G[lane][lane];
}

// Upper Cholesky factor R of G (R^T R = G) by one warp, lane j holding column j (slot q:
// row kk + q at step kk). Writes M = R as mt[c][p] = R[p][c] (p < c, zero for p >= c),
// dg[c] = R[c][c], mi[c] = 1 / R[c][c]. True (every lane) where each pivot keeps more than
// tol of its column's squared norm and the diagonal is in the plain sum's range.
// The pivot chain stays off shared memory (EXPERIMENTS.md H32). Step kk + 1's pivot is
// lane kk + 1's slot 1 after step kk, which that lane computes from its own R[kk][kk + 1]
// (the fma the update would do) and shuffles at once; every lane's next slot 0 takes
// R[kk][kk + 1] by a shuffle too. The other slots take step kk's row from prow at step
// kk + 1, beside its rsqrt (slot 1's first, which the pivot needs): prow is two buffers of
// NB, the steps alternating, so no lane posts a row over one that another lane still reads.
__device__ __forceinline__ bool chol_warp(const float (*G)[NB + 1], float* mt, float* dg,
                                          float* mi, float* prow, float tol, int lane) {
    float g[NB];
    const float d0 = chol_column(G, g, lane);
    bool ok = d0 >= PLAIN_SS_LO && d0 <= PLAIN_SS_HI;
    prow[NB + lane] = 0.0f;  // "step -1"'s row: its update below leaves every slot as it is
    __syncwarp();
    float d = __shfl_sync(FULL, g[0], 0);
    float rkp = 0.0f;  // this lane's R[kk - 1][lane], the factor of the update slots 1.. owe
#pragma unroll
    for (int kk = 0; kk < NB; ++kk) {
        const float dk0 = __shfl_sync(FULL, d0, kk);
        ok = ok && (d > tol * dk0);
        const float ri = rsqrtf(d);
        const float r = d * ri;
        // Step kk - 1's update of slots 1..: slot q (row kk + q) takes its row's entry q + 1.
        const float4* pr = reinterpret_cast<const float4*>(prow + ((kk + 1) & 1) * NB);
        const float4 x0 = pr[0];
        g[1] = fmaf(-x0.z, rkp, g[1]);
        if (CHAIN_LIVE(kk, 2)) g[2] = fmaf(-x0.w, rkp, g[2]);
        const float rk = lane == kk ? r : g[0] * ri;
        const int nx = (kk + 1) & (NB - 1);
        d = __shfl_sync(FULL, fmaf(-rk, rk, g[1]), nx);  // lane nx's slot 1 after this step
        const float p1 = __shfl_sync(FULL, rk, nx);         // R[kk][kk + 1]
#pragma unroll
        for (int p = 1; p < NB / 4; ++p) {
            if (!CHAIN_LIVE(kk, 4 * p - 1)) break;
            const float4 x = pr[p];
            g[4 * p - 1] = fmaf(-x.x, rkp, g[4 * p - 1]);
            if (CHAIN_LIVE(kk, 4 * p)) g[4 * p] = fmaf(-x.y, rkp, g[4 * p]);
            if (CHAIN_LIVE(kk, 4 * p + 1)) g[4 * p + 1] = fmaf(-x.z, rkp, g[4 * p + 1]);
            if (CHAIN_LIVE(kk, 4 * p + 2)) g[4 * p + 2] = fmaf(-x.w, rkp, g[4 * p + 2]);
        }
        prow[(kk & 1) * NB + ((lane - kk) & (NB - 1))] = rk;
        mt[lane * GS + kk] = kk < lane ? rk : 0.0f;
        if (lane == kk) { dg[kk] = r; mi[kk] = ri; }
        const float g0 = fmaf(-p1, rk, g[1]);
#pragma unroll
        for (int q = 1; q < NB - 1; ++q) g[q] = g[q + 1];
        g[0] = g0;
        rkp = rk;
        __syncwarp();
    }
    return __all_sync(FULL, ok);
}

// acc + sg sum_{p < c} v[p] x[p] (sg = +-1), one fma a term in p order, x 16-byte aligned
// in shared memory: the prefix products of the triangular solves and products (c is a
// constant where the callers' loops are unrolled).
__device__ __forceinline__ float dot_prefix(const float (&v)[NB], const float* x, int c,
                                            float acc, float sg) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
#pragma unroll
    for (int p = 0; p < (c + 3) / 4; ++p) {
        const float4 y = x4[p];
        if (4 * p < c) acc = fmaf(sg * v[4 * p], y.x, acc);
        if (4 * p + 1 < c) acc = fmaf(sg * v[4 * p + 1], y.y, acc);
        if (4 * p + 2 < c) acc = fmaf(sg * v[4 * p + 2], y.z, acc);
        if (4 * p + 3 < c) acc = fmaf(sg * v[4 * p + 3], y.w, acc);
    }
    return acc;
}

// Each held row x <- x M^-1 for the upper triangular M of chol_warp's layout.
__device__ __forceinline__ void solve_rows(float (&a)[R][NB], const float* mt, const float* mi) {
#pragma unroll
    for (int c = 0; c < NB; ++c) {
        const float inv = mi[c];
#pragma unroll
        for (int i = 0; i < R; ++i) a[i][c] = dot_prefix(a[i], mt + c * GS, c, a[i][c], -1.0f) * inv;
    }
}

// Lane j's row of the LU into prow (entry q: column j + q).
__device__ __forceinline__ void post_row(float* prow, const float (&mr)[NB]) {
    float4* pw4 = reinterpret_cast<float4*>(prow);
#pragma unroll
    for (int p = 0; p < NB / 4; ++p)
        pw4[p] = make_float4(mr[4 * p], mr[4 * p + 1], mr[4 * p + 2], mr[4 * p + 3]);
}

// orhr_col's LU of Q_top - S by one warp, lane l holding row l of Q_top (slot q: column
// j + q at step j): s_j = -sign(pivot), U[j][j] = pivot - s_j. Writes U in chol_warp's
// layout (mt, dg, mi), L1's strict lower part gl[l][j] (zero elsewhere) and the signs sv.
// True where every |U[j][j]| (tau_j) stays below GRAM_TAU_MAX.
__device__ __forceinline__ bool lu_warp(const float (&top)[NB], float* mt, float* dg, float* mi,
                                        float (*gl)[GS], float* sv, float* prow, int lane) {
    float mr[NB];
#pragma unroll
    for (int q = 0; q < NB; ++q) mr[q] = top[q];
    bool ok = true;
    // Row j's entries right of its pivot are final at step j's start, so lane j posts
    // them while the pivot travels (entry 0, the pivot's, is read by no lane), and every
    // lane reads them before the pivot's reciprocal is known. The update runs on every lane
    // with lj zero at and above row j: rows there are finished, so what it leaves in them
    // (a zero's sign, say) is never read. Two steps a pass: -0.8 % at 40x176, the same bits,
    // less spill at NT=256 R=2 (EXPERIMENTS.md H45).
#pragma unroll 2
    for (int j = 0; j < NB; ++j) {
        const float piv = __shfl_sync(FULL, mr[0], j);
        if (lane == j) post_row(prow, mr);
        __syncwarp();
        const float4* pr = reinterpret_cast<const float4*>(prow);
        const float4 x0 = pr[0];
        const float s = piv >= 0.0f ? -1.0f : 1.0f;
        const float u = piv - s;
        const float ui = 1.0f / u;
        ok = ok && fabsf(u) <= GRAM_TAU_MAX;
        const float lj = lane > j ? mr[0] * ui : 0.0f;
        mr[1] = fmaf(-lj, x0.y, mr[1]);
        mr[2] = fmaf(-lj, x0.z, mr[2]);
        mr[3] = fmaf(-lj, x0.w, mr[3]);
#pragma unroll
        for (int p = 1; p < NB / 4; ++p) {
            const float4 x = pr[p];
            mr[4 * p] = fmaf(-lj, x.x, mr[4 * p]);
            mr[4 * p + 1] = fmaf(-lj, x.y, mr[4 * p + 1]);
            mr[4 * p + 2] = fmaf(-lj, x.z, mr[4 * p + 2]);
            mr[4 * p + 3] = fmaf(-lj, x.w, mr[4 * p + 3]);
        }
        gl[lane][j] = lj;
        mt[lane * GS + j] = j < lane ? prow[lane - j] : 0.0f;
        if (lane == j) { dg[j] = u; mi[j] = ui; sv[j] = s; }
#pragma unroll
        for (int q = 0; q < NB - 1; ++q) mr[q] = mr[q + 1];
        __syncwarp();
    }
    return __all_sync(FULL, ok);
}
#endif
""".strip("\n")

#: The Gram build's CTAs: 64 to 256 threads (a warp each for T and for the stored first
#: rows, and its staging of :func:`gram_smem` bytes beside the static arrays).
GRAM_THREADS = (64, 256)


def gram_smem(nt: int) -> int:
    """Dynamic shared memory of the Gram build at ``nt`` threads: each warp's 32 staged rows
    of 36 floats.

    >>> gram_smem(128), gram_smem(256)
    (18432, 36864)
    """
    return (nt // 32) * 32 * 36 * 4


def gram_build(nt: int, pw: int, nb: int) -> bool:
    """Whether a panel of ``pw`` columns on CTAs of ``nt`` threads can take the Gram build.

    >>> gram_build(128, 32, 32), gram_build(32, 32, 32), gram_build(512, 32, 32), gram_build(128, 20, 32)
    (True, False, False, False)
    """
    return GRAM_THREADS[0] <= nt <= GRAM_THREADS[1] and pw == nb
