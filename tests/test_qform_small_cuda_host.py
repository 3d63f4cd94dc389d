"""QF23's small-Q CUDA C kernel (paths/kernels/qform_small_cuda.py) on the CPU, through
:mod:`adaptqr.testing.cuda_host`: one CTA a matrix, one thread a column of Q, against
torch's ``householder_product`` of the same reflectors."""

from __future__ import annotations

import pytest
import torch

from adaptqr import originals
from adaptqr.testing import cuda_host

pytestmark = pytest.mark.skipif(not cuda_host.available(), reason="needs a C++20 compiler")


def _q(h, tau):
    B, m, n = h.shape
    Ht = h.transpose(-2, -1).contiguous()
    Qt = torch.full((B, n, m), float("nan"))
    cuda_host.qform_small_launch(Ht, tau.contiguous(), Qt, m, n, tau.shape[-1])
    return Qt.transpose(-2, -1)


@pytest.mark.parametrize("B,m,n,k", [(3, 32, 32, 32), (2, 20, 20, 20), (2, 64, 40, 40),
                                     (2, 50, 30, 12), (1, 16, 16, 16), (1, 3, 2, 2), (2, 9, 5, 0)])
def test_small_q_equals_torch(B, m, n, k):
    g = torch.Generator().manual_seed(m * 7 + n + k)
    A = torch.randn(B, m, n, generator=g)
    h, tau = originals.geqrf(A)
    tau = tau[:, :k]
    ref = originals.householder_product(h.double(), tau.double())
    got = _q(h, tau)
    torch.testing.assert_close(got.double(), ref, rtol=0, atol=2e-6)


def test_small_q_of_degenerate_reflectors():
    # A zero column (tau 0: H_j the identity), a repeated one, a tiny one, and NaN confined
    # to its own matrix, as torch's.
    g = torch.Generator().manual_seed(4)
    A = torch.randn(3, 24, 24, generator=g)
    A[0, :, 5] = 0.0
    A[0, :, 9] = A[0, :, 8]
    A[1, :, 3] *= 1e-30
    A[2, 4, 7] = float("nan")
    h, tau = originals.geqrf(A)
    assert float(tau[0, 5]) == 0.0
    ref = originals.householder_product(h.double(), tau.double())
    got = _q(h, tau)
    torch.testing.assert_close(got[:2].double(), ref[:2], rtol=0, atol=2e-6)
    assert torch.isnan(got[2]).any() and torch.isfinite(got[:2]).all()
