"""Issue 9, C13: cholqr against householder at sizes past the benchmark's (4x4096, 1x8192),
both called directly (L2 flushed, medians after 3 warm-up calls, Gaussian inputs): where, if
anywhere, the path starts to pay. No float64 check here (check_geqrf at these sizes outlasted
a 100 s limit); the path's own per-matrix estimate decides, and any fallback is reported.

Run there: ``python3 bench/devscripts/cholqr_sweep.py`` (JSON to ``$OUT/cholqr_sweep.json``).
"""

from __future__ import annotations

import json
import os
import sys
import types

import torch

sys.path.insert(0, os.path.dirname(__file__))
from cholqr_lanes import timed  # noqa: E402
from micro import dump  # noqa: E402


def main():
    from adaptqr.paths import cholqr as cq
    from adaptqr.paths.householder import factor_householder

    rows = []
    for B, n in ((4, 4096), (1, 8192)):
        g = torch.Generator(device="cuda").manual_seed(n + B)
        A = torch.randn(B, n, n, device="cuda", generator=g)
        H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
        tau = torch.empty(B, n, device="cuda")

        def hh():
            H.copy_(A)
            factor_householder(H, tau, None)

        def ch():
            H.copy_(A)
            cq.factor_cholqr(H, tau, None)

        row = {"case": f"{B}x{n}", "householder_ms": timed(hh, reps=3), "cholqr_ms": timed(ch, reps=3)}
        row["ratio"] = round(row["householder_ms"] / row["cholqr_ms"], 3)
        info = types.SimpleNamespace(notes={})
        H.copy_(A)
        cq.factor_cholqr(H, tau, info)
        row["fallback"] = info.notes.get("fallback")
        cq._body_graphs().clear()
        rows.append(row)
        print(json.dumps(row), flush=True)
    dump("cholqr_sweep", rows)


if __name__ == "__main__":
    main()
