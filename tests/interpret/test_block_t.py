"""Far updates by blocks of panels with one merged T (EXPERIMENTS.md B1, the ``far_panels``
knob), under the Triton interpreter.

- ``block_s_kernel`` (couplings over several row slices) then ``block_t_kernel`` against
  larft's T of the whole block in float64, with a matrix whose reflectors stop inside the
  block (``n_active``) and NaN in the T slots its panels never wrote, and a ragged block
  past the last column;
- the Householder path with blocks of 2 and 4 panels against one panel a pass: the same
  factorization to rounding, on streamed, resident and row-split updates, with ``n_active``,
  at the GPU's widths, and on the FP16 route (the FP32-routed matrix to rounding, the
  FP16-routed one to float16's; B2's float16 V copy bit for bit B1).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from _support import Info  # tests/interpret/ is on sys.path

pytestmark = pytest.mark.interpret


def _larft(V: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """Forward column-wise T of ``Q = I - V T V^T`` (LAPACK's dlarft), float64."""
    k = V.shape[1]
    T = torch.zeros(k, k, dtype=torch.float64)
    for i in range(k):
        T[:i, i] = -tau[i] * (T[:i, :i] @ (V[:, :i].T @ V[:, i]))
        T[i, i] = tau[i]
    return T


def _reflectors(H: torch.Tensor, k0: int, width: int, na: int) -> torch.Tensor:
    """The unit lower trapezoidal V of columns ``[k0, k0 + width)`` of one matrix, zero past
    ``na`` or ``n``."""
    m, n = H.shape
    V = torch.zeros(m, width, dtype=torch.float64)
    for j in range(width):
        c = k0 + j
        if c < min(na, n):
            V[c, j] = 1.0
            V[c + 1:, j] = H[c + 1:, c].double()
    return V


def _taus(tau: torch.Tensor, k0: int, width: int, na: int) -> torch.Tensor:
    """``tau`` of columns ``[k0, k0 + width)``, zero past ``na`` or ``n``, float64."""
    t = torch.zeros(width, dtype=torch.float64)
    for j in range(width):
        if k0 + j < min(na, tau.shape[0]):
            t[j] = float(tau[k0 + j])
    return t


@pytest.mark.parametrize("q", [2, 4])
def test_block_t_kernel_matches_larft(q):
    from adaptqr.paths.kernels.block_t import N_COUPLINGS, block_s_kernel, block_t_kernel
    from adaptqr.paths.schedules import DEFAULT_PREC

    torch.manual_seed(q)
    B, m, n, nb = 3, 80, 72, 16
    H, tau = torch.geqrf(torch.randn(B, m, n))
    na = torch.tensor([n, 2 * nb + 5, 0], dtype=torch.int32)  # the second stops in a block
    n_tw = -(-n // nb)
    TW = torch.full((B, n_tw, nb, nb), float("nan"))
    for b in range(B):
        for p in range(n_tw):
            k = p * nb
            if k < int(na[b]):  # a panel past n_active never writes its slot
                TW[b, p] = _larft(_reflectors(H[b], k, nb, int(na[b])),
                                  _taus(tau[b], k, nb, int(na[b]))).float()
    Ht = H.mT.contiguous()
    FB = q * nb
    n_g = -(-n // FB)
    TB = torch.full((B, n_g, FB, FB), float("nan"))
    S = torch.empty(B, N_COUPLINGS, nb, nb)
    for g in range(n_g):
        S.zero_()
        per = 32  # row slices of 32: the couplings summed by several programs (atomics)
        block_s_kernel[(B, -(-(m - g * FB) // per))](Ht, S, Ht, Ht, na, g * FB, m, n, per,
                                                     HAS_NA=True, NB=nb, Q=q, CH=16,
                                                     PREC=DEFAULT_PREC)
        block_t_kernel[(B, q)](TW, S, TB, na, g * FB, n, n_tw, n_g, HAS_NA=True, NB=nb, Q=q,
                               PREC=DEFAULT_PREC)
    assert torch.isfinite(TB).all()
    for b in range(B):
        for g in range(n_g):
            k0 = g * FB
            ref = _larft(_reflectors(H[b], k0, FB, int(na[b])), _taus(tau[b], k0, FB, int(na[b])))
            err = float((TB[b, g].double() - ref).abs().max())
            assert err <= 1e-5 * max(1.0, float(ref.abs().max())), (b, g, err)


def _factor(A, s, features=None):
    from adaptqr.paths.householder import factor_householder

    H = A.mT.contiguous().mT.clone()
    tau = A.new_empty(A.shape[0], A.shape[2])
    factor_householder(H, tau, Info(features or {}), schedule=s)
    return H, tau


def _rel(X, Y):
    return float((X - Y).abs().max() / Y.abs().max())


@pytest.mark.parametrize("q", [2, 4])
@pytest.mark.parametrize("bn", [16, 32])  # resident / streamed column tiles (nb 16, m <= 128)
def test_blocks_match_one_panel_a_pass(q, bn):
    from adaptqr.paths import schedules
    from adaptqr.testing import check_geqrf

    torch.manual_seed(10 + q)
    B, m, n = 3, 112, 100  # ragged: the last block is short
    A = torch.randn(B, m, n)
    na = torch.tensor([n, 41, 0], dtype=torch.int32)
    f = {"n_active": na, "n_nonzero": torch.full((B,), n, dtype=torch.int32)}
    s = schedules.Schedule(False, 16, 1, bn, 16, far_panels=1)
    for feats in (None, f):
        H1, t1 = _factor(A, s, feats)
        H2, t2 = _factor(A, dataclasses.replace(s, far_panels=q), feats)
        assert torch.isfinite(H2).all() and torch.isfinite(t2).all()
        assert not torch.equal(H2, H1)  # the blocks ran: other sums, other roundings
        assert _rel(H2, H1) < 1e-5 and float((t2 - t1).abs().max()) < 1e-5
        if feats is None:
            assert check_geqrf(A, H2, t2).passes_bar


def test_blocks_on_the_row_split_update(monkeypatch):
    from adaptqr.paths import schedules

    monkeypatch.setattr(schedules, "TRAILING_SPLIT_MIN_ROWS", 16)
    torch.manual_seed(3)
    B, m, n = 2, 160, 160
    A = torch.randn(B, m, n)
    f = {"n_active": torch.tensor([n, 70], dtype=torch.int32),
         "n_nonzero": torch.full((B,), n, dtype=torch.int32)}
    s = schedules.Schedule(False, 16, 1, 32, 16, far_panels=1)
    H1, t1 = _factor(A, s, f)
    H2, t2 = _factor(A, dataclasses.replace(s, far_panels=4), f)
    assert torch.isfinite(H2).all() and not torch.equal(H2, H1)
    assert _rel(H2, H1) < 1e-5 and float((t2 - t1).abs().max()) < 1e-5


@pytest.mark.parametrize("bn,split", [(16, False), (32, False), (32, True)])
def test_blocks_on_the_fp16_route(bn, split, monkeypatch):
    import math

    from adaptqr.paths import schedules
    from adaptqr.testing import check_geqrf

    if split:  # the row-split W / U update (FP16 route: _w_rows_f16 / _u_rows_f16)
        monkeypatch.setattr(schedules, "TRAILING_SPLIT_MIN_ROWS", 16)
    torch.manual_seed(5)
    B, m, n = 2, 96, 96
    A = torch.randn(B, m, n)
    sc = 2.0 ** math.floor(math.log2(16384.0 / float(A[0].double().norm(dim=0).max())))
    f = {"n_active": torch.full((B,), n, dtype=torch.int32),
         "n_nonzero": torch.full((B,), n, dtype=torch.int32),
         "fp16_scale": torch.tensor([sc, 0.0])}
    s = schedules.Schedule(False, 16, 1, bn, 16, far_panels=1, fp16_group=1)
    H0, t0 = _factor(A, dataclasses.replace(s, fp16=False))
    H1, t1 = _factor(A, s, f)  # the FP16 route one panel a pass
    H2, t2 = _factor(A, dataclasses.replace(s, far_panels=4), f)
    assert torch.isfinite(H2).all() and torch.isfinite(t2).all()
    assert _rel(H2[1], H0[1]) < 1e-5  # the FP32-routed matrix
    d16 = _rel(H2[0], H0[0])
    assert 1e-6 < d16 < 1e-2, d16  # float16's rounding, not more
    # n = 96 is below the route's FP16_MIN_N (the gate is tight there: test_fp16.py): a block
    # rounds the trailing matrix once a block, so no worse than one panel a pass, where a
    # wrong update (a lost column, a stale float16 tile) would be off by far.
    one, block = (check_geqrf(A[:1], H[:1], t[:1]).worst_factor for H, t in ((H1, t1), (H2, t2)))
    assert block <= 1.25 * one + 5, (block, one)
    # B2: the far update's float16 V from the copy the coupling kernel writes: the same
    # values as converting the float32 V in every tile, so the same result bit for bit.
    H3, t3 = _factor(A, dataclasses.replace(s, far_panels=4, far_v16=True), f)
    assert torch.equal(H3, H2) and torch.equal(t3, t2)


def test_blocks_at_the_gpu_width():
    # The widths the knob gives on the GPU (n > 384: panels of 32, blocks of 64 and 128,
    # the 128-wide trailing kernel at its own column tile and warps).
    from adaptqr.paths import schedules
    from adaptqr.testing import check_geqrf, generate

    A = generate(2, 300, 2, 5, "dense", "cpu")
    s = dataclasses.replace(schedules.schedule_for(300, 300), nb=32, bn=64, bm=64, far_panels=1)
    H1, t1 = _factor(A, s)
    for q in (2, 4):
        H2, t2 = _factor(A, dataclasses.replace(s, far_panels=q))
        assert not torch.equal(H2, H1) and _rel(H2, H1) < 1e-5
        assert check_geqrf(A, H2, t2).passes_bar
