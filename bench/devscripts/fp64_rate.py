"""Issue 9 groundwork (EXPERIMENTS.md C3): FP64 tensor-core GEMM rates on the device.

Triton 3.6 compiles an FP64 ``tl.dot`` to ``DMMA.16x8x16`` for sm_90 (offline check, session
7). This times a plain tiled FP64 GEMM in Triton at a few tile shapes against cuBLAS's
(``torch.matmul`` in float64), n = 2048 and 4096, and prints TFLOP/s (H200 FP64 tensor peak
67). A CholeskyQR2 path needs its Gram, Cholesky and LU near half of peak (C3).

Run there: ``python3 bench/devscripts/fp64_rate.py`` (JSON to ``$OUT/fp64_rate.json``).
"""

from __future__ import annotations

import importlib.util
import json
import os

import torch
import triton
import triton.language as tl

_here = os.path.dirname(__file__)
_spec = importlib.util.spec_from_file_location("devmicro", os.path.join(_here, "micro.py"))
_micro = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_micro)


@triton.jit
def _mm64(A, B, C, N, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B for (N, N) float64 row-major, N a multiple of the tiles."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float64)
    for k0 in range(0, N, BK):
        a = tl.load(A + rm[:, None] * N + (k0 + rk)[None, :])
        b = tl.load(B + (k0 + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * N + rn[None, :], acc)


def _ms(fn):
    return _micro.gpu_ms(fn, reps=5)


def main():
    res = {"device": torch.cuda.get_device_name(), "git": os.environ.get("ADAPTQR_COMMIT"),
           "rows": []}
    for n in (2048, 4096):
        A = torch.randn(n, n, dtype=torch.float64, device="cuda")
        B = torch.randn(n, n, dtype=torch.float64, device="cuda")
        C = torch.empty_like(A)
        flops = 2.0 * n ** 3
        ref = A @ B
        rows = [("cublas", _ms(lambda: torch.matmul(A, B, out=C)), 0.0)]
        for bm, bn, bk, w, st in ((64, 64, 16, 4, 3), (128, 64, 16, 4, 3), (128, 128, 16, 8, 3),
                                  (64, 64, 32, 4, 2)):
            grid = (n // bm, n // bn)

            def run(bm=bm, bn=bn, bk=bk, w=w, st=st, grid=grid):
                _mm64[grid](A, B, C, n, BM=bm, BN=bn, BK=bk, num_warps=w, num_stages=st)
            try:
                t = _ms(run)
                err = float((C - ref).abs().max() / ref.abs().max())
                rows.append((f"triton {bm}x{bn}x{bk} w{w} s{st}", t, err))
            except Exception as e:  # a tile that does not compile is a result too
                print(n, bm, bn, bk, "ERROR", repr(e)[:200])
        for name, t, err in rows:
            row = {"n": n, "kernel": name, "ms": t, "tflops": flops / t / 1e9, "err": err}
            res["rows"].append(row)
            print(json.dumps(row))
        L = torch.linalg.cholesky(A @ A.mT + n * torch.eye(n, dtype=torch.float64, device="cuda"))
        S = L @ L.mT
        row = {"n": n, "kernel": "cusolver cholesky fp64", "ms": _ms(lambda: torch.linalg.cholesky(S)),
               "tflops": None, "err": None}
        row["tflops"] = n ** 3 / 3 / row["ms"] / 1e9
        res["rows"].append(row)
        print(json.dumps(row))
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "fp64_rate.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
