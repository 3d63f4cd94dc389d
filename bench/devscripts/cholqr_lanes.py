"""Issue 9, C12: the cholqr path through its body graph, the batch over 1..8 stream lanes,
against householder (both called directly, L2 flushed, medians after 3 warm-up calls);
plus cuBLAS's batched float64 TRSM against ``A R^-1`` by GEMMs (the no-inverse design).

Run there: ``python3 bench/devscripts/cholqr_lanes.py`` (JSON to ``$OUT/cholqr_lanes.json``).
"""

from __future__ import annotations

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from micro import dump, gpu_ms  # noqa: E402


def timed(fn, reps=5, warm=3):
    """Median ms, 3 untimed calls first: a body graph is captured on the second call."""
    return round(gpu_ms(fn, reps, warm=warm), 3)


class _Info:
    def __init__(self):
        self.notes = {}


def lanes_rows():
    from adaptqr.paths import cholqr as cq
    from adaptqr.paths.householder import factor_householder
    from adaptqr.layout import load_column_major
    from adaptqr.testing import check_geqrf
    from adaptqr.testing.generators import generate

    rows = []
    for B, n, seed, lanes_list in ((8, 2048, 224466, (1, 2, 4, 8)), (2, 4096, 32412, (1, 2))):
        A = generate(B, n, 1, seed + 3)  # not the benchmark's seed
        H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
        tau = torch.empty(B, n, device="cuda")

        def hh():
            load_column_major(A, H)
            factor_householder(H, tau, None)

        row = {"case": f"{B}x{n}", "householder_ms": timed(hh)}
        for lanes in lanes_list:
            cq.LANES = lanes
            cq._body_graphs().clear()
            torch.cuda.reset_peak_memory_stats()

            def ch():
                load_column_major(A, H)
                cq.factor_cholqr(H, tau, None)

            t = timed(ch)
            info = _Info()
            load_column_major(A, H)
            cq.factor_cholqr(H, tau, info)
            r = check_geqrf(A, H, tau)
            row[f"lanes{lanes}"] = {"ms": t, "ratio": round(row["householder_ms"] / t, 3),
                                    "factor": r.worst_factor, "orth": r.worst_orth,
                                    "bar": r.passes_bar, "fallback": info.notes.get("fallback"),
                                    "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}
            print(row["case"], lanes, json.dumps(row[f"lanes{lanes}"]), flush=True)
        cq._body_graphs().clear()
        rows.append(row)
        print(json.dumps(row), flush=True)
    cq.LANES = 8
    return rows


def trsm_rows():
    """X R^-1 (R upper, n x n, float64, column-major X) by torch.linalg.solve_triangular
    against the library's A Ri (4 column-block GEMMs), both replayed as graphs."""
    from adaptqr.paths import cholqr_blocks as cb
    rows = []
    for B, n in ((8, 2048), (2, 4096), (1, 2048)):
        g = torch.Generator(device="cuda").manual_seed(5)
        R = torch.randn(B, n, n, dtype=torch.float64, device="cuda", generator=g).triu_()
        R.diagonal(dim1=-2, dim2=-1).add_(float(n))
        Ri = torch.linalg.inv(R)
        X0 = torch.randn(B, n, n, dtype=torch.float64, device="cuda", generator=g).mT
        X = X0.clone().mT.contiguous().mT  # column-major
        def gemm():
            cb.right_upper_mul(X, Ri)
        def trsm():
            torch.linalg.solve_triangular(R, X, upper=True, left=False, out=None)
        row = {"case": f"{B}x{n}"}
        for name, fn in (("gemm_ri", gemm), ("trsm", trsm)):
            try:
                fn()
                torch.cuda.synchronize()
                gr = torch.cuda.CUDAGraph()
                with torch.cuda.graph(gr):
                    fn()
                row[name + "_ms"] = timed(gr.replay)
            except Exception as exc:
                row[name + "_ms"] = f"{type(exc).__name__}: {exc}"[:200]
        fl = B * n ** 3
        for name in ("gemm_ri", "trsm"):
            if isinstance(row.get(name + "_ms"), float):
                row[name + "_tflops_at_n3"] = round(fl / row[name + "_ms"] / 1e9, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main():
    dump("cholqr_lanes", lanes_rows(), trsm=trsm_rows())


if __name__ == "__main__":
    main()
