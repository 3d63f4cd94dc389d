"""The householder path with its rest update in cuBLAS-shaped products (EXPERIMENTS.md T5,
schedule knob ``blas_group``) under the Triton interpreter: panels and in-group updates in
the Triton kernels, each group's update of the later columns by paths/blas_update.py."""

from __future__ import annotations

import pytest
from _support import Info  # tests/interpret/ is on sys.path

pytestmark = pytest.mark.interpret


def _run(A, s, na=None):
    import torch

    from adaptqr.paths.householder import factor_householder

    B, m, n = A.shape
    H = A.mT.contiguous().mT.clone()
    tau = A.new_empty(B, n)
    info = None
    if na is not None:
        info = Info({"n_active": na, "n_nonzero": torch.full((B,), n, dtype=torch.int32)})
    factor_householder(H, tau, info, schedule=s)
    return H, tau


@pytest.mark.parametrize("group", [2, 4])
def test_cublas_rest_update_gives_the_kernels_factorization(monkeypatch, group):
    import dataclasses

    import torch

    import adaptqr.paths.householder as hh
    from adaptqr.paths import schedules
    from adaptqr.testing import check_geqrf

    calls = []
    real = hh.rest_update
    monkeypatch.setattr(hh, "rest_update", lambda *a: calls.append(a[3:5]) or real(*a))
    torch.manual_seed(5)
    A = torch.randn(2, 112, 96)
    base = schedules.Schedule(False, 16, group, 32, 16, small_n_nb=0, lookahead=0)
    H0, t0 = _run(A, base)
    H1, t1 = _run(A, dataclasses.replace(base, group=1, blas_group=group))
    step = 16 * group
    assert calls == [(k0, group) for k0 in range(0, 96 - step, step)]
    torch.testing.assert_close(H1, H0, rtol=0, atol=2e-5 * float(H0.abs().max()))
    torch.testing.assert_close(t1, t0, rtol=0, atol=2e-5)
    assert check_geqrf(A, H1, t1).passes_bar


def test_cublas_rest_update_with_n_active():
    # Matrix 1 has rank 40: its panels from column 48 write tau = 0 and no T.
    import dataclasses

    import torch

    from adaptqr.paths import schedules
    from adaptqr.testing import check_geqrf

    torch.manual_seed(6)
    A = torch.randn(2, 112, 96)
    A[1, :, 40:] = 0
    na = torch.tensor([96, 40], dtype=torch.int32)
    base = schedules.Schedule(False, 16, 2, 32, 16, small_n_nb=0, lookahead=0)
    H0, t0 = _run(A, base, na)
    H1, t1 = _run(A, dataclasses.replace(base, group=1, blas_group=2), na)
    assert torch.isfinite(H1).all() and torch.equal(t1[1, 40:], torch.zeros(56))
    torch.testing.assert_close(H1, H0, rtol=0, atol=2e-5 * float(H0.abs().max()))
    assert check_geqrf(A, H1, t1).passes_bar
