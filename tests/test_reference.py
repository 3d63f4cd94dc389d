"""The reference path (paths/reference.py) on the CPU: accuracy, LAPACK conventions, shapes."""

from types import SimpleNamespace

import pytest
import torch

from adaptqr.paths.reference import factor_reference, geqrf_reference
from adaptqr.testing import check_geqrf, generate
from adaptqr.testing.generators import PROFILES

SIZES = [8, 32, 33, 64, 100, 128]


def _batch(n):
    return 32 if n <= 64 else 16


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("case", PROFILES)
def test_profiles_pass_the_bar(case, n):
    A = generate(_batch(n), n, 2, 1000 + n, case, device="cpu")
    A0 = A.clone()
    H, tau = geqrf_reference(A)
    assert torch.equal(A, A0)
    res = check_geqrf(A, H, tau)
    assert res.passes_bar, f"{case} n={n}: {res.summary}"


def _well_conditioned(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(shape, generator=g, dtype=torch.float64)
    n = shape[-1]
    if shape[-2] == n:
        A = A + 2 * n ** 0.5 * torch.eye(n, dtype=torch.float64)  # cond ~ 3
    return A.to(dtype)


@pytest.mark.parametrize("nb", [1, 7, 32, 500])
def test_matches_torch_geqrf_float64(nb):
    A = _well_conditioned((4, 50, 50), torch.float64)
    H, tau = geqrf_reference(A, nb=nb)
    H0, tau0 = torch.geqrf(A)
    torch.testing.assert_close(H, H0, rtol=1e-10, atol=1e-10 * A.abs().max().item())
    torch.testing.assert_close(tau, tau0, rtol=1e-10, atol=1e-12)


def test_matches_torch_geqrf_float32():
    A = _well_conditioned((6, 64, 64), torch.float32, seed=1)
    H, tau = geqrf_reference(A)
    H0, tau0 = torch.geqrf(A)
    d, d0 = H.diagonal(dim1=-2, dim2=-1), H0.diagonal(dim1=-2, dim2=-1)
    assert torch.equal(torch.sign(d), torch.sign(d0))
    torch.testing.assert_close(d, d0, rtol=1e-4, atol=0)
    torch.testing.assert_close(tau, tau0, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(H, H0, rtol=1e-3, atol=1e-3 * A.abs().max().item())


def test_layout_batch_dims_and_input_untouched():
    A = torch.randn(2, 3, 9, 7)
    A0 = A.clone()
    H, tau = geqrf_reference(A)
    assert torch.equal(A, A0)
    assert H.shape == (2, 3, 9, 7) and tau.shape == (2, 3, 7)
    assert H.stride()[-2:] == (1, 9)
    assert tau.is_contiguous()
    H0, tau0 = torch.geqrf(A)
    torch.testing.assert_close(H, H0, rtol=1e-4, atol=1e-4)
    H2, tau2 = geqrf_reference(torch.randn(5, 4))
    assert H2.shape == (5, 4) and tau2.shape == (4,)


@pytest.mark.parametrize("shape", [(3, 40, 24), (3, 24, 40), (2, 1, 5), (2, 5, 1), (1, 1, 1), (2, 33, 70)])
def test_rectangular(shape):
    A = torch.randn(shape, dtype=torch.float64)
    H, tau = geqrf_reference(A, nb=8)
    H0, tau0 = torch.geqrf(A)
    assert tau.shape == (shape[0], min(shape[1:]))
    torch.testing.assert_close(H, H0, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(tau, tau0, rtol=1e-9, atol=1e-12)
    A32 = A.float()
    assert check_geqrf(A32, *geqrf_reference(A32)).passes_bar


def test_zero_columns_give_tau_zero():
    A = torch.randn(3, 12, 12)
    A[:, :, 4] = 0.0
    A[2] = 0.0
    H, tau = geqrf_reference(A, nb=4)
    assert (tau[:, 4] == 0).all()
    assert (tau[2] == 0).all() and (H[2] == 0).all()
    assert check_geqrf(A, H, tau).passes_bar
    # rankdef: every reflector past the rank is the identity (tau = 0, beta = alpha = 0)
    R = generate(4, 32, 0, 5, "rankdef", device="cpu")
    H, tau = geqrf_reference(R)
    assert (tau[:, 24:] == 0).all() and (tau[:, :24] != 0).all()
    assert (torch.tril(H)[:, :, 24:] == 0).all()


def test_sign_conventions():
    # alpha = 0 gives beta = -norm (sign(0) = +); a column already zero below keeps
    # beta = alpha, including a negative alpha.
    A = torch.tensor([[[0.0, 1.0], [3.0, 2.0]], [[-2.0, 1.0], [0.0, 1.0]]], dtype=torch.float64)
    H, tau = geqrf_reference(A)
    assert H[0, 0, 0] == -3.0 and tau[0, 0] == 1.0
    assert H[1, 0, 0] == -2.0 and tau[1, 0] == 0.0


@pytest.mark.parametrize("scale", [1e30, 1e-30])
def test_extreme_scaling(scale):
    A = generate(8, 48, 2, 3, "mixed", device="cpu")
    As = A * scale
    assert torch.isfinite(As).all() and (As != 0).any()
    H, tau = geqrf_reference(As)
    res = check_geqrf(As, H, tau)
    assert res.passes_bar, res.summary
    H1, tau1 = geqrf_reference(A)
    torch.testing.assert_close(tau, tau1, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(H.diagonal(dim1=-2, dim2=-1) / scale, H1.diagonal(dim1=-2, dim2=-1),
                               rtol=1e-4, atol=1e-6)


def test_nan_and_inf_propagate_per_matrix():
    A = torch.randn(3, 20, 20)
    A[0, 5, 7] = float("nan")
    A[1, 2, 0] = float("inf")
    H, tau = geqrf_reference(A, nb=8)
    assert not torch.isfinite(H[0]).all()
    assert not torch.isfinite(H[1]).all()
    # the other matrices of the batch are untouched by the bad ones
    assert torch.isfinite(H[2]).all() and torch.isfinite(tau[2]).all()
    H2, tau2 = geqrf_reference(A[2:])
    torch.testing.assert_close(H[2], H2[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(tau[2], tau2[0], rtol=1e-5, atol=1e-6)


def test_errors_name_dtype_and_shape():
    with pytest.raises(TypeError, match="int64"):
        geqrf_reference(torch.ones(2, 3, 3, dtype=torch.int64))
    with pytest.raises(TypeError, match="complex64"):
        geqrf_reference(torch.ones(2, 3, 3, dtype=torch.complex64))
    H = torch.randn(2, 4, 4)
    with pytest.raises(ValueError, match=r"\(2, 4\)"):
        factor_reference(H, torch.empty(2, 3))
    with pytest.raises(ValueError, match="n_active"):
        factor_reference(H, torch.empty(2, 4),
                         SimpleNamespace(features={"n_active": torch.ones(3, dtype=torch.int32)}))


# ---- the n_active feature -------------------------------------------------------------------

def _column_major(A):
    return A.mT.contiguous().mT.clone()


def test_n_active_semantics():
    B, m, n = 4, 20, 16
    A = torch.randn(B, m, n, dtype=torch.float64)
    n_active = torch.tensor([16, 5, 0, 9], dtype=torch.int32)
    H = _column_major(A)
    tau = torch.empty(B, n, dtype=torch.float64)
    factor_reference(H, tau, SimpleNamespace(routes=None, features={"n_active": n_active}), nb=4)
    full_H, full_tau = torch.geqrf(A)
    torch.testing.assert_close(H[0], full_H[0], rtol=1e-10, atol=1e-10)
    for b in range(1, B):
        k = int(n_active[b])
        assert (tau[b, k:] == 0).all()
        if k == 0:
            assert torch.equal(H[b], A[b])
            continue
        # the first k columns are the QR of A's first k columns ...
        Hk, tk = torch.geqrf(A[b, :, :k])
        torch.testing.assert_close(H[b, :, :k], Hk, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(tau[b, :k], tk, rtol=1e-10, atol=1e-12)
        # ... and every later column is Q1^T applied to A's column, above and below
        Q1 = torch.linalg.householder_product(
            torch.cat([Hk, torch.zeros(m, m - k, dtype=A.dtype)], dim=1),
            torch.cat([tk, torch.zeros(m - k, dtype=A.dtype)]))
        torch.testing.assert_close(H[b, :, k:], Q1.mT @ A[b, :, k:], rtol=1e-10, atol=1e-10)


def test_n_active_on_rankdef_passes_the_check():
    A = generate(8, 64, 0, 9, "rankdef", device="cpu")
    H = _column_major(A)
    tau = torch.empty(8, 64)
    n_active = torch.full((8,), 48, dtype=torch.int32)
    factor_reference(H, tau, SimpleNamespace(routes=None, features={"n_active": n_active}))
    assert check_geqrf(A, H, tau).passes_bar
    H0, tau0 = geqrf_reference(A)
    torch.testing.assert_close(H, H0, rtol=0, atol=0)


def test_info_without_features_is_the_plain_path():
    A = torch.randn(2, 10, 10)
    H = _column_major(A)
    tau = torch.empty(2, 10)
    factor_reference(H, tau, SimpleNamespace(routes=torch.zeros(2, dtype=torch.int32), features={}))
    H0, tau0 = geqrf_reference(A)
    assert torch.equal(H, H0) and torch.equal(tau, tau0)
