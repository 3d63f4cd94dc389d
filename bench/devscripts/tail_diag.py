"""Issue 6's clustered 1.6x: what the negligible tail costs, and what a GEMM-shaped tail could cost.

Device script (session 6, EXPERIMENTS.md D3). On 640x512 clustered (and dense), path alone,
input loaded into geqrf's layout first (both timed, the load also alone), L2 flushed:

* ``full``: no features (every column factored);
* ``routed``: the route probe's ``n_active`` / ``n_nonzero`` (what the public call does);
* ``floor``: ``n_nonzero := n_active``: the tail's updates skipped as if it were zeros (the
  time of everything but the tail: the bound on what any tail scheme can reach);
* cuBLAS batched products of a tail done as one block: ``G = V^T A_tail``, ``S = V^T V``,
  ``L^-1 G`` (solve), ``A_tail -= V Z``, at r = 288 reflectors, 224 tail columns, in
  float32, TF32 and bfloat16: what a GEMM-shaped tail costs at library speed.

Run there: ``python3 bench/devscripts/tail_diag.py`` (JSON to ``$OUT/tail_diag.json``).
"""

from __future__ import annotations

import importlib.util
import json
import os

import torch

_spec = importlib.util.spec_from_file_location("devtrace", os.path.join(os.path.dirname(__file__), "trace.py"))
_trace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_trace)
_kernels, _summary = _trace._kernels, _trace._summary
_spec = importlib.util.spec_from_file_location("devmicro", os.path.join(os.path.dirname(__file__), "micro.py"))
_micro = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_micro)


def gpu_ms(fn, reps=7):
    """Median ms of fn() over reps, L2 flushed before each (micro.py's timer)."""
    return _micro.gpu_ms(fn, reps=reps)


class Info:
    def __init__(self, features):
        self.features = features


def main():
    from adaptqr.detectors import finish_tail, route
    from adaptqr.paths.householder import factor_householder
    from adaptqr.layout import load_column_major
    from adaptqr.testing.generators import generate

    res = {}
    B, n = 640, 512
    H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
    tau = torch.empty(B, n, device="cuda")
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    for case in ("clustered", "dense"):
        A = generate(B, n, 0, 770004, case)
        _, f = route(H, src=A)
        na, nz = f["n_active"], f["n_nonzero"]
        print(f"{case}: n_active {na.min().item()}..{na.max().item()}, "
              f"n_nonzero {nz.min().item()}..{nz.max().item()}")
        variants = {"full": None, "routed": {"n_active": na, "n_nonzero": nz},
                    "floor": {"n_active": na, "n_nonzero": na.clone()}}
        res[f"{case}_load"] = gpu_ms(lambda: load_column_major(A, H))
        for name, feats in variants.items():
            def call(feats=feats):
                load_column_major(A, H)
                factor_householder(H, tau, Info(feats) if feats else None)
                if feats:
                    finish_tail(H, tau, feats["n_active"])
            res[f"{case}_{name}"] = gpu_ms(call)
            print(f"  {name}: {res[f'{case}_{name}']:.3f} ms (load {res[f'{case}_load']:.3f})")
            res[f"trace_{case}_{name}"] = _summary(f"{case} {name}", _kernels(call, flush))["per_kernel"]
        del A
    r, t, m = 288, 224, 512
    for dt, tf32 in (("float32", False), ("tf32", True), ("bfloat16", False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        d = torch.bfloat16 if dt == "bfloat16" else torch.float32
        Vt = torch.randn(B, r, m, device="cuda", dtype=d)
        At = torch.randn(B, m, t, device="cuda", dtype=d)
        V = Vt.mT.contiguous()
        Z = torch.randn(B, r, t, device="cuda", dtype=d)
        L = torch.tril(torch.randn(B, r, r, device="cuda")) + 30 * torch.eye(r, device="cuda")
        Gf = torch.randn(B, r, t, device="cuda")
        parts = {"G": lambda: torch.bmm(Vt, At), "S": lambda: torch.bmm(Vt, V),
                 "U": lambda: At.baddbmm_(V, Z, alpha=-1)}
        if dt != "bfloat16":
            parts["solve"] = lambda: torch.linalg.solve_triangular(L, Gf, upper=False)
        for name, fn in parts.items():
            res[f"gemm_{dt}_{name}"] = gpu_ms(fn)
        print(dt, {k: round(v, 3) for k, v in res.items() if k.startswith(f"gemm_{dt}")})
        del Vt, At, V, Z, L, Gf
    torch.backends.cuda.matmul.allow_tf32 = False
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "tail_diag.json"), "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
