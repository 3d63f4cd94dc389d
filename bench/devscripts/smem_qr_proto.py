"""A prototype for EXPERIMENTS.md OC34 family 3 / H36: the whole QR of a small matrix in one
CTA, the matrix in shared memory, each 32-column panel by the Gram build (CholeskyQR2 rebuilt
into Householder form: paths/kernels/panel_gram.py's device functions, as the CUDA C panel
calls them) and each panel's update of the columns right of it inside the CTA: no launch
and no round trip through global memory between panels.

Not the library's:
- no fallback for a panel the Gram tests reject. ``ok`` counts the panels whose tests
  passed; a rejected panel's result may be wrong. The last panel of a square matrix,
  32 x 32, always fails the tau test (its last reflector has no sub-column, where geqrf
  gives tau 0 and the library takes the column steps); its result is still a reflector;
- square ``n x n`` up to 192 (the matrix and the Gram staging fit one SM's 227 KB), factored
  padded to a multiple of 32 with the identity (its reflectors are the input's: the
  padding's rows stay zero in the input's columns), the padding not written back;
- float32 FMA updates, not tensor cores.

It answers one question before a real build: how long one CTA takes to factor a 160 x 160
or 192 x 192 matrix this way, against the library's ~0.23 ms for 40x176 (EXPERIMENTS.md
V10), and how much of it is the panels (``--no-update`` times the kernel without the
updates; its result is wrong). On the CPU shim, 2x64, 1x96 and 1x160 pass the bar (factor
0.07 / 0.04 / 0.02, orthogonality 0.5 / 0.3 / 0.3).

Run there (GPU, cupy)::

    python3 bench/devscripts/smem_qr_proto.py --shapes 40x160,40x176,40x192 [--no-update]

On the CPU (the host shim of adaptqr.testing.cuda_host, g++)::

    python3 bench/devscripts/smem_qr_proto.py --shim --shapes 2x64,1x96,1x40
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch

from adaptqr.paths.kernels.panel_gram import GRAM_FUNCS, gram_smem

NT = 256
HEAD = r"""
#define FULL 0xffffffffu
#define NW (NT / 32)
#define NB 32
#define GRAM 1
#define PLAIN_SS_LO 7.888609052210118e-31f
#define PLAIN_SS_HI 1.2676506002282294e30f
"""

KERNEL = r"""
// LD (odd, >= m): the matrix's column stride in shared memory, so that a warp reading one
// row across 32 columns meets 32 banks. GOFF: where the Gram staging starts (16-byte
// aligned); the update's W (NB x n) reuses it.
// One CTA an SM (its shared memory), so its registers may take all of the SM's: at the
// default bound ptxas capped them at 128 and spilled 56 bytes, at this one 40 (nvcc 13.0).
extern "C" __global__ void __launch_bounds__(NT, 1)
qr_smem(const float* __restrict__ A, float* __restrict__ H, float* __restrict__ TAU,
        float* __restrict__ OK, int m, int n, int n0) {
    extern __shared__ __align__(16) float dyn[];
    float* As = dyn;
    float* gbuf = dyn + GOFF;
    float* Wd = gbuf;
    __shared__ float gc[NB][NB + 1];
    __shared__ __align__(16) float mt[3][NB][GS];
    __shared__ float mdg[3][NB], minv[3][NB];
    __shared__ __align__(16) float prow[2 * NB];
    __shared__ __align__(16) float gl[NB][GS];
    __shared__ float gtop[NB][NB + 1];
    __shared__ float gsv[NB];
    __shared__ float Ts[NB][NB + 1];
    __shared__ float gok;
    const int b = blockIdx.x, t = threadIdx.x, lane = t & 31, warp = t >> 5;
    // The input is n0 x n0 (n0 <= n): padded to n x n with the identity, whose columns keep
    // the input's reflectors (their rows past n0 stay zero) and are not written back.
    const float* Ab = A + (long long)b * n0 * n0;
    for (int e = t; e < n * m; e += NT) {
        const int c = e / m, r = e - c * m;
        As[c * LD + r] = (c < n0 && r < n0) ? Ab[c * n0 + r] : (c == r ? 1.0f : 0.0f);
    }
    __syncthreads();
    float taken = 0.0f;  // panels whose Gram tests passed
    for (int k0 = 0; k0 < n; k0 += NB) {
        const int row = k0 + t;
        float a[1][NB];
#pragma unroll
        for (int q = 0; q < NB; ++q) a[0][q] = row < m ? As[(k0 + q) * LD + row] : 0.0f;
        bool gram = true;
#pragma unroll 1
        for (int ps = 0; ps < 2; ++ps) {
            gram_partial(a, gbuf, gc, t, lane, warp);
            if (warp == 0) {
                const bool okc = chol_warp(gc, &mt[ps][0][0], mdg[ps], minv[ps], prow,
                                           ps == 0 ? GRAM_TOL : GRAM_TOL2, lane);
                if (lane == 0) gok = okc ? 1.0f : 0.0f;
            }
            __syncthreads();
            gram = gram && gok != 0.0f;
            solve_rows(a, &mt[ps][0][0], minv[ps]);
        }
        if (warp == 0) {
            const bool okl = lu_warp(a[0], &mt[2][0][0], mdg[2], minv[2], gl, gsv, prow, lane);
            if (lane == 0) gok = okl ? 1.0f : 0.0f;
        }
        __syncthreads();
        gram = gram && gok != 0.0f;
        if (gram) taken += 1.0f;
        solve_rows(a, &mt[2][0][0], minv[2]);  // V below the first NB rows: Q U^-1
        if (warp == 0) {
            // T = -U S L1^-T, row `lane`: T L1^T = -U S, column by column.
            float tr[NB];
#pragma unroll
            for (int c = 0; c < NB; ++c) {
                const float u = c > lane ? mt[2][c][lane] : (c == lane ? mdg[2][lane] : 0.0f);
                tr[c] = dot_prefix(tr, &gl[c][0], c, -u * gsv[c], -1.0f);
            }
#pragma unroll
            for (int c = 0; c < NB; ++c) Ts[lane][c] = tr[c];
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
            if (k0 + t < n0) TAU[(long long)b * n0 + k0 + t] = fabsf(mdg[2][t]);
        }
        if (row < m) {
#pragma unroll
            for (int q = 0; q < NB; ++q) As[(k0 + q) * LD + row] = a[0][q];
        }
        __syncthreads();
#if UPDATE
        // The columns right of the panel: C -= V (T^T (V^T C)), C rows k0.., V unit lower.
        const int c0 = k0 + NB, nc = n - c0;
        // W = V^T C, 4 x 4 a thread: reflectors j0.. (a warp's reads of them are broadcasts)
        // and columns cq + u nc4 (a warp's are 32 consecutive columns: 32 banks, LD odd).
        const int nc4 = nc / 4;
        for (int e = t; e < 8 * nc4; e += NT) {
            const int jq = e / nc4, cq = e - jq * nc4, j0 = 4 * jq;
            float w[4][4];
#pragma unroll
            for (int p = 0; p < 4; ++p)
#pragma unroll
                for (int u = 0; u < 4; ++u) w[p][u] = 0.0f;
            for (int i = k0 + j0; i < m; ++i) {
                const int d = i - k0;
                float v[4], x[4];
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    v[u] = d == j0 + u ? 1.0f : (d > j0 + u ? As[(k0 + j0 + u) * LD + i] : 0.0f);
                    x[u] = As[(c0 + cq + u * nc4) * LD + i];
                }
#pragma unroll
                for (int p = 0; p < 4; ++p)
#pragma unroll
                    for (int u = 0; u < 4; ++u) w[p][u] = fmaf(v[p], x[u], w[p][u]);
            }
#pragma unroll
            for (int p = 0; p < 4; ++p)
#pragma unroll
                for (int u = 0; u < 4; ++u) Wd[(j0 + p) * nc + cq + u * nc4] = w[p][u];
        }
        __syncthreads();
        // W <- T^T W, a column a thread, in place from the last row up (row j of the result
        // reads rows l <= j of W, still W's). Not unrolled: unrolled, ptxas hoisted the 528
        // loads of T and spilled.
        for (int c = t; c < nc; c += NT) {
#pragma unroll 1
            for (int j = NB - 1; j >= 0; --j) {
                float s = 0.0f;
#pragma unroll 4
                for (int l = 0; l <= j; ++l) s = fmaf(Ts[l][j], Wd[l * nc + c], s);
                Wd[j * nc + c] = s;
            }
        }
        __syncthreads();
        // C -= V W, 4 x 4 a thread: rows ri + u r4 (a warp's are 32 consecutive rows) and
        // columns cq + p nc4 (W's reads are broadcasts).
        const int r4 = (m - k0) / 4;
        for (int e = t; e < r4 * nc4; e += NT) {
            const int cq = e / r4, ri = e - cq * r4;
            float acc[4][4];
#pragma unroll
            for (int u = 0; u < 4; ++u)
#pragma unroll
                for (int p = 0; p < 4; ++p) acc[u][p] = 0.0f;
#pragma unroll 4
            for (int j = 0; j < NB; ++j) {
                float v[4], w[4];
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const int d = ri + u * r4;
                    v[u] = d == j ? 1.0f : (d > j ? As[(k0 + j) * LD + k0 + d] : 0.0f);
                    w[u] = Wd[j * nc + cq + u * nc4];
                }
#pragma unroll
                for (int u = 0; u < 4; ++u)
#pragma unroll
                    for (int p = 0; p < 4; ++p) acc[u][p] = fmaf(v[u], w[p], acc[u][p]);
            }
#pragma unroll
            for (int u = 0; u < 4; ++u)
#pragma unroll
                for (int p = 0; p < 4; ++p) As[(c0 + cq + p * nc4) * LD + k0 + ri + u * r4] -= acc[u][p];
        }
        __syncthreads();
#endif
    }
    float* Hb = H + (long long)b * n0 * n0;
    for (int e = t; e < n0 * n0; e += NT) {
        const int c = e / n0, r = e - c * n0;
        Hb[e] = As[c * LD + r];
    }
    if (t == 0) OK[b] = taken;
}
"""

SHIM_MAIN = r"""
int main(int argc, char** argv) {
    const int B = std::atoi(argv[1]), n = std::atoi(argv[2]), n0 = std::atoi(argv[3]);
    const size_t smem = std::atol(argv[4]);
    std::vector<float> H = read_floats(argv[5], (size_t)B * n0 * n0);
    std::vector<float> tau = read_floats(argv[6], (size_t)B * n0);
    std::vector<float> ok = read_floats(argv[7], (size_t)B);
    std::vector<float> A = read_floats(argv[8], (size_t)B * n0 * n0);
    gridDim = {(unsigned)B, 1, 1};
    run_grid<NT>(smem, [&] { qr_smem(A.data(), H.data(), tau.data(), ok.data(), n, n, n0); });
    write_floats(argv[5], H);
    write_floats(argv[6], tau);
    write_floats(argv[7], ok);
    return 0;
}
"""


def padded(n0: int) -> int:
    """The size the kernel factors an ``n0 x n0`` matrix at: ``n0`` rounded up to a panel.

    >>> padded(176), padded(160), padded(40)
    (192, 160, 64)
    """
    return -(-n0 // 32) * 32


def layout(m: int, n: int) -> tuple:
    """``(LD, GOFF, bytes)``: the column stride, the staging's offset (floats) and the
    dynamic shared memory of an ``m x n`` matrix."""
    ld = m | 1
    goff = (n * ld + 3) // 4 * 4
    staging = max(gram_smem(NT) // 4, 32 * n)
    return ld, goff, (goff + staging) * 4


def source(m: int, n: int, update: bool) -> tuple:
    ld, goff, smem = layout(m, n)
    defines = (("NT", NT), ("R", 1), ("LD", ld), ("GOFF", goff), ("UPDATE", int(update)))
    return HEAD + GRAM_FUNCS + KERNEL, defines, smem


def _inputs(B, n, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    A = torch.randn(B, n, n, generator=g, device=device)
    return A.mT.contiguous().mT  # column-major, as geqrf's layout (the kernel reads it so)


def _check(A, H, tau, ok):
    from adaptqr.testing import check_geqrf

    Hc = H.view(A.shape[0], A.shape[2], A.shape[1]).mT
    r = check_geqrf(A, Hc, tau)
    panels = padded(A.shape[-1]) // 32
    return f"panels the Gram tests took {ok.min().item():.0f}-{ok.max().item():.0f} of {panels}, {r.summary}"


def run_shim(shapes):
    from adaptqr.testing import cuda_host

    for B, n0 in shapes:
        n = padded(n0)
        src, defines, smem = source(n, n, True)
        exe = cuda_host.build(src, SHIM_MAIN, defines)
        A = _inputs(B, n0, "cpu", n0)
        H, tau, ok = torch.zeros(B, n0 * n0), torch.zeros(B, n0), torch.zeros(B)
        cuda_host.run(exe, [B, n, n0, smem], (H, tau, ok, A.mT.contiguous()), [], 3)
        print(f"shim {B}x{n0}: {_check(A, H, tau, ok)}")


def run_gpu(shapes, update):
    import cupy as cp

    import adaptqr
    from adaptqr.paths.kernels.panel_cuda import run_on_torch_stream

    for B, n0 in shapes:
        n = padded(n0)
        src, defines, smem = source(n, n, update)
        opts = ("-std=c++17",) + tuple(f"-D{k}={v}" for k, v in defines)
        kern = cp.RawModule(code=src, options=opts).get_function("qr_smem")
        kern.max_dynamic_shared_size_bytes = smem
        A = _inputs(B, n0, "cuda", n0)
        H, tau, ok = (torch.empty(B, n0 * n0, device="cuda"), torch.empty(B, n0, device="cuda"),
                      torch.empty(B, device="cuda"))
        args = tuple(np.uint64(x.data_ptr()) for x in (A, H, tau, ok)) + (
            np.int32(n), np.int32(n), np.int32(n0))
        dev = torch.cuda.current_device()

        def launch():
            run_on_torch_stream(kern, (B,), (NT,), args, A.device, dev, smem)

        launch()
        torch.cuda.synchronize()
        checked = _check(A, H, tau, ok) if update else "not checked (no update)"
        times = {"proto": _time(launch), "adaptqr.geqrf": _time(lambda: adaptqr.geqrf(A))}
        print(f"{B}x{n0} (as {n}) smem {smem} B, update {update}: " +
              ", ".join(f"{k} {v * 1e3:.1f} us" for k, v in times.items()) + f"; {checked}")


def _time(fn, reps=30):
    for _ in range(3):
        fn()
    out = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e))
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="40x160,40x176,40x192")
    ap.add_argument("--shim", action="store_true")
    ap.add_argument("--no-update", action="store_true")
    args = ap.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    if args.shim:
        run_shim(shapes)
    else:
        run_gpu(shapes, not args.no_update)


if __name__ == "__main__":
    main()
