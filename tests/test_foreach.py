"""adaptqr.foreach_geqrf and adaptqr.linalg.foreach_qr (issue 28), on the CPU."""

from __future__ import annotations

import pytest
import torch

import adaptqr
from adaptqr import originals


def _members(dtype=torch.float32):
    g = torch.Generator().manual_seed(28)
    shapes = [(6, 4), (3, 3), (6, 4), (2, 5, 5), (6, 4), (3, 3), (7, 2)]
    return [torch.randn(*s, generator=g, dtype=dtype) for s in shapes]


def test_foreach_geqrf_equals_per_tensor_calls_in_input_order():
    xs = _members()
    copies = [x.clone() for x in xs]
    outs = adaptqr.foreach_geqrf(xs)
    assert len(outs) == len(xs)
    for x, c, out in zip(xs, copies, outs):
        assert torch.equal(x, c), "an input was modified"
        assert isinstance(out, torch.return_types.geqrf)
        a, tau = originals.geqrf(x)
        # LAPACK factors each matrix of a stack on its own: bit for bit.
        assert torch.equal(out.a, a) and torch.equal(out.tau, tau)


def test_foreach_geqrf_batches_each_shape_once(monkeypatch):
    import adaptqr.api

    calls = []
    real = adaptqr.api.geqrf
    monkeypatch.setattr(adaptqr.api, "geqrf", lambda A, **kw: calls.append(tuple(A.shape)) or real(A, **kw))
    adaptqr.foreach_geqrf(_members())
    assert calls == [(3, 6, 4), (2, 3, 3), (2, 5, 5), (7, 2)]


def test_empty_list_and_mixed_dtypes():
    assert adaptqr.foreach_geqrf([]) == [] and adaptqr.linalg.foreach_qr([]) == []
    xs = [torch.randn(4, 4), torch.randn(4, 4, dtype=torch.float64), torch.randn(4, 4)]
    outs = adaptqr.foreach_geqrf(xs)
    assert [o.a.dtype for o in outs] == [torch.float32, torch.float64, torch.float32]


@pytest.mark.parametrize("bad", [torch.randn(5), torch.randint(0, 3, (3, 3))])
def test_a_bad_member_gets_the_per_tensor_error(bad):
    with pytest.raises(Exception) as per_tensor:
        adaptqr.geqrf(bad)
    with pytest.raises(type(per_tensor.value)) as grouped:
        adaptqr.foreach_geqrf([torch.randn(3, 3), bad, bad.clone()])
    assert str(grouped.value) == str(per_tensor.value)


def test_not_a_list_or_not_tensors():
    with pytest.raises(TypeError, match="list or tuple"):
        adaptqr.foreach_geqrf(torch.randn(2, 3, 3))
    with pytest.raises(TypeError, match="element 1"):
        adaptqr.foreach_geqrf([torch.randn(3, 3), "x"])


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_foreach_qr_equals_per_tensor_calls(mode):
    xs = _members(torch.float64)
    outs = adaptqr.linalg.foreach_qr(xs, mode=mode)
    for x, out in zip(xs, outs):
        Q, R = originals.linalg_qr(x, mode=mode)
        assert isinstance(out, torch.return_types.linalg_qr)
        assert out.Q.shape == Q.shape and out.R.shape == R.shape
        torch.testing.assert_close(out.R, R, rtol=0, atol=1e-12)
        torch.testing.assert_close(out.Q, Q, rtol=0, atol=1e-12)


def test_foreach_qr_gradients_reach_every_member():
    xs = [t.requires_grad_(True) for t in _members(torch.float64)[:3]]
    outs = adaptqr.linalg.foreach_qr(xs)
    sum(o.Q.sum() + o.R.sum() for o in outs).backward()
    for x in xs:
        y = x.detach().clone().requires_grad_(True)
        Q, R = originals.linalg_qr(y)
        (Q.sum() + R.sum()).backward()
        torch.testing.assert_close(x.grad, y.grad, rtol=1e-9, atol=1e-10)


def test_foreach_qr_bad_mode_is_torchs_error():
    with pytest.raises(RuntimeError, match="unrecognized mode"):
        adaptqr.linalg.foreach_qr([torch.randn(3, 3)], mode="full")
