"""The resident CUDA C QR (paths/kernels/resident_cuda.py: one CTA a matrix, the whole
factorization in its registers; EXPERIMENTS.md H26) on the CPU, through
:mod:`adaptqr.testing.cuda_host`: its source under the host-thread shim, CTAs of a few warps
(each thread is a host thread). Its output against LAPACK's geqrf in float64, with zero,
tiny, huge and repeated columns and ``n_active``."""

from __future__ import annotations

import pytest
import torch

from adaptqr import originals
from adaptqr.paths.kernels import resident_cuda
from adaptqr.testing import cuda_host
from adaptqr.testing.check import check_geqrf

pytestmark = pytest.mark.skipif(not cuda_host.available(), reason="needs a C++20 compiler")


def _factor(X, warps, na=None, floor=0.0):
    """``(H, tau)`` of ``X`` ``(B, m, n)`` by the kernel, stored as the householder path keeps
    it (column-major)."""
    B, m, n = X.shape
    Ht = X.transpose(-2, -1).contiguous()
    tau = torch.full((B, n), float("nan"))
    nav = torch.full((B,), float(n if na is None else na))
    cuda_host.resident_launch(Ht, tau, nav, m, n, na is not None, floor, warps)
    return Ht.transpose(-2, -1), tau


def _assert_geqrf(H, tau, X):
    h, t = originals.geqrf(X.double())
    H = H.double()
    scale = h.abs().amax(dim=(-2, -1), keepdim=True)
    assert ((H.triu() - h.triu()).abs() <= 2e-5 * scale).all()
    assert ((H.tril(-1) - h.tril(-1)).abs() <= 1e-3).all()
    torch.testing.assert_close(tau.double(), t, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("m,n,warps", [
    (70, 50, 4),    # three rows a lane, 13 columns a warp (the last warp 11), m > n
    (40, 40, 4),    # square: the last column's tau is 0
    (33, 7, 2),     # a padded lane row, a warp with fewer columns than the other
    (64, 60, 2),    # 30 columns a warp: the batched sums over 32 slots
    (40, 12, 8),    # 2 columns a warp (the last two warps 1)
])
def test_resident_equals_lapack(m, n, warps):
    g = torch.Generator().manual_seed(m * n)
    X = torch.randn(3, m, n, generator=g)
    X[1, :, 3] = 0.0                  # a zero column: tau 0
    X[1, :, 5] *= 1e-30               # tiny: the max-scaled sum of squares
    X[2, :, 1] = X[2, :, 0]           # repeated: its residual is rounding only
    X[2, :, 4] *= 1e25                # huge
    H, tau = _factor(X, warps)
    assert float(tau[1, 3]) == 0.0
    _assert_geqrf(H[:2], tau[:2], X[:2])
    # The repeated column leaves a residual of rounding noise, whose reflector is as
    # arbitrary as LAPACK's: R is not unique past it, so the matrix is held to the gate.
    res = check_geqrf(X[2:], H[2:], tau[2:])
    assert res.passes_bar, (res.factor, res.orth)
    if m == n:
        assert torch.equal(tau[:, -1], torch.zeros(3))


def test_resident_n_active_leaves_the_tail_as_the_reflectors_left_it():
    g = torch.Generator().manual_seed(5)
    m, n, na = 50, 20, 12
    X = torch.randn(2, m, n, generator=g)
    H, tau = _factor(X, 2, na=na)  # 2 rows a lane, 10 columns a warp
    assert torch.equal(tau[:, na:], torch.zeros(2, n - na))
    h, t = originals.geqrf(X[:, :, :na].double())
    _assert_geqrf(H[:, :, :na], tau[:, :na], X[:, :, :na])
    # The tail columns hold Q1^T A_tail, Q1 from the first na reflectors.
    Q1 = torch.linalg.householder_product(
        torch.cat([h, torch.zeros(2, m, m - na, dtype=h.dtype)], -1),
        torch.cat([t, torch.zeros(2, m - na, dtype=t.dtype)], -1))
    tail = Q1.mT @ X[:, :, na:].double()
    assert ((H[:, :, na:].double() - tail).abs() <= 1e-4 * tail.abs().amax()).all()


def test_shape_for_bounds_the_registers():
    assert resident_cuda.shape_for(176, 176) == (16, 6, 11)
    assert resident_cuda.shape_for(256, 128) == (16, 8, 8)
    for m, n in ((176, 176), (256, 128), (64, 64), (300, 200)):
        s = resident_cuda.shape_for(m, n)
        if s is not None:
            nw, rpl, cpw = s
            assert 32 * rpl >= m and nw * cpw >= n and rpl * cpw <= resident_cuda.MAX_HELD
    assert resident_cuda.shape_for(300, 300) is None
