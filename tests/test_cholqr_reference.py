"""CholeskyQR2 rebuilt into geqrf's form (paths/cholqr_reference.py, issue 9's numerics), CPU.

- float64: H and tau are torch.geqrf's (LAPACK's) to rounding: the reconstruction's signs
  are Householder QR's, square matrices' last column included;
- float32 qr_v2 profiles pass the half-gate bar through the public check;
- the per-matrix fallback signal: a singular matrix (exact zero columns) is marked, its
  neighbours are not and pass the bar; the shifted variant takes a near-rank-deficient
  matrix that plain CholeskyQR2 cannot;
- one pass on an ill-conditioned matrix is caught by the orthogonality test;
- bad input fails with its shape; the input is never modified.
"""

from __future__ import annotations

import pytest
import torch

from adaptqr.paths.cholqr_reference import cholesky_qr, geqrf_cholqr, householder_from_q
from adaptqr.testing import check_geqrf, generate


@pytest.mark.parametrize("shape", [(3, 80, 80), (2, 200, 120), (2, 64, 1), (2, 1, 1), (2, 5, 5)])
def test_matches_lapack_geqrf_in_float64(shape):
    torch.manual_seed(1)
    A = torch.randn(*shape, dtype=torch.float64)
    A0 = A.clone()
    H, tau, ok = geqrf_cholqr(A)
    H0, tau0 = torch.geqrf(A)
    assert ok.all()
    assert torch.equal(A, A0)
    assert H.mT.is_contiguous()
    scale = A.abs().amax()
    assert float((H - H0).abs().max() / scale) < 1e-11
    assert float((tau - tau0).abs().max()) < 1e-11


def test_reconstruction_gives_back_q():
    torch.manual_seed(2)
    A = torch.randn(2, 50, 20, dtype=torch.float64)
    Q, R, ok = cholesky_qr(A)
    V, tau, s = householder_from_q(Q)
    Qh = torch.linalg.householder_product(V, tau)
    assert ok.all() and set(s.unique().tolist()) <= {-1.0, 1.0}
    assert ((tau >= 1) & (tau <= 2)).all()  # LAPACK's range for a nonzero column
    assert float((Qh * s.unsqueeze(-2) - Q).abs().max()) < 1e-12


@pytest.mark.parametrize("case,cond", [("dense", 1), ("dense", 2), ("mixed", 2), ("clustered", 0),
                                       ("band", 0), ("rowscale", 0), ("nearcollinear", 0)])
def test_float32_profiles_pass_the_bar(case, cond):
    A = generate(4, 192, cond, 31, case, "cpu")
    H, tau, ok = geqrf_cholqr(A)
    r = check_geqrf(A, H, tau)
    assert H.dtype == tau.dtype == torch.float32
    assert ok.all() and r.passes_bar, (r.worst_factor, r.worst_orth)


def test_singular_matrix_is_marked_and_its_neighbours_are_not():
    A = generate(4, 160, 1, 5, "dense", "cpu")
    A[2, :, 100:] = 0  # exact zero columns: the Gram matrix is singular
    H, tau, ok = geqrf_cholqr(A)
    assert ok.tolist() == [True, True, False, True]
    keep = torch.tensor([0, 1, 3])
    assert check_geqrf(A[keep], H[keep], tau[keep]).passes_bar


def test_shift_takes_a_near_rank_deficient_matrix():
    A = generate(4, 192, 0, 9, "nearrank", "cpu")
    _, _, ok_plain = geqrf_cholqr(A)
    H, tau, ok = geqrf_cholqr(A, passes=3, shift=True)
    assert not ok_plain.all()  # cond^2 past 1/u64: plain CholeskyQR2 breaks down
    assert ok.all() and check_geqrf(A, H, tau).passes_bar


def test_orthogonality_test_catches_one_pass():
    torch.manual_seed(3)
    U, _ = torch.linalg.qr(torch.randn(1, 120, 60, dtype=torch.float64))
    W, _ = torch.linalg.qr(torch.randn(1, 60, 60, dtype=torch.float64))
    A = U * torch.logspace(0, -6, 60, dtype=torch.float64) @ W.mT  # cond 1e6
    _, _, ok1 = geqrf_cholqr(A, passes=1, orth_tol=1e-10)
    _, _, ok2 = geqrf_cholqr(A, passes=2, orth_tol=1e-10)
    assert ok1.tolist() == [False] and ok2.tolist() == [True]


def test_bad_shape_names_it():
    with pytest.raises(ValueError, match=r"\(2, 3, 5\)"):
        cholesky_qr(torch.randn(2, 3, 5))
