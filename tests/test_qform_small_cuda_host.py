"""QF24's small-Q CUDA C kernel (paths/kernels/qform_small_cuda.py) on the CPU, through
:mod:`adaptqr.testing.cuda_host`: one CTA a matrix, a warp a pair of Q's columns, the inputs
read through their strides, against float64 ``householder_product`` of the same reflectors."""

from __future__ import annotations

import pytest
import torch

from adaptqr import originals
from adaptqr.paths.kernels import qform_small_cuda
from adaptqr.testing import cuda_host

pytestmark = pytest.mark.skipif(not cuda_host.available(), reason="needs a C++20 compiler")


def _q(h, tau):
    B, m, n = h.shape
    Q = torch.full((B, n, m), float("nan")).mT
    cuda_host.qform_small_launch(h, tau, Q)
    return Q


def _factors(B, m, n, seed):
    g = torch.Generator().manual_seed(seed)
    return originals.geqrf(torch.randn(B, m, n, generator=g))


@pytest.mark.parametrize("B,m,n,k", [(3, 32, 32, 32), (2, 20, 20, 20), (2, 64, 40, 40),
                                     (2, 50, 30, 12), (1, 64, 64, 64), (1, 33, 33, 33),
                                     (1, 3, 2, 2), (2, 9, 5, 0), (1, 1, 1, 1)])
def test_small_q_equals_float64(B, m, n, k):
    h, tau = _factors(B, m, n, m * 7 + n + k)
    assert h.stride() == (m * n, 1, m)  # geqrf's column-major layout, read as it is
    tau = tau[:, :k]
    ref = originals.householder_product(h.double(), tau.double())
    got = _q(h, tau)
    assert got.stride() == (m * n, 1, m)
    torch.testing.assert_close(got.double(), ref, rtol=0, atol=2e-6)


def test_small_q_reads_its_inputs_through_their_strides():
    # Row-major reflectors, every other matrix of a larger batch, and tau a strided slice:
    # no copy on the way in, the same Q as from the packed inputs.
    h, tau = _factors(6, 24, 24, 11)
    ref = originals.householder_product(h[::2].double(), tau[::2].double())
    rows = h.contiguous()[::2]
    wide = torch.zeros(6, 48)
    wide[:, ::2] = tau
    taus = wide[::2, ::2]
    assert rows.stride() == (2 * 24 * 24, 24, 1) and taus.stride() == (96, 2)
    torch.testing.assert_close(_q(rows, taus).double(), ref, rtol=0, atol=2e-6)


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


def test_small_q_launch_refuses_what_it_cannot_take():
    h, tau = _factors(1, 8, 4, 1)
    with pytest.raises(ValueError, match="column-major"):
        qform_small_cuda.launch_args(h, tau, torch.empty(1, 8, 4))
    with pytest.raises(ValueError, match="tau"):
        qform_small_cuda.launch_args(h, torch.zeros(1, 5), torch.empty(1, 4, 8).mT)
    with pytest.raises(ValueError, match="65 rows"):
        qform_small_cuda.rows_of(65)
