"""Session 6, P5 / P6 / P7 (EXPERIMENTS.md): the T kernel fed by the register panel, the
panel's early tile load, the route probe's tile.

Device script. On 640x512 dense and clustered, path alone (input loaded into geqrf's layout
inside the timing, L2 flushed, median of 7): with the route probe's features, T's ``V^T V``
from the panel (default) against summed by the T kernel (``t_from_panel=False``), and without
features; per-kernel times (torch.profiler) of dense for each. Then the route probe's column
kernel (with the copy) at row chunks of 32 / 64 and 4 / 8 warps against the plain copy.

Run there: ``python3 bench/devscripts/t_diag.py`` (JSON to ``$OUT/t_diag.json``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os

import torch

_here = os.path.dirname(__file__)
_spec = importlib.util.spec_from_file_location("devtrace", os.path.join(_here, "trace.py"))
_trace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_trace)
_spec = importlib.util.spec_from_file_location("taildiag", os.path.join(_here, "tail_diag.py"))
_tail = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tail)


def main():
    from adaptqr.detectors import finish_tail, route
    from adaptqr.paths import schedules
    from adaptqr.paths.householder import factor_householder
    from adaptqr.layout import load_column_major
    from adaptqr.testing.generators import generate

    route_mod = importlib.import_module("adaptqr.detectors.route")
    res = {}
    B, n = 640, 512
    H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
    tau = torch.empty(B, n, device="cuda")
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    base = schedules.schedule_for(n, n)
    scheds = {"t_from_panel": base, "t_sum": dataclasses.replace(base, t_from_panel=False)}
    for case in ("dense", "clustered"):
        A = generate(B, n, 0, 770004, case)
        _, f = route(H, src=A)
        for sname, sched in scheds.items():
            for fname, feats in (("routed", f), ("full", None)):
                def call(feats=feats, sched=sched):
                    load_column_major(A, H)
                    factor_householder(H, tau, _tail.Info(feats) if feats else None, schedule=sched)
                    if feats:
                        finish_tail(H, tau, feats["n_active"])
                key = f"{case}_{fname}_{sname}"
                res[key] = _tail.gpu_ms(call)
                print(f"{key}: {res[key]:.3f} ms")
                if case == "dense":
                    res[f"trace_{key}"] = _trace._summary(key, _trace._kernels(call, flush))["per_kernel"]
        if case == "dense":
            res["load"] = _tail.gpu_ms(lambda: load_column_major(A, H))
            for bm in (32, 64):
                for w in (4, 8):
                    route_mod.ROUTE_BLOCK_M, route_mod.ROUTE_WARPS = bm, w
                    res[f"route_bm{bm}_w{w}"] = _tail.gpu_ms(lambda: route(H, src=A))
            route_mod.ROUTE_BLOCK_M, route_mod.ROUTE_WARPS = 32, 4
            print({k: round(v, 3) for k, v in res.items() if k.startswith(("route", "load"))})
        del A
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "t_diag.json"), "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
