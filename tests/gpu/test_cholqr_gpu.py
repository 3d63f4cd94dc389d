"""GPU tests of the cholqr path (issue 9; paths/cholqr.py).

- a batch with an injected singular and a cond-1e8 matrix among dense ones, through the
  public call with the path on: every matrix passes the bar, the two go to householder and
  the decisions log says so (with reasons), the input is unchanged;
- dense matrices: R's diagonal signs and the reflectors are torch.geqrf's, up to the path's
  accuracy;
- every qr_v2 test profile at n = 2048 (mixed, rankdef, dense) passes the bar;
- the body's graph: an eager call, the capturing call and replays, each on new inputs, give
  each input's factorization; a replayed call with a singular matrix falls back;
- the Triton leaves on the device agree with the interpreter-tested recursion's definition
  (R^T R = G, R R^-1 = I) at a size with a partial leaf.
"""

from __future__ import annotations

import types

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

import adaptqr  # noqa: E402
from adaptqr import log  # noqa: E402
from adaptqr.paths import cholqr as cq  # noqa: E402
from adaptqr.paths import cholqr_blocks as cb  # noqa: E402
from adaptqr.testing import check_geqrf, generate  # noqa: E402


@pytest.fixture(autouse=True)
def _on(monkeypatch):
    monkeypatch.setenv("ADAPTQR_CHOLQR", "1")
    log.disable()
    adaptqr.clear_decisions()
    yield
    log.disable()
    adaptqr.clear_decisions()


def test_injected_singular_and_cond_1e8_fall_back():
    n = 2048
    A = generate(4, n, 1, 91)
    A[1, :, 7] = A[1, :, 3]
    u, _, vh = torch.linalg.svd(A[2].double())
    A[2] = ((u * torch.logspace(0, -8, n, dtype=torch.float64, device="cuda")) @ vh).float()
    A0 = A.clone()
    log.enable()
    H, tau = adaptqr.geqrf(A)
    assert torch.equal(A, A0)
    rec = adaptqr.decisions()[-1]
    assert rec["plan"]["dense"] == "cholqr", rec["plan"]
    fb = rec["fallback"]
    assert fb is not None and fb["to"] == "householder", fb
    # The two injected ones at least (a dense one may go too: its estimate decides).
    assert {1, 2} <= set(fb["matrices"]), fb
    assert fb["reasons"][fb["matrices"].index(1)] & cq.FAIL_BREAKDOWN, fb
    r = check_geqrf(A, H, tau)
    assert r.passes_bar, r.summary


def test_dense_matches_householder_convention():
    n = 2048
    A = generate(2, n, 2, 92)
    H, tau = adaptqr.geqrf(A, path="cholqr")
    H0, tau0 = torch.geqrf(A.double())
    d, d0 = H.diagonal(dim1=-2, dim2=-1), H0.diagonal(dim1=-2, dim2=-1)
    assert torch.equal(torch.sign(d), torch.sign(d0).float())
    scale = H0.abs().amax()
    assert float((H.double() - H0).abs().max() / scale) < 1e-3
    assert float((tau.double() - tau0).abs().max()) < 1e-3
    assert float(tau[:, -1].abs().max()) == 0.0  # square: no last reflector, as geqrf
    assert check_geqrf(A, H, tau).passes_bar


@pytest.mark.parametrize("case,cond,batch", [("dense", 2, 2), ("rankdef", 0, 2), ("mixed", 2, 2),
                                             ("dense", 1, 8)])
def test_profiles_pass_the_bar(case, cond, batch):
    A = generate(batch, 2048, cond, 224466 + batch, case)
    log.enable()
    H, tau = adaptqr.geqrf(A)
    r = check_geqrf(A, H, tau)
    assert r.passes_bar, (case, r.summary, adaptqr.decisions()[-1]["fallback"])


def test_leaves_on_device():
    B, n = 3, 75
    X = torch.randn(B, n + 9, n, dtype=torch.float64, device="cuda")
    G0 = X.mT @ X
    G, R, Ri = G0.clone(), torch.zeros_like(G0), torch.zeros_like(G0)
    bad = torch.zeros(B, dtype=torch.int32, device="cuda")
    cb.chol_inv(G, R, Ri, G0.diagonal(dim1=-2, dim2=-1).clone(), bad)
    eye = torch.eye(n, dtype=torch.float64, device="cuda")
    assert float((R.mT @ R - G0).abs().max() / G0.abs().max()) < 1e-13
    assert float((R @ Ri - eye).abs().max()) < 1e-10
    assert bad.tolist() == [0, 0, 0]


def test_body_graph_replays_new_inputs_and_falls_back_on_a_replay():
    B, n = 2, 2048
    cq._body_graphs().clear()
    cq._body_graphs().reset_stats()  # clear() keeps the counters of earlier tests' calls
    for s in range(4):  # eager, capture (its warm-up's result), two replays
        A = generate(B, n, 1, 300 + s)
        if s == 3:
            A[0, :, 9] = A[0, :, 5]
        H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
        H.copy_(A)
        tau = torch.empty(B, n, device="cuda")
        info = types.SimpleNamespace(notes={})
        cq.factor_cholqr(H, tau, info)
        r = check_geqrf(A, H, tau)
        assert r.passes_bar, (s, r.summary)
        fb = info.notes["fallback"]
        if s == 3:
            assert fb is not None and 0 in fb["matrices"], fb
    st = cq._body_graphs().stats()
    assert (st["captures"], st["hits"]) == (1, 2), st
