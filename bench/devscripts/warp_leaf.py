"""Issue 9 (EXPERIMENTS.md C10): is a warp-synchronous leaf ~0.1 us a column, as C8's design
assumes? A prototype, not library code: the 32-column Cholesky-and-inverse leaf in CUDA C
(cupy RawKernel, one warp a matrix, a row of the block a thread, shuffles for every
broadcast), against the Triton leaf (paths/kernels/cholqr_leaf.py) on the same blocks.

Timed: 64 leaves along the diagonal of 8 Gram matrices of 2048 columns (8x2048's leaves),
each leaf one launch, the 64 launches replayed as a CUDA graph (GPU time; L2 flushed);
checked: R and R^-1 against the Triton leaf's.

Run there: ``python3 bench/devscripts/warp_leaf.py`` (JSON to ``$OUT/warp_leaf.json``).
"""

from __future__ import annotations

import importlib.util
import json
import os

import torch

_here = os.path.dirname(__file__)
_spec = importlib.util.spec_from_file_location("devmicro", os.path.join(_here, "micro.py"))
_micro = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_micro)

SRC = r'''
extern "C" __global__ void chol32(const double* __restrict__ G, double* R, double* Ri,
                                  const double* __restrict__ gref, int* bad,
                                  long long off, long long sr, long long sc, long long n,
                                  int c0, int w) {
    const long long base = (long long)blockIdx.x * n * n + off;
    const int t = threadIdx.x;
    const unsigned full = 0xffffffffu;
    double g[32];
    // Row t of the symmetric block, from its upper triangle; identity past w.
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        double v = (t == j) ? 1.0 : 0.0;
        if (t < w && j < w) v = (t <= j) ? G[base + t * sr + j * sc] : G[base + j * sr + t * sc];
        g[j] = v;
    }
    const double gr = (t < w) ? gref[(long long)blockIdx.x * n + c0 + t] : 1.0;
    double l[32];  // row t of L = R^T
    int badf = 0;
#pragma unroll
    for (int k = 0; k < 32; ++k) {
        const double d = __shfl_sync(full, g[k], k);
        const double g0 = __shfl_sync(full, gr, k);
        const bool good = (d > 1e-10 * g0) && isfinite(d);
        badf |= (!good) && (k < w);
        const double rs = 1.0 / sqrt(good ? d : 1.0);
        const double lt = (t >= k) ? g[k] * rs : 0.0;
        l[k] = lt;
#pragma unroll
        for (int j = k + 1; j < 32; ++j) {
            const double lj = __shfl_sync(full, lt, j);
            g[j] -= lt * lj;
        }
    }
    // X = L^-1, row t, right-looking: row k is final at step k, then rows below update.
    double x[32];
#pragma unroll
    for (int j = 0; j < 32; ++j) x[j] = (t == j) ? 1.0 : 0.0;
#pragma unroll
    for (int k = 0; k < 32; ++k) {
        const double inv = 1.0 / __shfl_sync(full, l[k], k);
        if (t == k) {
#pragma unroll
            for (int j = 0; j <= k; ++j) x[j] *= inv;
        }
#pragma unroll
        for (int j = 0; j <= k; ++j) {
            const double xkj = __shfl_sync(full, x[j], k);
            if (t > k) x[j] -= l[k] * xkj;
        }
    }
    // Column t of R (= row t of L) and of R^-1 (= row t of X).
    if (t < w) {
#pragma unroll
        for (int k = 0; k < 32; ++k) {
            if (k < w) {
                R[base + k * sr + t * sc] = (k <= t) ? l[k] : 0.0;
                Ri[base + k * sr + t * sc] = (k <= t) ? x[k] : 0.0;
            }
        }
    }
    if (t == 0 && badf) bad[blockIdx.x] = 1;
}
'''


def main():
    import cupy as cp
    from adaptqr.paths import cholqr_blocks as cb

    B, n = 8, 2048
    X = torch.randn(B, n + 16, n, dtype=torch.float64, device="cuda")
    G0 = X.mT @ X
    gref = G0.diagonal(dim1=-2, dim2=-1).contiguous()
    leaves = n // 32
    kern = cp.RawModule(code=SRC).get_function("chol32")

    def cp_arr(t):
        return cp.from_dlpack(t.detach())

    G = G0.clone()
    Rw, Riw = torch.zeros_like(G0), torch.zeros_like(G0)
    Rt, Rit = torch.zeros_like(G0), torch.zeros_like(G0)
    bad = torch.zeros(B, dtype=torch.int32, device="cuda")
    cG, cR, cRi, cg, cb_ = (cp_arr(G0), cp_arr(Rw), cp_arr(Riw), cp_arr(gref), cp_arr(bad))
    import numpy as np

    def warp_leaves():
        stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        with stream:
            for i in range(leaves):
                c0 = i * 32
                kern((B,), (32,), (cG, cR, cRi, cg, cb_, np.int64(c0 * (n + 1)), np.int64(n),
                                   np.int64(1), np.int64(n), np.int32(c0), np.int32(32)))

    def triton_leaves():
        # The Triton leaf uses its block of G as scratch: the timed replays run on what the
        # first call left there (same work), the check on the first call.
        for i in range(leaves):
            c0 = i * 32
            cb.chol_inv(G, Rt, Rit, gref, bad, c0, c0 + 32)

    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cupy": cp.__version__, "git": os.environ.get("ADAPTQR_COMMIT")}
    warp_leaves()
    triton_leaves()
    torch.cuda.synchronize()
    out["max_diff_R"] = float((Rw - Rt).abs().max() / Rt.abs().max())
    out["max_diff_Ri"] = float((Riw - Rit).abs().max() / Rit.abs().max())
    out["bad"] = bad.tolist()
    out["triton_leaf_us"] = round(1000 * _micro.gpu_ms(triton_leaves, graph=True) / leaves, 2)
    try:
        out["warp_leaf_us"] = round(1000 * _micro.gpu_ms(warp_leaves, graph=True) / leaves, 2)
    except Exception as exc:  # capture of the cupy launches failed: eager launches instead
        out["graph_error"] = f"{type(exc).__name__}: {exc}"[:300]
        out["warp_leaf_us_eager"] = round(1000 * _micro.gpu_ms(warp_leaves) / leaves, 2)
    print(json.dumps(out), flush=True)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "warp_leaf.json"), "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
