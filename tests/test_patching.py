"""adaptqr.patch / unpatch / patched (issue 25), on the CPU."""

from __future__ import annotations

import torch

import adaptqr
from adaptqr import originals


def _torch_functions():
    return torch.geqrf, torch.linalg.qr, torch.linalg.householder_product


def test_patch_and_unpatch():
    assert _torch_functions() == (originals.geqrf, originals.linalg_qr, originals.householder_product)
    adaptqr.patch()
    try:
        assert adaptqr.is_patched()
        assert _torch_functions() == (adaptqr.geqrf, adaptqr.linalg.qr, adaptqr.householder_product)
        adaptqr.patch()  # twice is once
        assert torch.geqrf is adaptqr.geqrf
    finally:
        adaptqr.unpatch()
    assert not adaptqr.is_patched()
    assert _torch_functions() == (originals.geqrf, originals.linalg_qr, originals.householder_product)
    adaptqr.unpatch()  # not patched: nothing to do
    assert torch.geqrf is originals.geqrf


def test_patched_calls_give_torchs_results_without_recursion():
    # The torch path and the fallbacks call torch's functions through adaptqr.originals: a
    # patched torch.geqrf must not call itself.
    A = torch.randn(3, 6, 4, dtype=torch.float64)
    want_h, want_tau = originals.geqrf(A)
    want_q, want_r = originals.linalg_qr(A)
    with adaptqr.patched():
        h, tau = torch.geqrf(A)
        Q, R = torch.linalg.qr(A)
        Q2 = torch.linalg.householder_product(h, tau)
    torch.testing.assert_close(h, want_h, rtol=0, atol=1e-12)
    torch.testing.assert_close(tau, want_tau, rtol=0, atol=1e-12)
    torch.testing.assert_close(Q, want_q, rtol=0, atol=1e-12)
    torch.testing.assert_close(R, want_r, rtol=0, atol=1e-12)
    torch.testing.assert_close(Q2, want_q, rtol=0, atol=1e-12)


def test_patched_restores_the_state_before_it():
    with adaptqr.patched():
        with adaptqr.patched():
            pass
        assert torch.linalg.qr is adaptqr.linalg.qr  # the outer block still patched
    assert torch.linalg.qr is originals.linalg_qr
    try:
        with adaptqr.patched():
            raise KeyError("x")
    except KeyError:
        pass
    assert torch.linalg.qr is originals.linalg_qr


def test_patched_gradients_flow():
    A = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    with adaptqr.patched():
        Q, R = torch.linalg.qr(A)
        (Q.sum() + R.sum()).backward()
    B = A.detach().clone().requires_grad_(True)
    Qt, Rt = originals.linalg_qr(B)
    (Qt.sum() + Rt.sum()).backward()
    torch.testing.assert_close(A.grad, B.grad, rtol=1e-9, atol=1e-10)
