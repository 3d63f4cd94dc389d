"""The FP32 route's negligible tail updated once at the end (``Schedule.defer_tail``,
EXPERIMENTS.md T12), under the Triton interpreter: the group updates leave the columns from
``n_active`` rounded up to a panel out, ``deferred_tail_kernel`` applies every panel to them
last. The columns before are the same bits as without it, the tail the same values."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from _support import Info  # tests/interpret/ is on sys.path

from adaptqr.detectors import route
from adaptqr.paths import householder, schedules
from adaptqr.paths.lanes import OneLane
from adaptqr.testing import check_geqrf

pytestmark = pytest.mark.interpret

EPS32 = torch.finfo(torch.float32).eps
# Streamed tiles and groups of two panels; one panel a group with the row-split W / U
# kernels (TRAILING_SPLIT_MIN_ROWS lowered below).
GROUPED = schedules.Schedule(False, 16, 2, 16, 16, small_n_nb=0)
SPLIT = schedules.Schedule(False, 16, 1, 32, 16, small_n_nb=0)


def _batch(n: int) -> torch.Tensor:
    """Matrix 0 clustered (columns from 37 at 4 eps32: n_active 37, nothing exactly zero),
    1 dense, 2 with a negligible tail from 30 and zero columns from 70."""
    g = torch.Generator().manual_seed(n)
    A = torch.randn(3, n, n, generator=g)
    A[0, :, 37:] *= 4 * EPS32
    A[2, :, 30:] *= 4 * EPS32
    A[2, :, 70:] = 0
    return A


def _run(A, s, feats, lookahead=False):
    H = A.mT.contiguous().mT.clone()
    tau = A.new_empty(A.shape[0], A.shape[2])
    real = householder._lookahead_lanes
    if lookahead:  # one group of look-ahead, its work in issue order on one stream
        householder._lookahead_lanes = lambda f, group: OneLane()
    try:
        householder.factor_householder(H, tau, Info(feats), schedule=s)
    finally:
        householder._lookahead_lanes = real
    return H, tau


@pytest.mark.parametrize("sched,lookahead", [(GROUPED, False), (GROUPED, True), (SPLIT, False)],
                         ids=["grouped", "lookahead", "row-split"])
def test_deferred_tail_equals_the_group_updates(sched, lookahead, monkeypatch):
    if sched is SPLIT:
        monkeypatch.setattr(schedules, "TRAILING_SPLIT_MIN_ROWS", 16)
    n = 96
    A = _batch(n)
    feats = route(A.mT.contiguous().mT, backend="torch")[1]
    na, nz = feats["n_active"].tolist(), feats["n_nonzero"].tolist()
    assert na == [37, n, 30] and nz == [n, n, 70]
    H0, t0 = _run(A, dataclasses.replace(sched, defer_tail=False), feats, lookahead)
    H1, t1 = _run(A, dataclasses.replace(sched, defer_tail=True), feats, lookahead)
    assert torch.equal(t0, t1)
    assert torch.equal(H0[1], H1[1])
    for b, end in ((0, 48), (2, 32)):
        # Before the deferred columns: the same operations on the same columns.
        assert torch.equal(H0[b, :, :end], H1[b, :, :end])
        # The deferred ones: Q1^T A_tail both ways, to the tail precision's rounding (one
        # TF32 pass, schedules.TAIL_PREC; A_tail itself is off by O(1) of its size).
        tail = H0[b, :, end:]
        assert (H1[b, :, end:] - tail).abs().max() <= 2e-3 * tail.abs().max()
    assert check_geqrf(A, H1, t1).passes_bar


def test_pass_ends_keeps_the_fp16_route_and_short_tails():
    i32 = dict(dtype=torch.int32)
    na = torch.tensor([0, 17, 32, 96], **i32)
    nz = torch.tensor([96, 20, 96, 96], **i32)
    assert householder.pass_ends(na, nz, None, 16).tolist() == [0, 20, 32, 96]
    sc = torch.tensor([0.0, 0.0, 4.0, 0.0])
    assert householder.pass_ends(na, nz, sc, 16).tolist() == [0, 20, 96, 96]
