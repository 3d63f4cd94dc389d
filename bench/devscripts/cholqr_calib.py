"""Issue 9 (EXPERIMENTS.md C7): the cholqr path's orthogonality estimate against the float64
check, per matrix, with no fallback: which ORTH_MAX keeps every accepted matrix far under
the bar while rejecting few dense ones. qr_v2 dense cond 1 / 2 at n = 2048 and 4096, and
matrices with prescribed condition numbers (1e5 .. 1e8).

Run there: ``python3 bench/devscripts/cholqr_calib.py`` (JSON to ``$OUT/cholqr_calib.json``).
"""

from __future__ import annotations

import json
import math
import os

import torch


def main():
    from adaptqr.paths import cholqr as cq
    from adaptqr.testing import check_geqrf
    from adaptqr.testing.generators import generate

    rows = []

    def run(A, label):
        B, n, _ = A.shape
        H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
        H.copy_(A)
        A64 = H.double()
        R, fail = cq.cholqr_fp64(A64)
        loss = cq.orth_loss(A64)
        Hc, tau_c = cq.householder_form(A64, R)
        H.copy_(Hc)
        r = check_geqrf(A, H, tau_c.float())
        for b in range(B):
            rows.append({"case": label, "n": n, "b": b, "fail": int(fail[b]),
                         "loss": float(loss[b]),
                         "factor": float(r.factor[b]) if r.factor.numel() == B else None,
                         "orth": float(r.orth[b]) if r.orth.numel() == B else None,
                         "error": r.error})
            print(json.dumps(rows[-1]), flush=True)

    if os.environ.get("CALIB_DENSE", "1") == "1":
        for seed in (1, 2, 3):
            run(generate(8, 2048, 1, 500 + seed), f"dense c1 s{seed}")
        run(generate(8, 2048, 2, 600), "dense c2")
        for seed in (1, 2):
            run(generate(2, 4096, 1, 700 + seed), f"4096 dense c1 s{seed}")
    n = 2048
    base = generate(1, n, 0, 800).double()
    u, _, vh = torch.linalg.svd(base)
    for c in (1e5, 3e5, 1e6, 3e6, 1e7, 3e7):
        # One matrix a batch: a batch-wide structural failure must not hide the others.
        sv = torch.logspace(0, -math.log10(c), n, dtype=torch.float64, device="cuda")
        run(((u * sv) @ vh).float(), f"cond {c:.0e}")
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "cholqr_calib.json"), "w") as fh:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "git": os.environ.get("ADAPTQR_COMMIT"), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
