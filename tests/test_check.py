"""The qr_v2 acceptance check: passes good factors, catches bad ones, per matrix."""

import pytest
import torch

from adaptqr.testing import CheckResult, check_geqrf, generate
from adaptqr.testing.check import BAR_FACTOR, BAR_ORTH, GATE_FACTOR, GATE_ORTH


def _geqrf(A):
    H, tau = torch.geqrf(A)
    return H.clone(), tau.clone()


def test_constants():
    assert (GATE_FACTOR, GATE_ORTH, BAR_FACTOR, BAR_ORTH) == (20, 100, 10, 50)


@pytest.mark.parametrize("case", ["dense", "mixed", "rankdef", "clustered", "rowscale"])
def test_torch_geqrf_passes(case):
    A = generate(8, 32, 2, 5, case, device="cpu")
    res = check_geqrf(A, *_geqrf(A))
    assert isinstance(res, CheckResult)
    assert res.ok and res.passes_gate and res.passes_bar, res.summary
    assert res.factor.shape == (8,) and res.orth.shape == (8,)
    assert res.factor.dtype == torch.float64
    assert res.worst_factor == float(res.factor.max())
    assert 0 < res.worst_orth < 5  # a real residual was computed, at rounding level
    assert res.summary.startswith("PASS")


def test_input_not_modified():
    A = generate(3, 16, 1, 0, device="cpu")
    H, tau = _geqrf(A)
    copies = [A.clone(), H.clone(), tau.clone()]
    check_geqrf(A, H, tau)
    for x, y in zip((A, H, tau), copies):
        assert torch.equal(x, y)


def test_corrupted_reflector_fails_that_matrix_only():
    A = generate(6, 24, 1, 1, device="cpu")
    H, tau = _geqrf(A)
    # A Householder vector entry: tau no longer equals 2 / (v^T v), so Q is neither the
    # right one nor orthogonal.
    H[2, 10, 3] += 1e-2
    res = check_geqrf(A, H, tau)
    assert not res.passes_gate
    assert res.factor[2] > 100 * GATE_FACTOR
    others = torch.cat([res.factor[:2], res.factor[3:]])
    assert (others < 1).all()
    assert res.orth[2] > GATE_ORTH and (torch.cat([res.orth[:2], res.orth[3:]]) < 5).all()
    assert "FAIL" in res.summary


def test_corrupted_R_fails():
    A = generate(4, 16, 1, 2, device="cpu")
    H, tau = _geqrf(A)
    H[1, 3, 9] *= 1.001
    res = check_geqrf(A, H, tau)
    assert not res.passes_gate and res.factor[1] > GATE_FACTOR
    assert res.worst_orth < 5


def test_corrupted_tau_fails_orthogonality():
    A = generate(4, 16, 1, 3, device="cpu")
    H, tau = _geqrf(A)
    tau[0, 4] *= 1.01
    res = check_geqrf(A, H, tau)
    assert not res.passes_gate
    assert res.orth[0] > GATE_ORTH
    assert (res.orth[1:] < 5).all()


def test_gate_and_bar_differ():
    # Scale a matrix's residual into (bar, gate]: passes the gate, not the bar.
    A = generate(1, 16, 0, 4, device="cpu")
    H, tau = _geqrf(A)
    eps_n = 16 * 2.0 ** -23
    anorm = torch.linalg.matrix_norm(A.double(), ord=1).item()
    H[0, 0, 5] += 15 * eps_n * anorm  # R off by 15 units in one entry: factor ~ 15
    res = check_geqrf(A, H, tau)
    assert BAR_FACTOR < res.worst_factor <= GATE_FACTOR, res.worst_factor
    assert res.passes_gate and not res.passes_bar
    assert res.summary.startswith("GATE-ONLY")


def test_zero_matrix_is_finite():
    A = torch.zeros(3, 8, 8)
    A[1] = torch.randn(8, 8)
    res = check_geqrf(A, *_geqrf(A))
    assert torch.isfinite(res.factor).all() and torch.isfinite(res.orth).all()
    assert res.factor[0] == 0 and res.passes_bar


def test_zero_matrix_with_garbage_r_fails_without_nan():
    A = torch.zeros(1, 4, 4)
    H, tau = _geqrf(A)
    H[0, 0, 1] = 1.0
    res = check_geqrf(A, H, tau)
    assert not res.passes_gate
    assert not torch.isnan(res.factor).any()


def test_chunking_does_not_change_results():
    A = generate(7, 12, 1, 5, "mixed", device="cpu")
    H, tau = _geqrf(A)
    a, b = check_geqrf(A, H, tau), check_geqrf(A, H, tau, chunk=3)
    assert torch.equal(a.factor, b.factor) and torch.equal(a.orth, b.orth)


@pytest.mark.parametrize("bad, msg", [
    (lambda H, tau: (H[:, :, :-1], tau), "H shape"),
    (lambda H, tau: (H, tau[:, :-1]), "tau shape"),
    (lambda H, tau: (H.double(), tau), "H dtype"),
    (lambda H, tau: (H, tau.double()), "tau dtype"),
    (lambda H, tau: (H.index_put((torch.tensor([1]), torch.tensor([2]), torch.tensor([2])),
                                 torch.tensor(float("nan"))), tau), "NaN"),
    (lambda H, tau: (H, tau.index_put((torch.tensor([0]), torch.tensor([0])),
                                      torch.tensor(float("inf")))), "NaN or Inf"),
])
def test_structural_failures(bad, msg):
    A = generate(2, 6, 0, 6, device="cpu")
    H, tau = bad(*_geqrf(A))
    res = check_geqrf(A, H, tau)
    assert not res.ok and not res.passes_gate and not res.passes_bar
    assert msg in res.error and msg in res.summary


def test_float64_and_rectangular():
    for shape in [(3, 10, 6), (3, 6, 10), (2, 1, 5), (2, 5, 1)]:
        A = torch.randn(shape, dtype=torch.float64)
        res = check_geqrf(A, *_geqrf(A))
        assert res.passes_bar, (shape, res.summary)
        assert res.worst_factor < 1e-6  # float64 factors score ~1e-9 in eps32 units


def test_tall_factorization_of_another_matrix_fails():
    """Q orthogonal to A's columns with R = 0 satisfies R = Q^T A; A = Q R must catch it."""
    torch.manual_seed(3)
    m, n = 12, 4
    A = torch.randn(2, m, n, dtype=torch.float64)
    # Reflectors of a matrix whose columns are orthogonal to A's, and R = 0.
    basis, _ = torch.linalg.qr(torch.cat([A, torch.randn(2, m, n, dtype=torch.float64)], dim=2), mode="complete")
    other = basis[:, :, n:2 * n]
    H, tau = torch.geqrf(other)
    H = H.tril(-1)  # R = 0
    res = check_geqrf(A.float(), H.float(), tau.float())
    assert not res.passes_gate and res.worst_factor > 1e3
    ok = check_geqrf(A.float(), *torch.geqrf(A.float()))
    assert ok.passes_bar
