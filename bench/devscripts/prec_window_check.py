"""T10 / QF22's range checks (device script): float32 matrices at scales around and far
outside the prescaling window (detectors.classify.PRESCALE_MIN_EXP / MAX_EXP) and with
structure (row scales, a few huge columns, tall), factored by ``adaptqr.geqrf`` (f16x3
trailing products), their Q formed by ``adaptqr.householder_product`` and by
``adaptqr.linalg.qr``, each checked against the float64 check at the bar (half the gate),
finite outputs asked. Prints one line a case; exit status 1 if any fails.

Run there: ``python3 bench/devscripts/prec_window_check.py``.
"""

import sys

import torch

import adaptqr
from adaptqr.testing.check import check_geqrf, check_householder_product, check_qr


def cases(g):
    for B, m, n in ((64, 512, 512), (4, 1024, 1024), (1, 2048, 2048), (8, 1024, 300)):
        base = torch.randn(B, m, n, generator=g)
        for s in (1e-30, 1e-6, 2.0 ** -3 / m ** 0.5, 0.3 / m ** 0.5, 1.0, 2.0 ** 11.5 / m ** 0.5,
                  2.0 ** 13 / m ** 0.5, 1e6, 1e30):
            yield f"{B}x{m}x{n} scale {s:.3g}", base * s
        rows = torch.logspace(0, -6, m).view(1, m, 1)
        yield f"{B}x{m}x{n} rows 1..1e-6", base * rows
        cols = base.clone()
        cols[:, :, :3] *= 1e4
        yield f"{B}x{m}x{n} three columns 1e4", cols


def main():
    g = torch.Generator().manual_seed(36)
    bad = 0
    for name, A in cases(g):
        A = A.cuda()
        H, tau = adaptqr.geqrf(A)
        c1 = check_geqrf(A, H, tau)
        Q = adaptqr.householder_product(H, tau)
        c2 = check_householder_product(H, tau, Q)
        Q2, R2 = adaptqr.linalg.qr(A)
        c3 = check_qr(A, Q2, R2)
        ok = all(c.passes_bar for c in (c1, c2, c3)) and all(
            bool(torch.isfinite(x).all()) for x in (H, tau, Q, Q2, R2))
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name:40s} geqrf {c1.worst_factor:.3g}/{c1.worst_orth:.3g}"
              f"  hp {c2.worst_factor:.3g}/{c2.worst_orth:.3g}  qr {c3.worst_factor:.3g}/{c3.worst_orth:.3g}",
              flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
