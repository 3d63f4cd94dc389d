"""The CholeskyQR path (paths/cholqr.py, cholqr_blocks.py, kernels/cholqr_leaf.py) on the
CPU, its Triton leaves under the interpreter.

Sizes are chosen so that the recursion has several levels and a partial last leaf (LEAF is
32: n = 75 splits 64 + 11, then 32 + 32). Checked: the blocked Cholesky and inverse against
their definitions (row- and column-major storage), the blocked sign-shifted LU against the
unblocked reference reconstruction, the whole path against torch.geqrf, the per-matrix
fallback (singular, cond 1e8 and NaN matrices among good ones, recorded with reasons),
and that a good matrix's result does not depend on its batch neighbours.
"""

from __future__ import annotations

import pytest
from _support import Records  # tests/interpret/ is on sys.path

pytestmark = pytest.mark.interpret


def _cases():
    """Every case, ``{name: record}``."""
    records = Records()
    _out = records.add

    import torch

    from adaptqr.paths import cholqr as cq
    from adaptqr.paths import cholqr_blocks as cb
    from adaptqr.paths.cholqr_reference import householder_from_q
    from adaptqr.testing import check_geqrf

    torch.manual_seed(7)
    f64 = torch.float64

    def emit(name, **kw):
        _out(dict(name=name, **kw))

    def spd(B, n):
        A = torch.randn(B, n + 5, n, dtype=f64) * torch.logspace(0, -2, n, dtype=f64)
        return A.mT @ A

    # Blocked Cholesky + inverse, both storage orders; only G's upper triangle may be read.
    for order in ("row", "col"):
        B, n = 3, 75
        G0 = spd(B, n)
        G = G0.clone() if order == "row" else G0.mT.contiguous().mT.clone()
        G.copy_(torch.where(torch.ones(n, n, dtype=torch.bool).triu(), G, float("nan")))
        R, Ri = torch.zeros_like(G), torch.zeros_like(G)
        gref = G0.diagonal(dim1=-2, dim2=-1).clone()
        bad = torch.zeros(B, dtype=torch.int32)
        cb.chol_inv(G, R, Ri, gref, bad)
        L = torch.linalg.cholesky(G0)
        emit(f"chol_{order}", r=float((R - L.mT).abs().max() / L.abs().max()),
             ri=float((Ri @ R - torch.eye(n, dtype=f64)).abs().max()),
             lower=float(R.tril(-1).abs().max() + Ri.tril(-1).abs().max()), bad=bad.tolist())

    # A breakdown: matrix 1 has a column equal to an earlier one.
    B, n = 3, 75
    A = torch.randn(B, n, n, dtype=f64)
    A[1, :, 40] = A[1, :, 2]
    G0 = A.mT @ A
    G, R, Ri = G0.clone(), torch.zeros_like(G0), torch.zeros_like(G0)
    bad = torch.zeros(B, dtype=torch.int32)
    cb.chol_inv(G, R, Ri, G0.diagonal(dim1=-2, dim2=-1).clone(), bad)
    emit("chol_breakdown", bad=bad.tolist())

    # Blocked sign-shifted LU of an orthogonal Q against the unblocked reference.
    B, n = 2, 75
    Q = torch.linalg.qr(torch.randn(B, n, n, dtype=f64))[0]
    M = Q.mT.contiguous().mT.clone()
    LI, UI = torch.zeros_like(M), torch.zeros_like(M)
    S = torch.empty(B, n, dtype=f64)
    cb.lu_signs(M, LI, UI, S, last=n - 1)
    W, tau_ref, s_ref = householder_from_q(Q)
    tau = -S * M.diagonal(dim1=-2, dim2=-1)
    tau[:, -1] = 0.0
    # The reference leaves the last diagonal entry as d (no reflector there); the blocked LU
    # stores its pivot d - s (about 0). Neither is used: tau is 0 there.
    M[:, -1, -1] = W[:, -1, -1]
    emit("lu", m=float((M - W).abs().max()), tau=float((tau - tau_ref).abs().max()),
         s=bool(torch.equal(S, s_ref)))

    # The whole path on float32 inputs, against torch.geqrf in float64.
    for n in (40, 75, 130):
        B = 3
        A = torch.randn(B, n, n) * torch.logspace(0, -1, n)
        H = A.mT.contiguous().mT.clone()
        tau = torch.empty(B, n)
        info = type("Info", (), {})()
        info.notes = {}
        cq.factor_cholqr(H, tau, info)
        H0, t0 = torch.geqrf(A.double())
        r = check_geqrf(A, H, tau)
        emit(f"path_{n}", h=float((H.double() - H0).abs().max() / H0.abs().max()),
             tau=float((tau.double() - t0).abs().max()), factor=r.worst_factor,
             orth=r.worst_orth, bar=r.passes_bar, fallback=info.notes.get("fallback"))

    # Per-matrix fallback: singular (1), cond 1e8 (2), NaN (3) among good ones (0, 4).
    B, n = 5, 70
    A = torch.randn(B, n, n)
    A[1, :, 9] = A[1, :, 4]
    u, _, vh = torch.linalg.svd(A[2].double())
    A[2] = ((u * torch.logspace(0, -8, n, dtype=f64)) @ vh).float()
    A[3, 5, 6] = float("nan")
    H = A.mT.contiguous().mT.clone()
    tau = torch.empty(B, n)
    info = type("Info", (), {})()
    info.notes = {}
    cq.factor_cholqr(H, tau, info)
    good = [0, 1, 2, 4]
    r = check_geqrf(A[good], H[good], tau[good])
    # The good matrices alone: their results must not depend on the neighbours.
    Hg = A[[0, 4]].mT.contiguous().mT.clone()
    taug = torch.empty(2, n)
    cq.factor_cholqr(Hg, taug, None)
    emit("fallback", fb=info.notes.get("fallback"), factor=r.worst_factor, orth=r.worst_orth,
         bar=r.passes_bar, nan=bool(torch.isnan(H[3]).any()),
         alone=float((Hg - H[[0, 4]]).abs().max() + (taug - tau[[0, 4]]).abs().max()))

    # The orthogonality estimate: an orthogonal Q is near 0, one perturbed by 1e-4 is not.
    Q = torch.linalg.qr(torch.randn(2, 64, 64, dtype=f64))[0]
    Qp = Q.clone()
    Qp[1] += 1e-4 * torch.randn(64, 64, dtype=f64)
    emit("orth", loss=cq.orth_loss(Qp).tolist())
    return records

@pytest.fixture(scope="module")
def records():
    return _cases()


@pytest.mark.parametrize("order", ["row", "col"])
def test_chol_inv_blocked(records, order):
    r = records[f"chol_{order}"]
    assert r["r"] < 1e-12 and r["ri"] < 1e-9, r
    assert r["lower"] == 0.0, r  # R and R^-1 upper triangular, although G's lower part is NaN
    assert r["bad"] == [0, 0, 0]


def test_chol_breakdown_marks_only_its_matrix(records):
    assert records["chol_breakdown"]["bad"] == [0, 1, 0]


def test_lu_signs_matches_unblocked_reference(records):
    r = records["lu"]
    assert r["m"] < 1e-12 and r["tau"] < 1e-12 and r["s"], r


@pytest.mark.parametrize("n", [40, 75, 130])
def test_path_matches_geqrf(records, n):
    r = records[f"path_{n}"]
    assert r["fallback"] is None, r
    assert r["bar"] and r["h"] < 5e-6 and r["tau"] < 5e-6, r


def test_fallback_per_matrix(records):
    r = records["fallback"]
    fb = r["fb"]
    assert fb is not None and fb["from"] == "cholqr" and fb["to"] == "reference"
    assert fb["matrices"] == [1, 2, 3], fb
    reasons = dict(zip(fb["matrices"], fb["reasons"]))
    assert reasons[1] & 1 and reasons[3] & 1, reasons  # breakdown (NaN fails the pivot test)
    assert reasons[2] != 0
    assert r["bar"], r  # the redone matrices pass like the others
    assert r["nan"]  # the NaN matrix stays NaN (as torch.geqrf's would)
    assert r["alone"] == 0.0, r


def test_orth_estimate_separates(records):
    loss = records["orth"]["loss"]
    assert loss[0] < 1e-12 and loss[1] > 1e-6, loss
