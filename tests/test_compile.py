"""The public ops under torch.compile, torch.export and torch.library.opcheck (issue 26), on the
CPU, where the ops delegate to torch. Most tests use the ``aot_eager`` backend (the traced
graph and autograd, without code generation); one compiles with inductor."""

from __future__ import annotations

import pytest
import torch

import adaptqr
from adaptqr import originals

A = torch.randn(4, 8, 6)


@pytest.fixture(scope="module", autouse=True)
def _fresh_dynamo():
    # Compiled frames of this module are dropped when it is done: their caches otherwise
    # clean up at interpreter exit, after dynamo's own state (a KeyError printed there).
    yield
    torch._dynamo.reset()


def test_opcheck_geqrf():
    torch.library.opcheck(torch.ops.adaptqr.geqrf.default, (A,))
    torch.library.opcheck(torch.ops.adaptqr.geqrf.default, (torch.randn(2, 3, 5, 7, dtype=torch.float64),))
    # Size-1 and size-0 dims: the fake strides are the dispatcher's own, as torch.geqrf's.
    torch.library.opcheck(torch.ops.adaptqr.geqrf.default, (torch.randn(1, 4, 3),))
    torch.library.opcheck(torch.ops.adaptqr.geqrf.default, (torch.randn(0, 4, 3),))


def test_opcheck_householder_product():
    h, tau = originals.geqrf(A)
    torch.library.opcheck(torch.ops.adaptqr.householder_product.default, (h, tau))


@pytest.mark.parametrize("X,mode", [(A.double(), "reduced"), (torch.randn(3, 4, 7, dtype=torch.float64), "complete")])
def test_opcheck_qr_with_autograd(X, mode):
    torch.library.opcheck(torch.ops.adaptqr.qr.default, (X.clone().requires_grad_(True), mode))


def test_opcheck_qr_r_mode():
    torch.library.opcheck(torch.ops.adaptqr.qr.default, (A, "r"), test_utils=("test_schema", "test_faketensor"))


def _compiled(fn, **kw):
    return torch.compile(fn, fullgraph=True, backend=kw.pop("backend", "aot_eager"), **kw)


def test_geqrf_fullgraph():
    a, tau = _compiled(lambda x: adaptqr.geqrf(x * 1.0))(A)
    ra, rt = originals.geqrf(A)
    assert torch.equal(a, ra) and torch.equal(tau, rt) and a.stride() == ra.stride()


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_fullgraph(mode):
    Q, R = _compiled(lambda x: adaptqr.linalg.qr(x + 0.0, mode=mode))(A)
    Qt, Rt = originals.linalg_qr(A, mode=mode)
    assert Q.shape == Qt.shape and R.shape == Rt.shape
    torch.testing.assert_close(R, Rt)
    torch.testing.assert_close(Q, Qt)


def test_householder_product_fullgraph():
    h, tau = originals.geqrf(A)
    got = _compiled(lambda a, t: adaptqr.householder_product(a, t))(h, tau)
    assert torch.equal(got, originals.householder_product(h, tau))


def test_qr_gradients_under_compile_are_torchs():
    X = A.double().requires_grad_(True)
    Q, R = _compiled(lambda x: adaptqr.linalg.qr(x))(X)
    (Q.sum() + (R * R).sum()).backward()
    Y = A.double().requires_grad_(True)
    Qt, Rt = originals.linalg_qr(Y)
    (Qt.sum() + (Rt * Rt).sum()).backward()
    torch.testing.assert_close(X.grad, Y.grad, rtol=1e-9, atol=1e-10)


def test_no_graph_break():
    def step(x):
        a, tau = adaptqr.geqrf(x)
        Q, R = adaptqr.linalg.qr(x)
        return adaptqr.householder_product(a, tau) - Q, R

    assert torch._dynamo.explain(step)(A).graph_break_count == 0


def test_bad_input_under_compile_raises_torchs_error():
    with pytest.raises(Exception, match="unrecognized mode"):
        _compiled(lambda x: adaptqr.linalg.qr(x, mode="full"))(A)


def test_export():
    class M(torch.nn.Module):
        def forward(self, x):
            a, tau = adaptqr.geqrf(x)
            return adaptqr.householder_product(a, tau)

    ep = torch.export.export(M(), (A,))
    torch.testing.assert_close(ep.module()(A), originals.householder_product(*originals.geqrf(A)))


@pytest.mark.slow
def test_inductor():
    a, tau = torch.compile(lambda x: adaptqr.geqrf(torch.sin(x)), fullgraph=True)(A)
    ra, rt = originals.geqrf(torch.sin(A))
    torch.testing.assert_close(a, ra)
    torch.testing.assert_close(tau, rt)
