"""The CUDA C source of the register panel (:mod:`adaptqr.paths.kernels.panel_cuda` compiles
and launches it; its docstring has the contract and the layout). Compile-time options:
``NT`` threads, ``R`` rows a thread, ``CL`` CTAs a cluster, ``FUSE`` (one exchange a column
step, EXPERIMENTS.md H17), ``GRAM`` (CholeskyQR2 first, :mod:`.panel_gram`'s device
functions, H22).

Example::

    >>> from adaptqr.paths.kernels.panel_cuda_src import SRC
    >>> "panel_cuda(" in SRC and "#if GRAM" in SRC
    True
"""

from adaptqr.paths.kernels.panel_gram import GRAM_FUNCS
from adaptqr.paths.kernels.reflector_cuda import REFLECTOR_FUNCS

SRC = r"""
#define FULL 0xffffffffu
#define NW (NT / 32)
// NT and R come from the compile options.
#define NB 32
""" + REFLECTOR_FUNCS + r"""

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

// Block sums: every thread gets the same bits (warps' partials summed in one order).
__device__ __forceinline__ float block_sum(float x, float* buf, int lane, int warp) {
    x = warp_sum(x);
    if (lane == 0) buf[warp] = x;
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < NW; ++w) s += buf[w];
    return s;
}

__device__ __forceinline__ void block_sum2(float& a, float& b, float* buf, int lane, int warp) {
    a = warp_sum(a);
    b = warp_sum(b);
    if (lane == 0) { buf[2 * warp] = a; buf[2 * warp + 1] = b; }
    __syncthreads();
    float sa = 0.0f, sb = 0.0f;
#pragma unroll
    for (int w = 0; w < NW; ++w) { sa += buf[2 * w]; sb += buf[2 * w + 1]; }
    a = sa;
    b = sb;
}

__device__ __forceinline__ float block_max(float x, float* buf, int lane, int warp) {
    x = warp_max(x);
    if (lane == 0) buf[warp] = x;
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < NW; ++w) s = fmaxf(s, buf[w]);
    return s;
}

// One round of the transposing butterfly: lanes with bit H keep the upper H values, the
// others the lower H, each adding its partner's copy of the half it keeps.
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

// The whole butterfly: lane l ends with the warp's sum of slot l.
__device__ __forceinline__ void fold_all(float* pp, int lane) {
    fold<16>(pp, lane);
    fold<8>(pp, lane);
    fold<4>(pp, lane);
    fold<2>(pp, lane);
    fold<1>(pp, lane);
}

// The warp's sum over its threads' rows of a[.][l] * v[.], on lane l: one column of
// A^T v for each lane (per-thread partials, then the butterfly).
__device__ __forceinline__ float warp_atv(const float (&a)[R][NB], const float (&v)[R], int lane) {
    float pp[NB];
#pragma unroll
    for (int q = 0; q < NB; ++q) {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < R; ++i) s += a[i][q] * v[i];
        pp[q] = s;
    }
    fold_all(pp, lane);
    return pp[0];
}

// CL > 1: a cluster of CL CTAs a matrix, NT R rows each (rank r: rows k + r NT R ...); the
// CTAs' sums meet in distributed shared memory. Each exchange: every CTA posts its value in
// its own buffer (of two, alternating: a CTA is never two barriers ahead of another), one
// cluster barrier, then every thread adds the CTAs' posts in rank order (the same bits in
// every thread of the cluster, so the branches on them stay uniform).
#ifndef CL
#define CL 1
#endif
#if CL > 1
// (The host shim, adaptqr.testing.cuda_host, brings its own three of these.)
#ifndef ADAPTQR_HOST
__device__ __forceinline__ unsigned cta_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ void cluster_barrier() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
                 ::: "memory");
}

__device__ __forceinline__ float ld_cta(const float* p, unsigned rank) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    unsigned ra;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
    return v;
}
#endif

// a, b: this CTA's sums (the same in all its threads) -> the cluster's. Lane r of each
// warp reads rank r's post (CL remote loads a warp, not 32 CL), the warp shares them.
__device__ __forceinline__ void cluster_sum2(float& a, float& b, float (*post)[2], int& par) {
    if (threadIdx.x == 0) { post[par][0] = a; post[par][1] = b; }
    cluster_barrier();
    const unsigned lane = threadIdx.x & 31;
    float ra = 0.0f, rb = 0.0f;
    if (lane < CL) {
        ra = ld_cta(&post[par][0], lane);
        rb = ld_cta(&post[par][1], lane);
    }
    float sa = 0.0f, sb = 0.0f;
#pragma unroll
    for (int r = 0; r < CL; ++r) {
        sa += __shfl_sync(FULL, ra, r);
        sb += __shfl_sync(FULL, rb, r);
    }
    a = sa;
    b = sb;
    par ^= 1;
}

__device__ __forceinline__ float cluster_max(float x, float (*post)[2], int& par) {
    if (threadIdx.x == 0) post[par][0] = x;
    cluster_barrier();
    const unsigned lane = threadIdx.x & 31;
    const float rx = lane < CL ? ld_cta(&post[par][0], lane) : 0.0f;
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < CL; ++r) s = fmaxf(s, __shfl_sync(FULL, rx, r));
    par ^= 1;
    return s;
}

__device__ __forceinline__ float cluster_sum(float x, float (*post)[2], int& par) {
    float unused = 0.0f;
    cluster_sum2(x, unused, post, par);
    return x;
}
#define CLUSTER_SUM2(a, b) cluster_sum2(a, b, xsc, par)
#define CLUSTER_MAX(x) x = cluster_max(x, xsc, par)
#define CLUSTER_SUM(x) x = cluster_sum(x, xsc, par)
#define CLUSTER_DIMS __cluster_dims__(CL, 1, 1)
#else
#define CLUSTER_SUM2(a, b)
#define CLUSTER_MAX(x)
#define CLUSTER_SUM(x)
#define CLUSTER_DIMS
#endif

// FUSE 1: a column step's scalars come from the previous step's exchange where they can
// (see the step loop), so most steps exchange once (EXPERIMENTS.md H17).
#ifndef FUSE
#define FUSE 0
#endif
// A panel that n_active cuts runs its column steps up to n_active only. The steps past it
// are identities (tau 0) that leave their columns as the active steps left them, and T's
// rows and columns for them are 0 either way: the same bits, fewer steps (a 640x512
// clustered matrix's last panel has 2 active columns of 32: -2.2 % on that case). Not in
// the Gram builds: there the cut cost 40x176 +1.4 % and 40x352 +2.2-2.7 %, which have no
// cut panel (code generation), for 60x1024 clustered's -1.6 % (H100 runs 1519-1531,
// EXPERIMENTS.md H53). STEPS_TO_NA 0 runs every step (the tests' reference).
#ifndef STEPS_TO_NA
#define STEPS_TO_NA (!GRAM)
#endif
// The sums a step adds to its exchange for the next column (FUSE); the shared arrays
// keep their sizes without.
#if FUSE
#define NX 5
#else
#define NX 0
#endif
""" + GRAM_FUNCS + r"""
// PHASE_MARKS: an instrument, off in every build the library makes (EXPERIMENTS.md H46).
// Thread 0 of CTA 0 (matrix 0; a cluster's rank 0) writes clock64() where each phase of
// the Gram build ends into phase_clk[tw_index][i] and %globaltimer at its start and end
// into phase_ns[tw_index][0, 1]; thread 0 of every CTA (the first CTA_MARKS) writes
// %globaltimer where it starts and where it leaves, by whichever return, into
// cta_ns[tw_index][blockIdx.x][0, 1] (OC49's family 2: the launch's spread and tail
// around the CTAs' lifetimes); bench/devscripts/gram_phases.py reads them.
#ifndef PHASE_MARKS
#define PHASE_MARKS 0
#endif
#if PHASE_MARKS
#define CTA_MARKS 1024
__device__ long long phase_clk[128][16];
__device__ unsigned long long phase_ns[128][2];
__device__ unsigned long long cta_ns[128][CTA_MARKS][2];
__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long g;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
    return g;
}
// Its constructor marks the CTA's start, its destructor the CTA's exit at any return.
struct CtaClock {
    unsigned long long* slot;
    __device__ explicit CtaClock(int tw) : slot(nullptr) {
        if (threadIdx.x == 0 && blockIdx.x < CTA_MARKS) {
            slot = cta_ns[tw][blockIdx.x];
            slot[0] = global_ns();
        }
    }
    __device__ ~CtaClock() { if (slot) slot[1] = global_ns(); }
};
#define MARK(i) do { if (blockIdx.x == 0 && threadIdx.x == 0) phase_clk[tw_index][i] = clock64(); } while (0)
#define MARK_NS(i) do { if (blockIdx.x == 0 && threadIdx.x == 0) phase_ns[tw_index][i] = global_ns(); } while (0)
#define CTA_CLOCK() CtaClock cta_clock_(tw_index)
#else
#define MARK(i) do { } while (0)
#define MARK_NS(i) do { } while (0)
#define CTA_CLOCK() do { } while (0)
#endif
// The Gram build's T and first-row products hold 32 more values a thread: at two rows a
// thread it is capped at two CTAs an SM (128 registers, no spill), as the column steps run.
#if GRAM && R > 1
#define LAUNCH_BOUNDS __launch_bounds__(NT, 2)
#else
#define LAUNCH_BOUNDS __launch_bounds__(NT)
#endif
extern "C" __global__ void CLUSTER_DIMS LAUNCH_BOUNDS
panel_cuda(float* __restrict__ Ht, float* __restrict__ TAU, float* __restrict__ TW,
           const int* __restrict__ NA, int k, int m, int n, int pw, int tw_index, int n_tw,
           int has_na, float floor_, int* __restrict__ GOUT) {
    __shared__ float red_a[2 * NW];
    __shared__ float red_b[NW];
    __shared__ float red_c[NW];
    __shared__ float wpart[NW][NB];
#if FUSE
    __shared__ float wext[NW][NX];
#endif
    // The step's update multipliers tau * w_q, formed once by the threads that add the
    // warps' partials, not again by every thread (EXPERIMENTS.md H42), then FUSE's sums.
    __shared__ __align__(16) float wfin[NB + NX];
    __shared__ float Ss[NB][NB + 1];  // Ss[j][i] = w_j[i]: (V^T V)[i, j] for i < j
    __shared__ float taus[NB];
#if GRAM
    extern __shared__ __align__(16) float gbuf[];  // NW * 32 * GS: staging, the warps' Grams
    __shared__ float gc[2][NB][NB + 1];           // this CTA's Gram of each pass (its post)
#if CL > 1
    __shared__ float gf[2][NB][NB + 1];           // the cluster's
#endif
    __shared__ __align__(16) float mt[3][NB][GS];  // R1, R2, U (chol_warp's layout)
    __shared__ float mdg[3][NB], minv[3][NB];
    __shared__ __align__(16) float prow[2 * NB];  // chol_warp's two alternating rows
    __shared__ __align__(16) float gl[NB][GS];  // L1, strictly lower
    __shared__ float gtop[NB][NB + 1];  // the panel's first NB rows, as stored
    __shared__ float gsv[NB];           // the signs S
    __shared__ float gok;
#endif
#if CL > 1
    __shared__ float xsc[2][2];   // posts of the scalar sums
    __shared__ float xw[2][NB + NX];   // posts of w (and the next column's sums)
    int par = 0;
    const unsigned rank = cta_rank();
    const int b = blockIdx.x / CL;
    const int r0 = k + (int)rank * (NT * R);
#else
    const int b = blockIdx.x;
    const int r0 = k;
#endif
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float* base = Ht + (long long)b * m * n;
    CTA_CLOCK();
    MARK_NS(0);
    MARK(0);
    // Register slot q holds panel column (j + q) mod NB at step j: the step's column is
    // always slot 0 (static register indices in a loop that is not unrolled, so the code
    // stays small), and the stored reflectors stay in the tile for w's V^T V part.
    float a[R][NB];
    int row[R];
#pragma unroll
    for (int i = 0; i < R; ++i) row[i] = r0 + t + i * NT;
    // Issued before n_active is read (as the Triton kernel, EXPERIMENTS.md P6).
    auto load_tile = [&]() {
#pragma unroll
        for (int q = 0; q < NB; ++q) {
#pragma unroll
            for (int i = 0; i < R; ++i)
                a[i][q] = (q < pw && row[i] < m) ? base[(long long)(k + q) * m + row[i]] : 0.0f;
        }
    };
    load_tile();
    const int na = has_na ? NA[b] : n;
    float* tau_out = TAU + (long long)b * n + k;
    if (k >= na) {  // the same for every CTA of a cluster: no exchange is left waiting
        if (t < pw) tau_out[t] = 0.0f;
        return;
    }
    if (t < NB) taus[t] = 0.0f;
    // The column steps to run (na > k here; the same in every CTA of a cluster).
    const int steps = STEPS_TO_NA ? min(pw, na - k) : pw;
    MARK(1);
#if GRAM
    bool gram = pw == NB && k + NB <= na;
#if CL > 1
    const bool rank0 = rank == 0;
#else
    const bool rank0 = true;
#endif
    if (gram) {
        // CholeskyQR2: Q1 = P R1^-1, Q = Q1 R2^-1, R = R2 R1.
#pragma unroll 1
        for (int ps = 0; ps < 2 && gram; ++ps) {
            gram_partial(a, gbuf, gc[ps], t, lane, warp);
            MARK(2 + 3 * ps);
#if CL > 1
            cluster_barrier();
#pragma unroll
            for (int x = 0; x < NB * NB / NT; ++x) {
                const int e = t + x * NT, r_ = e >> 5, c_ = e & 31;
                float s = 0.0f;
#pragma unroll
                for (unsigned rk = 0; rk < CL; ++rk) s += ld_cta(&gc[ps][r_][c_], rk);
                gf[ps][r_][c_] = s;
            }
            __syncthreads();
            const float (*G)[NB + 1] = gf[ps];
#else
            const float (*G)[NB + 1] = gc[ps];
#endif
            if (warp == 0) {
                const bool okc = chol_warp(G, &mt[ps][0][0], mdg[ps], minv[ps], prow,
                                           ps == 0 ? GRAM_TOL : GRAM_TOL2, lane);
                if (lane == 0) gok = okc ? 1.0f : 0.0f;
            }
            __syncthreads();
            MARK(3 + 3 * ps);
            gram = gok != 0.0f;
            if (gram) solve_rows(a, &mt[ps][0][0], minv[ps]);
            MARK(4 + 3 * ps);
        }
    }
    if (gram) {
        // Householder form: rank 0's first NB rows (warp 0) hold Q_top.
        if (rank0 && warp == 0) {
            const bool okl = lu_warp(a[0], &mt[2][0][0], mdg[2], minv[2], gl, gsv, prow, lane);
            if (lane == 0) gok = okl ? 1.0f : 0.0f;
        }
#if CL > 1
        cluster_barrier();
        if (!rank0) {
#pragma unroll
            for (int x = 0; x < NB * NB / NT; ++x) {
                const int e = t + x * NT, c_ = e >> 5, p_ = e & 31;
                mt[2][c_][p_] = ld_cta(&mt[2][c_][p_], 0);
            }
            if (t < NB) minv[2][t] = ld_cta(&minv[2][t], 0);
            if (t == 0) gok = ld_cta(&gok, 0);
        }
#endif
        __syncthreads();
        MARK(8);
        gram = gok != 0.0f;
    }
    if (gram) {
        solve_rows(a, &mt[2][0][0], minv[2]);  // V below the first NB rows: Q U^-1
        MARK(9);
        if (rank0) {
            if (warp == 0) {
                // T = -U S L1^-T, row `lane`: T L1^T = -U S, column by column.
                float tr[NB];
#pragma unroll
                for (int c = 0; c < NB; ++c) {
                    const float u = c > lane ? mt[2][c][lane] : (c == lane ? mdg[2][lane] : 0.0f);
                    tr[c] = dot_prefix(tr, &gl[c][0], c, -u * gsv[c], -1.0f);
                }
#pragma unroll
                for (int c = 0; c < NB; ++c) Ss[lane][c] = tr[c];
            } else if (warp == 1) {
                // Row `lane` as stored: L1 left of the diagonal, S R2 R1 from it on.
                float r2[NB];
#pragma unroll
                for (int p = 0; p < NB; ++p)
                    r2[p] = p > lane ? mt[1][p][lane] : (p == lane ? mdg[1][lane] : 0.0f);
                const float sl = gsv[lane];
#pragma unroll
                for (int c = 0; c < NB; ++c) {
                    const float acc = dot_prefix(r2, &mt[0][c][0], c, r2[c] * mdg[0][c], 1.0f);
                    gtop[lane][c] = c < lane ? gl[lane][c] : sl * acc;
                }
            }
            __syncthreads();
            if (t < NB) {
#pragma unroll
                for (int q = 0; q < NB; ++q) a[0][q] = gtop[t][q];
                taus[t] = fabsf(mdg[2][t]);
            }
            MARK(10);
        }
    } else if (pw == NB && k + NB <= na) {
        load_tile();  // the column steps start from the untouched input
    }
    if (!gram) {
#endif
    // FUSE: the next column's alpha and sum of squares, downdated from the sums of the
    // step before (have_next: they passed the guard; the same bits in every thread).
    bool have_next = false;
    float alpha_n = 0.0f, ss_n = 0.0f;
// Not unrolled: two steps a pass measured slower (EXPERIMENTS.md H43), all 32 lost to the
// instruction cache (H12a).
#pragma unroll 1
    for (int j = 0; j < steps; ++j) {
        const int c = k + j;
        float ap = alpha_n, sp = ss_n;
        if (!have_next) {
            ap = 0.0f;
            sp = 0.0f;
#pragma unroll
            for (int i = 0; i < R; ++i) {
                const float x = a[i][0];
                if (row[i] == c) ap += x;
                if (row[i] > c) sp += x * x;
            }
            block_sum2(ap, sp, red_a, lane, warp);
            CLUSTER_SUM2(ap, sp);
        }
        const float alpha = ap, ss = sp;
        float p, tau, beta, scale;
        bool d;
        // EXPERIMENTS.md H39: in float32's middle range, the short chain of H38.
        if (DIRECT_IN_RANGE(alpha, ss)) {
            DIRECT_SCALARS(alpha, ss, c < na, floor_, d, tau, beta, scale, p)
        } else {
            float xnp;
            if (ss >= PLAIN_SS_LO && ss <= PLAIN_SS_HI) {
                PLAIN_NORM(alpha, ss, xnp, p)
            } else {
                float mx = 0.0f;
#pragma unroll
                for (int i = 0; i < R; ++i)
                    if (row[i] > c) mx = fmaxf(mx, fabsf(a[i][0]));
                float amax = block_max(mx, red_b, lane, warp);
                CLUSTER_MAX(amax);
                const float q = range_scale(amax);
                const float s = amax > 0.0f ? amax : 1.0f;
                const float inv = 1.0f / (s * q);
                float s2 = 0.0f;
#pragma unroll
                for (int i = 0; i < R; ++i) {
                    if (row[i] > c) {
                        const float xs = (a[i][0] * q) * inv;
                        s2 += xs * xs;
                    }
                }
                s2 = block_sum(s2, red_c, lane, warp);
                CLUSTER_SUM(s2);
                p = range_scale(fmaxf(fabsf(alpha), amax));
                xnp = (s * p) * sqrtf(s2);
            }
            REFLECTOR_SCALARS(alpha, xnp, p, c < na, floor_, d, tau, beta, scale)
        }
        float v[R], vb[R];
#pragma unroll
        for (int i = 0; i < R; ++i) {
            vb[i] = row[i] > c ? (a[i][0] * p) * scale : 0.0f;
            v[i] = row[i] == c ? 1.0f : vb[i];
        }
        // w = P^T v: each warp's sums (lane l: slot l's), then the warps' sums.
        const float wl = warp_atv(a, v, lane);
        if (lane < NB) wpart[warp][lane] = wl;
#if FUSE
        // The next column y (slot 1) after this step's update is y - tau w_1 v: its sum of
        // squares below its diagonal is Y - 2 tau w_1 D + (tau w_1)^2 VV, from sums over
        // rows > c + 1 of y^2 (Y), y v (D) and v^2 (VV), and its alpha y[c+1] - tau w_1
        // v[c+1]. Lane l ends with sum l of the five (a butterfly on eight, then the warp).
        {
            float pe[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int i = 0; i < R; ++i) {
                const float y = a[i][1];
                if (row[i] > c + 1) {
                    pe[0] += y * y;
                    pe[1] += y * v[i];
                    pe[2] += v[i] * v[i];
                }
                if (row[i] == c + 1) {
                    pe[3] += y;
                    pe[4] += v[i];
                }
            }
            fold<4>(pe, lane);
            fold<2>(pe, lane);
            fold<1>(pe, lane);
            pe[0] += __shfl_xor_sync(FULL, pe[0], 8);
            pe[0] += __shfl_xor_sync(FULL, pe[0], 16);
            if (lane < NX) wext[warp][lane] = pe[0];
        }
#endif
        __syncthreads();
#if CL > 1
        if (t < NB) {
            float s = 0.0f;
#pragma unroll
            for (int w = 0; w < NW; ++w) s += wpart[w][t];
            xw[par][t] = s;
#if FUSE
            if (t < NX) {
                float e = 0.0f;
#pragma unroll
                for (int w = 0; w < NW; ++w) e += wext[w][t];
                xw[par][NB + t] = e;
            }
#endif
        }
        cluster_barrier();
        if (t < NB) {
            float s = 0.0f;
#pragma unroll
            for (unsigned r = 0; r < CL; ++r) s += ld_cta(&xw[par][t], r);
            wfin[t] = tau * s;
            Ss[j][(j + t) & (NB - 1)] = s;
#if FUSE
            if (t < NX) {
                float e = 0.0f;
#pragma unroll
                for (unsigned r = 0; r < CL; ++r) e += ld_cta(&xw[par][NB + t], r);
                wfin[NB + t] = e;
            }
#endif
        }
        par ^= 1;
#else
        if (t < NB) {
            float s = 0.0f;
#pragma unroll
            for (int w = 0; w < NW; ++w) s += wpart[w][t];
            wfin[t] = tau * s;
            Ss[j][(j + t) & (NB - 1)] = s;
#if FUSE
            if (t < NX) {
                float e = 0.0f;
#pragma unroll
                for (int w = 0; w < NW; ++w) e += wext[w][t];
                wfin[NB + t] = e;
            }
#endif
        }
#endif
        if (t == 0) taus[j] = tau;
        __syncthreads();
#if FUSE
        {
            // The downdate cancels where y loses much of its norm (a dependent column): the
            // next step sums it afresh unless at least half of Y is left (relative error a
            // few ulps then), and unless the plain sum's range check would fail.
            const float Y = wfin[NB], tw1 = wfin[1];
            alpha_n = wfin[NB + 3] - tw1 * wfin[NB + 4];
            ss_n = Y + tw1 * (tw1 * wfin[NB + 2] - 2.0f * wfin[NB + 1]);
            have_next = j + 1 < steps && ss_n >= 0.5f * Y && ss_n >= PLAIN_SS_LO
                        && ss_n <= PLAIN_SS_HI;
        }
#endif
#pragma unroll
        for (int q = 1; q < NB; ++q) {
            if (q < NB - j) {  // a later column of the panel
#pragma unroll
                for (int i = 0; i < R; ++i) a[i][q] -= wfin[q] * v[i];
            }
        }
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const float x = row[i] == c ? beta : ((row[i] > c && d) ? vb[i] : a[i][0]);
#pragma unroll
            for (int q = 0; q < NB - 1; ++q) a[i][q] = a[i][q + 1];
            a[i][NB - 1] = x;
        }
    }
#if GRAM
    }
#endif
    // Slot q holds column (steps + q) mod NB now; the Gram build's panel is never cut
    // (k + NB <= na), so steps == pw == NB there too.
#pragma unroll
    for (int q = 0; q < NB; ++q) {
        const int col = (steps + q) & (NB - 1);
#pragma unroll
        for (int i = 0; i < R; ++i)
            if (col < pw && row[i] < m) base[(long long)(k + col) * m + row[i]] = a[i][q];
    }
    MARK(11);
#if CL > 1
    // No CTA leaves while another may still read its last post; T and tau are rank 0's.
    cluster_barrier();
    if (rank != 0) return;
#endif
    if (t < pw) tau_out[t] = taus[t];
    // T by larft's recurrence, row r on lane r of warp 0 (no exchange between lanes):
    // T[r][i] = -tau_i sum_q T[r][q] S[q][i] for r < i, from the steps' V^T V.
#if GRAM
    // GOUT: what this matrix's panel took, for the decisions log: 1 the Gram build, 0 the
    // column steps (a rejected panel, or one that n_active cuts).
    if (gram && t < NB) {
        const long long p = (long long)b * n_tw + tw_index;
        float* slot = TW + p * NB * NB + lane * NB;
#pragma unroll
        for (int i = 0; i < NB; ++i) slot[i] = Ss[lane][i];
        if (t == 0 && GOUT != nullptr) GOUT[p] = 1;
        MARK(12);
        MARK_NS(1);
        return;
    }
#endif
    if (t < NB) {
        float T[NB];
        const bool keep_r = lane < pw && k + lane < na;
#pragma unroll
        for (int i = 0; i < NB; ++i) {
            const bool keep_i = i < pw && k + i < na;
            float acc = 0.0f;
#pragma unroll
            for (int q = 0; q < i; ++q) acc += T[q] * Ss[i][q];
            const float ti = taus[i];
            T[i] = !keep_i ? 0.0f : (lane < i ? -ti * acc : (lane == i ? ti : 0.0f));
        }
        const long long p = (long long)b * n_tw + tw_index;
        float* slot = TW + p * NB * NB + lane * NB;
#pragma unroll
        for (int i = 0; i < NB; ++i) slot[i] = keep_r ? T[i] : 0.0f;
#if GRAM
        if (t == 0 && GOUT != nullptr) GOUT[p] = 0;
#endif
        MARK(12);
        MARK_NS(1);
    }
}
"""
