"""Issue 9 (EXPERIMENTS.md C6): the CholeskyQR path alone against the Householder path alone,
at 8x2048 and 2x4096 (qr_v2 dense cond 1, another seed), with a stage breakdown and the
float64 check; plus a batch with an injected singular and a cond-1e8 matrix (fallback).

Run there: ``python3 bench/devscripts/cholqr_time.py`` (JSON to ``$OUT/cholqr_time.json``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

import torch

_here = os.path.dirname(__file__)
_spec = importlib.util.spec_from_file_location("devmicro", os.path.join(_here, "micro.py"))
_micro = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_micro)


class _Info:
    def __init__(self):
        self.notes = {}


def stages(A):
    """ms per stage of one factor_cholqr call (synchronized between stages)."""
    from adaptqr.paths import cholqr as cq
    out, ev = {}, []

    def mark(name):
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        ev.append((name, e))

    B, n, _ = A.shape
    H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
    H.copy_(A)
    torch.cuda.synchronize()
    mark("start")
    A64 = H.double()
    mark("to_fp64")
    opts = dict(dtype=torch.float64, device="cuda")
    G = torch.empty(B, n, n, **opts)
    cq.cb.gram_upper(A64, G)
    mark("gram")
    gref = G.diagonal(dim1=-2, dim2=-1).clone()
    R = torch.zeros(B, n, n, **opts)
    Ri = torch.zeros(B, n, n, **opts)
    bad = torch.zeros(B, dtype=torch.int32, device="cuda")
    mark("alloc_r")
    cq.cb.chol_inv(G, R, Ri, gref, bad)
    mark("chol_inv")
    cq.cb.right_upper_mul(A64, Ri)
    mark("q")
    cq.orth_loss(A64)
    mark("orth")
    Hc, tau_c = cq.householder_form(A64, R)
    mark("lu_and_form")
    H.copy_(Hc)
    mark("store")
    torch.cuda.synchronize()
    t0 = ev[0][1]
    prev = t0
    for name, e in ev[1:]:
        out[name] = round(prev.elapsed_time(e), 3)
        prev = e
    out["total"] = round(t0.elapsed_time(ev[-1][1]), 3)
    return out


#: (leaf width, warps) of the leaf kernels compared by graph_parts.
LEAF_CONFIGS = ((32, 4), (32, 2), (64, 4), (64, 8))


def graph_parts(A):
    """GPU time of the path's parts replayed as CUDA graphs (no host launch cost), ms, and
    the float64 check of the body's output, per leaf configuration; the orthogonality
    estimates."""
    from adaptqr.paths import cholqr as cq
    from adaptqr.testing import check_geqrf
    cb = cq.cb
    B, n, _ = A.shape
    H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
    H.copy_(A)
    A64 = H.double()
    opts = dict(dtype=torch.float64, device="cuda")
    G0 = torch.empty(B, n, n, **opts)
    cb.gram_upper(A64, G0)
    G, R, Ri = torch.empty_like(G0), torch.zeros_like(G0), torch.zeros_like(G0)
    gref = G0.diagonal(dim1=-2, dim2=-1).clone()
    bad = torch.zeros(B, dtype=torch.int32, device="cuda")
    out = {"gram_graph_ms": _micro.gpu_ms(lambda: cb.gram_upper(A64, G), graph=True),
           "q_graph_ms": _micro.gpu_ms(lambda: cb.right_upper_mul(G, Ri), graph=True)}

    def chol():
        G.copy_(G0)
        cb.chol_inv(G, R, Ri, gref, bad)

    chol()
    cb.right_upper_mul(A64, Ri)
    out["orth_loss"] = [float(x) for x in cq.orth_loss(A64)]
    Q0 = A64.clone()
    M, LI, UI = torch.empty_like(Q0), torch.zeros_like(Q0), torch.zeros_like(Q0)
    S = torch.empty(B, n, **opts)

    def lu():
        M.copy_(Q0)
        cb.lu_signs(M, LI, UI, S, last=n - 1)

    default = (cb.LEAF, cb.LOG2_LEAF, cb.LEAF_WARPS)
    for leaf, warps in LEAF_CONFIGS:
        cb.LEAF, cb.LOG2_LEAF, cb.LEAF_WARPS = leaf, leaf.bit_length() - 1, warps
        tag = f"l{leaf}w{warps}"
        try:
            Hc, tau_c, fail = cq.cholqr_body(H)
            Ho = H.clone()
            Ho.copy_(Hc)
            r = check_geqrf(A, Ho, tau_c.float())
            out[tag] = {"fail": fail.tolist(), "factor": r.worst_factor, "orth": r.worst_orth,
                        "error": r.error,
                        "chol_graph_ms": _micro.gpu_ms(chol, graph=True),
                        "lu_graph_ms": _micro.gpu_ms(lu, graph=True),
                        "body_graph_ms": _micro.gpu_ms(lambda: cq.cholqr_body(H), graph=True)}
        except Exception as exc:  # a configuration that does not compile or fit
            out[tag] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        print(tag, json.dumps(out[tag]), flush=True)
    cb.LEAF, cb.LOG2_LEAF, cb.LEAF_WARPS = default
    return out


def main():
    from adaptqr.paths.cholqr import factor_cholqr
    from adaptqr.paths.householder import factor_householder
    from adaptqr.layout import load_column_major
    from adaptqr.testing import check_geqrf
    from adaptqr.testing.generators import generate

    only = sys.argv[1:] or ["8x2048", "2x4096"]
    rows = []
    for B, n, seed in ((8, 2048, 224466), (2, 4096, 32412), (4, 1024, 4327), (2, 3072, 7)):
        if f"{B}x{n}" not in only:
            continue
        A = generate(B, n, 1, seed + 1)  # not the benchmark's own seed
        H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
        tau = torch.empty(B, n, device="cuda")

        def householder():
            load_column_major(A, H)
            factor_householder(H, tau, None)

        def cholqr():
            load_column_major(A, H)
            factor_cholqr(H, tau, None)

        row = {"case": f"{B}x{n}", "householder_ms": _micro.gpu_ms(householder),
               "cholqr_ms": _micro.gpu_ms(cholqr)}
        row["ratio"] = round(row["householder_ms"] / row["cholqr_ms"], 3)
        row["stages"] = stages(A)
        row["graph"] = graph_parts(A)
        info = _Info()
        load_column_major(A, H)
        factor_cholqr(H, tau, info)
        r = check_geqrf(A, H, tau)
        row.update(factor=r.worst_factor, orth=r.worst_orth, bar=r.passes_bar,
                   fallback=info.notes.get("fallback"))
        rows.append(row)
        print(json.dumps(row), flush=True)

    # Injected: a singular and a cond-1e8 matrix among dense ones.
    B, n = 4, 2048
    A = generate(B, n, 1, 99)
    A[1, :, 7] = A[1, :, 3]
    u, _, vh = torch.linalg.svd(A[2].double())
    A[2] = (u * torch.logspace(0, -8, n, dtype=torch.float64, device="cuda")) @ vh
    H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
    tau = torch.empty(B, n, device="cuda")
    info = _Info()
    load_column_major(A, H)
    factor_cholqr(H, tau, info)
    r = check_geqrf(A, H, tau)
    inj = {"case": "inject 4x2048", "factor": r.worst_factor, "orth": r.worst_orth,
           "bar": r.passes_bar, "fallback": info.notes.get("fallback")}
    print(json.dumps(inj), flush=True)
    rows.append(inj)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "cholqr_time.json"), "w") as fh:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "git": os.environ.get("ADAPTQR_COMMIT"), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
