"""H37's small-QR CUDA C kernel (paths/kernels/geqrf_small_cuda.py) on the CPU, through
:mod:`adaptqr.testing.cuda_host`: one CTA a matrix, a warp a pair of its columns, the input
read through its strides; against LAPACK's geqrf (float32 and float64), the half gate, and
the degenerate structures' verdicts."""

from __future__ import annotations

import pytest
import torch

from adaptqr import originals
from adaptqr.paths.kernels import geqrf_small_cuda
from adaptqr.testing import check_geqrf, cuda_host
from adaptqr.testing.degenerate import STRUCTURES, degenerate, judge

pytestmark = pytest.mark.skipif(not cuda_host.available(), reason="needs a C++20 compiler")


def _geqrf(A, inplace=False):
    """The kernel's ``(H, tau)`` of ``A`` ``(B, m, n)``, H column-major."""
    B, m, n = A.shape
    tau = torch.full((B, min(m, n)), float("nan"))
    if inplace:
        H = A
    else:
        H = torch.full((B, n, m), float("nan")).mT
    cuda_host.geqrf_small_launch(A, H, tau)
    return H, tau


def _randn(B, m, n, seed):
    return torch.randn(B, m, n, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("B,m,n", [(3, 32, 32), (2, 20, 20), (2, 64, 40), (2, 50, 30),
                                   (1, 64, 64), (1, 33, 33), (1, 3, 2), (2, 40, 1), (1, 1, 1),
                                   (2, 10, 30), (1, 32, 64), (2, 1, 5), (2, 17, 63)])
def test_small_qr_matches_lapack(B, m, n):
    A = _randn(B, m, n, m * 7 + n)
    keep = A.clone()
    H, tau = _geqrf(A)
    assert torch.equal(A, keep)
    assert H.stride() == (m * n, 1, m)
    r = check_geqrf(A, H, tau)
    assert r.passes_bar, r.summary
    # LAPACK's conventions (beta = -sign(alpha) norm, tau 0 for an empty sub-column): R and
    # tau are float64 geqrf's to float32 rounding.
    h64, t64 = originals.geqrf(A.double())
    k = min(m, n)
    torch.testing.assert_close(tau.double(), t64, rtol=0, atol=1e-5)
    torch.testing.assert_close(H.double().triu(), h64.triu(), rtol=0, atol=2e-5 * max(m, n))
    torch.testing.assert_close(H.double().tril(-1)[..., :k], h64.tril(-1)[..., :k], rtol=0,
                               atol=1e-4)


def test_small_qr_reads_its_input_through_its_strides():
    # Row-major (torch's default), every other matrix of a larger batch, a transposed view,
    # and one matrix expanded over the batch (batch stride 0): no copy on the way in.
    A = _randn(6, 24, 24, 11)
    ref_h, ref_t = _geqrf(A[::2].mT.contiguous().mT)
    for view in (A[::2], A.mT.contiguous().mT[::2]):
        H, tau = _geqrf(view)
        assert torch.equal(H, ref_h) and torch.equal(tau, ref_t)
    T = _randn(2, 24, 24, 12)
    H, tau = _geqrf(T.mT)
    r = check_geqrf(T.mT, H, tau)
    assert r.passes_bar, r.summary
    one = _randn(1, 24, 24, 13)
    H, tau = _geqrf(one.expand(3, 24, 24))
    assert all(torch.equal(H[i], H[0]) and torch.equal(tau[i], tau[0]) for i in range(3))


def test_small_qr_in_place_gives_the_same_bits():
    A = _randn(3, 40, 40, 5)
    ref_h, ref_t = _geqrf(A)
    H = A.mT.contiguous().mT
    h, tau = _geqrf(H, inplace=True)
    assert h is H and torch.equal(H, ref_h) and torch.equal(tau, ref_t)


@pytest.mark.parametrize("n", [24, 64])
def test_small_qr_of_degenerate_matrices(n):
    # Every structure of the degenerate suite in one batch, among random matrices: each
    # passes its verdict (the half gate, LAPACK's result where the factors are not
    # representable, NaN / Inf kept in their own matrix).
    mats = [degenerate(s, n, seed=i + 1) for i, s in enumerate(STRUCTURES)]
    mats += [torch.randn(n, n, generator=torch.Generator().manual_seed(99)) for _ in range(2)]
    A = torch.stack(mats)
    H, tau = _geqrf(A)
    bad = [(STRUCTURES[b] if b < len(STRUCTURES) else "random", v.why)
           for b, v in enumerate(judge(A, H, tau)) if not v.ok]
    assert not bad, bad
    finite = [b for b, s in enumerate(STRUCTURES) if s not in ("nan", "inf")]
    assert torch.isfinite(H[finite]).all() and torch.isfinite(tau[finite]).all()
    zero = STRUCTURES.index("rank0")
    assert torch.equal(tau[zero], torch.zeros(n)) and torch.equal(H[zero], torch.zeros(n, n))


def test_small_qr_launch_refuses_what_it_cannot_take():
    A = _randn(1, 8, 4, 1)
    with pytest.raises(ValueError, match="H must be"):
        geqrf_small_cuda.launch_args(A, torch.empty(1, 8, 4), torch.empty(1, 4))
    with pytest.raises(ValueError, match="tau must be"):
        geqrf_small_cuda.launch_args(A, torch.empty(1, 4, 8).mT, torch.empty(1, 5))
    with pytest.raises(ValueError, match="65 rows"):
        geqrf_small_cuda.launch_args(torch.empty(1, 65, 4), torch.empty(1, 4, 65).mT,
                                     torch.empty(1, 4))
    with pytest.raises(ValueError, match="65 columns"):
        geqrf_small_cuda.launch_args(torch.empty(1, 4, 65), torch.empty(1, 65, 4).mT,
                                     torch.empty(1, 4))
