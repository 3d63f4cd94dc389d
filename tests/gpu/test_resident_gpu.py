"""The resident CUDA C QR on the GPU (paths/kernels/resident_cuda.py, EXPERIMENTS.md H26):
every matrix at the half gate through the public call, against the blocked schedule on
the same input; degenerate columns, extreme scales, ``n_active``; graph capture."""

from __future__ import annotations

import dataclasses

import pytest
import torch

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA device", allow_module_level=True)

import adaptqr  # noqa: E402
from adaptqr import config  # noqa: E402
from adaptqr.paths import householder, schedules  # noqa: E402
from adaptqr.paths.kernels import resident_cuda  # noqa: E402
from adaptqr.testing import check_geqrf  # noqa: E402

BAR_FACTOR, BAR_ORTH = 10.0, 50.0


def _needs_kernel():
    if not resident_cuda.available():
        pytest.skip("the resident CUDA C QR needs cupy")


class _Info:
    def __init__(self, features=None):
        self.routes = None
        self.features = features or {}


def _factor(A, info=None, **fields):
    B, m, n = A.shape
    H = torch.empty_strided((B, m, n), (m * n, 1, m), dtype=A.dtype, device=A.device)
    H.copy_(A)
    tau = torch.empty((B, n), dtype=A.dtype, device=A.device)
    s = dataclasses.replace(schedules.schedule_for(m, n), **fields)
    householder.factor_householder(H, tau, info or _Info(), schedule=s)
    return H, tau


def _bar(A, H, tau):
    r = check_geqrf(A, H, tau)
    assert r.worst_factor <= BAR_FACTOR and r.worst_orth <= BAR_ORTH, r.summary()


@pytest.mark.parametrize("B,m,n", [(40, 176, 176), (7, 100, 70), (3, 256, 128), (132, 130, 96),
                                   (5, 190, 150)])
def test_resident_passes_and_matches_blocked(B, m, n):
    _needs_kernel()
    g = torch.Generator(device="cuda").manual_seed(B * m + n)
    A = torch.randn(B, m, n, device="cuda", generator=g)
    H, tau = _factor(A, resident_max_batch=1024)
    _bar(A, H, tau)
    H0, t0 = _factor(A, resident_max_batch=0)
    assert float((H - H0).norm() / H0.norm()) < 1e-4
    assert float((tau - t0).abs().max()) < 1e-4


def test_resident_degenerate_columns_scales_and_n_active():
    _needs_kernel()
    n = 176
    A = torch.randn(6, n, n, device="cuda")
    A[0, :, 5] = 0
    A[1, :, 7] = A[1, :, 6]
    A[2, :, 40:60] *= 1e-30
    A[3, :, 100:] *= 1e-7
    A[4] *= 1e-38          # subnormal-adjacent: the prescale brings it back
    A[5] *= 1e36           # huge: w = v^T a would overflow unscaled
    na = torch.tensor([n, n, n, 103, n, n], dtype=torch.int32, device="cuda")
    e = torch.tensor([0, 0, 0, 0, 126, -120], dtype=torch.int32, device="cuda")
    H, tau = _factor(A, _Info({"n_active": na, "prescale": e}), resident_max_batch=132)
    assert torch.isfinite(H).all() and (tau[3, 103:] == 0).all()
    keep = [0, 1, 2, 4, 5]  # matrix 3: columns past n_active left as Q1^T A_tail
    _bar(A[keep], H[keep], tau[keep])


def test_public_call_takes_it_and_logs_it():
    _needs_kernel()
    A = torch.randn(40, 176, 176, device="cuda")
    A[3, :, 100:] = 0               # rank deficient: the probe's n_active
    A[5] *= 1e-30                   # the probe's prescale
    A[6, :, 3] = float("nan")
    A0 = A.clone()
    with config.experiment(resident_max_batch=132):
        H, tau = adaptqr.geqrf(A)
        kinds = householder.panel_kinds(40, 176, 176, A.device)
    assert torch.allclose(A, A0, rtol=0.0, atol=0.0, equal_nan=True)  # the input untouched
    assert kinds == (176, [householder.PANEL_RESIDENT_CUDA])
    ok = [i for i in range(40) if i != 6]
    _bar(A[ok], H[ok], tau[ok])
    assert torch.isnan(H[6]).any()
    ref, _ = torch.geqrf(A[ok])
    torch.testing.assert_close(H[ok].diagonal(dim1=-2, dim2=-1).abs(),
                               ref.diagonal(dim1=-2, dim2=-1).abs(), rtol=1e-3, atol=1e-3)


def test_resident_captures_in_a_graph():
    _needs_kernel()
    A = torch.randn(8, 160, 160, device="cuda")
    H = torch.empty_strided(A.shape, (160 * 160, 1, 160), device="cuda")
    tau = torch.empty(8, 160, device="cuda")
    s = dataclasses.replace(schedules.schedule_for(160, 160), resident_max_batch=132)
    H.copy_(A)
    householder.factor_householder(H, tau, _Info(), schedule=s)  # compiles outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        H.copy_(A)
        householder.factor_householder(H, tau, _Info(), schedule=s)
    A.copy_(torch.randn_like(A))
    graph.replay()
    torch.cuda.synchronize()
    _bar(A, H, tau)
