"""Issue 9 (EXPERIMENTS.md C5), prepared in session 8: CholeskyQR2 from library calls on the
device, against the Householder path, at 8x2048 and 2x4096 (qr_v2 dense cond 1).

Timed (L2 flushed, medians; eager, cuSOLVER inside): the float64 Gram matrix (``bmm``),
``cholesky_ex``, ``solve_triangular`` (the ``A R^-1`` step), two whole CholeskyQR passes
(:func:`adaptqr.paths.cholqr_reference.cholesky_qr`), and the Householder path alone with
its input copy. Checked: :func:`geqrf_cholqr` (the reconstruction is the unblocked torch
reference: slow, not timed) against the float64 check, plain and shifted CholeskyQR3.
Issue 9's 1.5x needs the whole CholeskyQR path under 2/3 of the Householder time.

Run there: ``python3 bench/devscripts/cholqr_proto.py`` (JSON to ``$OUT/cholqr_proto.json``).
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


def main():
    from adaptqr.paths.cholqr_reference import cholesky_qr, geqrf_cholqr
    from adaptqr.paths.householder import factor_householder
    from adaptqr.paths.layout import load_column_major
    from adaptqr.testing import check_geqrf
    from adaptqr.testing.generators import generate

    rows = []
    for B, n, seed in ((8, 2048, 224466), (2, 4096, 32412)):
        A = generate(B, n, 1, seed + 1)  # not the benchmark's own seed
        A64 = A.double()
        G = A64.mT @ A64
        L = torch.linalg.cholesky(G)
        H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
        tau = torch.empty(B, n, device="cuda")

        def householder():
            load_column_major(A, H)
            factor_householder(H, tau, None)

        row = {"case": f"{B}x{n}",
               "gram_ms": _micro.gpu_ms(lambda: A64.mT @ A64),
               "cholesky_ms": _micro.gpu_ms(lambda: torch.linalg.cholesky_ex(G)),
               "trsm_ms": _micro.gpu_ms(
                   lambda: torch.linalg.solve_triangular(L.mT, A64, upper=True, left=False)),
               "cholqr2_ms": _micro.gpu_ms(lambda: cholesky_qr(A, passes=2)),
               "householder_ms": _micro.gpu_ms(householder)}
        for tag, kw in (("plain", {}), ("shifted3", {"passes": 3, "shift": True})):
            Hc, tc, ok = geqrf_cholqr(A, **kw)
            r = check_geqrf(A, Hc, tc)
            row[f"{tag}_ok"] = int(ok.sum())
            row[f"{tag}_factor"], row[f"{tag}_orth"] = r.worst_factor, r.worst_orth
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "cholqr_proto.json"), "w") as fh:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "git": os.environ.get("ADAPTQR_COMMIT"), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
