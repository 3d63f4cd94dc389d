"""The CholeskyQR2 panel kernel (paths/kernels/cholqr_panel.py) under the Triton interpreter.

One program per matrix (P = 1: its grid barriers never wait), a panel at column 16 of a
48-row matrix, against the Householder split panel kernel on the same panel: the
reconstruction must give the same reflectors, taus, T and R up to float32 rounding; a
panel it cannot take (zero or dependent column, NaN, nothing below the diagonal,
n_active inside the panel) must go to
the Householder column loop, which gives the split kernel's result bit for bit.
"""

from __future__ import annotations

import textwrap

import pytest

from _interpret import run_script  # tests/_interpret.py (pytest puts tests/ on sys.path)

SCRIPT = textwrap.dedent(r'''
    import os, json
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    from adaptqr.paths.kernels.panel import panel_split_kernel
    from adaptqr.paths.kernels.cholqr_panel import panel_cholqr_kernel

    B, m, n, nb, k, RB = 3, 48, 40, 16, 16, 32

    def panel(A, kind, pw=16, na=None):
        Ht = A.mT.contiguous().clone()
        tau = torch.zeros(B, n); TW = torch.zeros(B, 3, nb, nb)
        WS = torch.zeros(B, 3, 1, 6 * nb); SP = torch.zeros(B, 1, nb, nb)
        CNT = torch.zeros(B, 3 * n, dtype=torch.int32)
        NA = na if na is not None else tau
        if kind == "split":
            panel_split_kernel[(B, 1)](Ht, tau, TW, NA, WS, SP, CNT, k, m, n, pw, 1, 3, 1,
                                       NB=nb, RB=RB, PMAX=1, HAS_NA=na is not None,
                                       WRITE_T=True)
        else:
            GW = torch.zeros(B, 1, nb * nb, dtype=torch.float64)
            GR = torch.zeros(B, nb * nb, dtype=torch.float64)
            CNT4 = torch.zeros(B, 12, dtype=torch.int32)
            panel_cholqr_kernel[(B, 1)](Ht, tau, TW, NA, GW, GR, CNT4, WS, SP, CNT, k, m, n,
                                        pw, 1, 3, 1, NB=nb, RB=RB, PMAX=1, LOG2NB=4,
                                        HAS_NA=na is not None)
        return Ht, tau, TW

    def emit(name, A, pw=16, na=None):
        (H1, t1, T1), (H2, t2, T2) = panel(A, "split", pw, na), panel(A, "cholqr", pw, na)
        fin = torch.isfinite(H1).all(dim=(1, 2))
        scale = H1.abs().amax(dim=(1, 2)).clamp_min(1e-38)
        rel = [float(((H1[b] - H2[b]).abs().max() / scale[b])) if fin[b] else 0.0
               for b in range(B)]
        print(json.dumps({"name": name, "h": rel,
                          "same": [bool(torch.equal(H1[b], H2[b]) and torch.equal(t1[b], t2[b])
                                        and torch.equal(T1[b], T2[b])) for b in range(B)],
                          "nan_same": [bool(torch.equal(torch.isnan(H1[b]), torch.isnan(H2[b])))
                                       for b in range(B)],
                          "tau": float(torch.nan_to_num(t1 - t2).abs().max()),
                          "t": float(torch.nan_to_num(T1 - T2).abs().max())}), flush=True)

    torch.manual_seed(0)
    A0 = torch.randn(B, m, n)
    for sc in (1.0, 1e30, 1e-30):
        emit(f"dense {sc:g}", A0 * sc)
    # Subnormal float32 entries: the Householder kernels' norms underflow there, the
    # float64 Gram does not: same reflectors and taus as the unscaled panel, R scaled.
    (H1, t1, _), (H2, t2, _) = panel(A0, "cholqr"), panel(A0 * 1e-40, "cholqr")
    low = torch.ones(n, m, dtype=torch.bool).triu(1)  # Ht is (B, n, m): row > column
    low[:k] = False; low[k + 16:] = False              # the panel's columns only
    print(json.dumps({"name": "subnormal", "finite": bool(torch.isfinite(H2).all()),
                      "v": float((H2[:, low] - H1[:, low]).abs().max()),
                      "tau": float((t1 - t2).abs().max()),
                      "r": float(((H2[:, ~low].double() * 1e40 - H1[:, ~low]).abs().max()
                                  / H1.abs().max()))}), flush=True)
    A = A0.clone(); A[0, :, 18] = 0                          # zero column: tau 0
    A[1, :, 20] = A[1, :, 17] * 2 - A[1, :, 19]              # dependent column
    A[2, 30, 25] = float("nan")
    emit("fallbacks", A)
    emit("upper", A0.triu())                                 # geqrf: tau = 0, H = A
    emit("ragged 9", A0, pw=9)
    emit("n_active", A0, na=torch.tensor([40, 21, 16], dtype=torch.int32))
''')


@pytest.fixture(scope="module")
def results():
    return run_script(SCRIPT)


@pytest.mark.parametrize("name", ["dense 1", "dense 1e+30", "dense 1e-30", "ragged 9"])
def test_reconstruction_matches_householder(results, name):
    # Same H (R and reflectors), tau and T as the Householder panel to float32 rounding,
    # but computed another way (not the fallback): not bitwise equal. "ragged 9": a last
    # panel of 9 columns in a 16-wide tile.
    d = results[name]
    assert max(d["h"]) < 2e-5 and d["tau"] < 1e-5 and d["t"] < 1e-4, d
    assert not any(d["same"]), d


def test_subnormal_panel(results):
    d = results["subnormal"]
    # R's entries are subnormal: about 1e-45 / 1e-40 = 1e-5 relative precision left.
    assert d["finite"] and d["v"] < 1e-5 and d["tau"] < 1e-5 and d["r"] < 1e-3, d


def test_zero_dependent_and_nan_panels_fall_back(results):
    # Zero column, dependent column, NaN: the Householder loop, bit for bit.
    d = results["fallbacks"]
    assert all(d["same"][:2]), d
    assert d["nan_same"][2], d


def test_upper_triangular_panel_falls_back(results):
    # Nothing below the diagonal: geqrf's tau = 0 (the reconstruction would give tau >= 1).
    assert all(results["upper"]["same"]), results["upper"]


def test_n_active_inside_the_panel_falls_back(results):
    d = results["n_active"]
    assert not d["same"][0] and max(d["h"]) < 2e-5, d   # n_active past the panel: CholeskyQR2
    assert d["same"][1] and d["same"][2], d             # inside it, or at its start: Householder
