"""GPU tests of the FP16 route (issue 8; docs/NUMERICS.md "FP16 route").

- the route kernel's scales are the torch reference's (classify.fp16_scales), per matrix;
- which matrices take the route: dense with colscale yes, rowscale / band / clustered /
  rankdef cond=0 and small n no, NaN no; rankdef with colscale (an exactly-zero column
  suffix: routes composed) yes, its zero columns as geqrf gives them;
- the public call on a mixed batch passes the bar on every matrix, and each matrix's
  residual is at the level of the route it was sent to (float16 storage shows);
- ``ADAPTQR_FP16=0`` puts every matrix on the FP32 route; the decisions log says which matrix took
  which precision;
- adversarial scaling (1e25, 1e-25, 1e-35): finite, under the bar, the scale a power of two;
- explain() says which matrix takes which precision (not run on the device yet: session 7).
"""

from __future__ import annotations

import dataclasses
import importlib

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

import adaptqr  # noqa: E402
from adaptqr import log  # noqa: E402
from adaptqr.detectors import route  # noqa: E402
from adaptqr.paths import schedules  # noqa: E402
from adaptqr.paths.householder import factor_householder  # noqa: E402
from adaptqr.testing import check_geqrf, deterministic, generate  # noqa: E402

C = importlib.import_module("adaptqr.detectors.classify")  # the package exports classify()
# Scaled factor residual between the two routes' levels (FP32 ~0.01, FP16 ~1-4; N3).
FP32_LEVEL = 0.2


class _Info:
    def __init__(self, features):
        self.features = features


def _colmajor(B, m, n):
    return torch.empty_strided((B, m, n), (m * n, 1, m), device="cuda")


def _routed(A):
    B, m, n = A.shape
    H = _colmajor(B, m, n)
    routes, f = route(H, src=A)
    return H, routes, f


def _profiles(n, seed):
    """One batch: 4 dense cond=2, then rowscale, band, clustered, rankdef, dense cond=0."""
    parts = [generate(4, n, 2, seed, "dense")]
    for case in ("rowscale", "band", "clustered", "rankdef"):
        parts.append(generate(1, n, 0, seed + 1, case))
    parts.append(generate(1, n, 0, seed + 2, "dense"))
    return torch.cat(parts)


def test_route_kernel_scales_match_the_reference():
    A = _profiles(512, 61)
    H, routes, f = _routed(A)
    a = A.double()
    ref = C.fp16_scales(a.abs().sum(1).float(), a.norm(dim=1).float(), routes, f["n_active"],
                        f["n_nonzero"], 512)
    assert torch.equal(f["fp16_scale"], ref), (f["fp16_scale"], ref)
    got = (f["fp16_scale"] > 0).tolist()
    assert got == [True] * 4 + [False] * 5, got
    sc = f["fp16_scale"][:4]
    assert torch.equal(torch.exp2(torch.log2(sc).round()), sc)  # powers of two
    n2max = A[:4].double().norm(dim=1).amax(-1)
    assert bool(((sc.double() * n2max <= C.FP16_TARGET) & (sc.double() * n2max > C.FP16_TARGET / 2)).all())


def test_small_n_and_nonfinite_stay_fp32():
    A = generate(8, 352, 2, 62, "dense")
    assert "fp16_scale" not in _routed(A)[2]  # below FP16_MIN_N: no route, no copy
    A = generate(3, 512, 2, 63, "dense")
    A[1, 7, 9] = float("nan")
    assert (_routed(A)[2]["fp16_scale"] > 0).tolist() == [True, False, True]


def test_fp16_matrices_pass_and_fp32_ones_are_unchanged():
    A = _profiles(512, 64)
    B, m, n = A.shape
    H, routes, f = _routed(A)
    tau = torch.empty(B, n, device="cuda")
    factor_householder(H, tau, _Info(f))
    H32 = _colmajor(B, m, n)
    H32.copy_(A)
    tau32 = torch.empty(B, n, device="cuda")
    base = schedules.schedule_for(m, n)
    factor_householder(H32, tau32, _Info(f), schedule=dataclasses.replace(base, fp16=False))
    r, r32 = check_geqrf(A, H, tau), check_geqrf(A, H32, tau32)
    assert r.passes_bar and r32.passes_bar, (r.summary(), r32.summary())
    _routes_taken(r.factor, r32.factor, f["fp16_scale"] > 0)


def _routes_taken(factor, factor32, on):
    """Per-matrix scaled factor residuals: the FP16 route's float16 storage leaves about 1-4
    (EXPERIMENTS.md N3), the FP32 route's about 0.01. So a matrix the route sent to FP32 that
    still went through float16 storage, or an FP16 one that did not, shows."""
    factor, factor32, on = factor.cpu(), factor32.cpu(), on.cpu()
    assert bool((factor32 <= FP32_LEVEL).all()), factor32
    assert bool((factor[~on] <= FP32_LEVEL).all()), factor[~on]
    assert bool((factor[on] > FP32_LEVEL).all()), factor[on]


@pytest.mark.parametrize("n,batch", [(512, 64), (1024, 8), (768, 6)])
def test_public_call_with_and_without_the_route(n, batch, monkeypatch):
    A = generate(batch, n, 2, 65 + n, "mixed")
    log.clear_decisions()
    log.enable()
    try:
        H, tau = adaptqr.geqrf(A)
        rec = log.decisions(1)[-1]
        monkeypatch.setenv("ADAPTQR_FP16", "0")
        H0, tau0 = adaptqr.geqrf(A)
        rec0 = log.decisions(1)[-1]
    finally:
        log.disable()
    r, r0 = check_geqrf(A, H, tau), check_geqrf(A, H0, tau0)
    assert r.passes_bar and r0.passes_bar, (r.summary(), r0.summary())
    assert rec["precision_counts"]["fp16"] > 0, rec
    assert rec0["precision_counts"] == {"fp32": batch, "fp16": 0}, rec0
    _routes_taken(r.factor, r0.factor, torch.tensor([p == "fp16" for p in rec["precision"]]))


@pytest.mark.parametrize("n,batch", [(512, 16), (1024, 4), (1536, 8), (2048, 8)])
def test_exactly_zero_suffix_takes_the_route(n, batch, monkeypatch):
    # Routes composed (EXPERIMENTS.md N31): rankdef cond=2 (its columns
    # from 3n/4 on exactly zero: n_active == n_nonzero) takes the FP16 route, passes the bar
    # at float16 storage's level, and its zero columns come out as geqrf's (tau 0, H zero
    # there). 1536 and 2048 (row-split updates, tiles of 128 whose origin moves a panel at
    # a time) gave NaN past 3n/4 in run 0717, before the tiles stopped at n_nonzero.
    A = generate(batch, n, 2, 67 + n, "rankdef")
    f = _routed(A)[2]
    H, tau = adaptqr.geqrf(A)
    assert bool((f["fp16_scale"] > 0).all()) and bool((f["n_active"] == 3 * n // 4).all()), f
    assert torch.equal(f["n_active"], f["n_nonzero"]), f
    monkeypatch.setenv("ADAPTQR_FP16", "0")
    H0, tau0 = adaptqr.geqrf(A)
    r, r0 = check_geqrf(A, H, tau), check_geqrf(A, H0, tau0)
    assert r.passes_bar and r0.passes_bar, (r.summary(), r0.summary())
    _routes_taken(r.factor, r0.factor, torch.ones(batch, dtype=torch.bool))
    z = 3 * n // 4
    assert bool((H[:, :, z:] == 0).all()) and bool((tau[:, z:] == 0).all())


@pytest.mark.parametrize("scale,routed", [(1e25, True), (1e-25, True), (1e-35, False)])
def test_adversarial_scaling(scale, routed):
    A = generate(8, 512, 2, 66, "dense") * scale
    H, routes, f = _routed(A)
    assert bool((f["fp16_scale"] > 0).all()) == routed, f["fp16_scale"]
    tau = torch.empty(8, 512, device="cuda")
    factor_householder(H, tau, _Info(f))
    assert bool(torch.isfinite(H).all() and torch.isfinite(tau).all())
    r = check_geqrf(A, H, tau)
    assert r.passes_bar, r.summary()


def test_explain_shows_the_precision_route():
    A = _profiles(512, 67)
    ex = adaptqr.explain(A)
    assert ex.precision == ["fp16"] * 4 + ["fp32"] * 5, ex.precision
    assert "4 matrices in float16" in str(ex)


@pytest.mark.variant
@pytest.mark.parametrize("lanes", [1, 3])
@pytest.mark.parametrize("n,dense", [(2048, 1), (4096, 1), (768, 5)])
def test_route_lanes_match(n, dense, lanes):
    # EXPERIMENTS.md N19: the FP32 route's update launches on a side stream, in graph
    # captures (1), or for row-split updates in captures (3, the default). A
    # batch of both routes (dense matrices on FP16, a rankdef one on FP32): row-split
    # updates at 2048 and 4096, tile updates at 768; eagerly and through the graph cache's
    # capture and replay. Every matrix at the
    # bar, each route taken, and the side stream's matrix the same as on one stream (to the
    # row-split update's atomics: 3e-7 in run 0830). The FP16 route's matrices are not
    # compared: one stream against itself differs there by up to 8e-2 (run 0830,
    # docs/NUMERICS.md).
    from adaptqr import config

    A = torch.cat([generate(dense, n, 2, 68 + n, "dense"), generate(1, n, 0, 69 + n, "rankdef")])
    with config.experiment(route_lanes=0):
        H0, t0 = adaptqr.geqrf(A)
    log.clear_decisions()
    log.enable()
    try:
        with config.experiment(route_lanes=lanes):
            for _ in range(3):  # the third call replays a captured graph
                H, tau = adaptqr.geqrf(A)
        rec = log.decisions(1)[-1]
    finally:
        log.disable()
    assert rec["precision_counts"] == {"fp16": dense, "fp32": 1}, rec
    r = check_geqrf(A, H, tau)
    assert r.passes_bar, r.summary()
    assert float((H[-1] - H0[-1]).norm() / H0[-1].norm()) < 1e-5
    assert float((tau[-1] - t0[-1]).abs().max()) < 1e-4


@pytest.mark.variant
@pytest.mark.parametrize("n,dense", [(2048, 1), (4096, 1)])
def test_w_pingpong_in_a_graph(n, dense):
    # EXPERIMENTS.md T8: with both routes' row-split updates on two lanes of a captured
    # graph, the W kernels zeroing the next update's W (the side lane's launch does it; the
    # default): replays at the bar, the FP32-routed matrix as with a zeroing launch (to the
    # atomics' order).
    from adaptqr import config

    A = torch.cat([generate(dense, n, 2, 70 + n, "dense"), generate(1, n, 0, 71 + n, "rankdef")])
    with config.experiment(w_pingpong=0):
        H0, t0 = adaptqr.geqrf(A)
    for _ in range(4):  # the third and fourth calls replay the captured graph
        H, tau = adaptqr.geqrf(A)
    r = check_geqrf(A, H, tau)
    assert r.passes_bar, r.summary()
    assert float((H[-1] - H0[-1]).norm() / H0[-1].norm()) < 1e-5
    assert float((tau[-1] - t0[-1]).abs().max()) < 1e-4


def _both_routes(n, dense, seed):
    """``dense`` matrices cond 2 (the FP16 route), then one rankdef (the FP32 route)."""
    return torch.cat([generate(dense, n, 2, seed + n, "dense"),
                      generate(1, n, 0, seed + 1 + n, "rankdef")])


def _under_knobs(A, same=None, **knobs):
    """Three calls of ``A`` under the experiment ``knobs`` (the third replays a captured
    graph where one is taken), every matrix of each at the bar, and each ``(H, tau)``
    equal to ``same``'s bit for bit where given: the last call's ``(H, tau)`` and its
    decisions record."""
    from adaptqr import config

    log.clear_decisions()
    log.enable()
    try:
        with config.experiment(**knobs):
            for _ in range(3):
                H, tau = adaptqr.geqrf(A)
                r = check_geqrf(A, H, tau)
                assert r.passes_bar, r.summary()
                if same is not None:
                    assert torch.equal(H, same[0]) and torch.equal(tau, same[1])
        return H, tau, log.decisions(1)[-1]
    finally:
        log.disable()


def _fp32_matrix_as_before(H, tau, H0, t0, tol_h, tol_tau):
    """The batch's last matrix (``_both_routes``' rankdef, FP32-routed) within ``tol_h``
    (relative, in norm) and ``tol_tau`` (taus) of the default's."""
    assert float((H[-1] - H0[-1]).norm() / H0[-1].norm()) < tol_h
    assert float((tau[-1] - t0[-1]).abs().max()) < tol_tau


@pytest.mark.variant
@pytest.mark.parametrize("n,dense", [(512, 64), (1024, 24), (768, 5)])
def test_fp16_fit_matches(n, dense):
    # EXPERIMENTS.md N21: the FP16-only update's column tile fitted to its columns (the
    # look-ahead's 64-column update in 64-wide tiles), against the knob off: each route
    # taken, the FP32-routed matrix as before (its launch is not touched). The FP16-routed
    # ones are not compared entry by entry: a tile's float16 Y scale is the tile's, so
    # another tile width rounds Y otherwise (docs/NUMERICS.md).
    A = _both_routes(n, dense, 72)
    H0, t0 = adaptqr.geqrf(A)
    H, tau, rec = _under_knobs(A, fp16_fit=int(not schedules.FP16_FIT))
    assert rec["precision_counts"] == {"fp16": dense, "fp32": 1}, rec
    _fp32_matrix_as_before(H, tau, H0, t0, 1e-5, 1e-4)


@pytest.mark.variant
@pytest.mark.parametrize("n,dense", [(512, 64), (1024, 24), (768, 5)])
def test_fp16_v16_gives_the_same_bits(n, dense):
    # EXPERIMENTS.md N23: the rest updates' reflectors from a float16 copy made once a pair
    # are the values the pair kernel rounds itself: under the deterministic mode (no
    # row-split sums) every matrix's bits are the same.
    A = _both_routes(n, dense, 78)
    with deterministic():
        _under_knobs(A, same=adaptqr.geqrf(A), fp16_v16=int(not schedules.FP16_V16))


@pytest.mark.variant
@pytest.mark.parametrize("rows", [0, 64])
@pytest.mark.parametrize("n,dense", [(512, 64), (1024, 24), (768, 5)])
def test_pair_split_matches(n, dense, rows):
    # EXPERIMENTS.md N25: the pair rest update as a Y launch and an update launch over row
    # slices (the default for these batches: schedules.PAIR_SPLIT_MAX_PROGRAMS), against
    # the pair kernel (rows 0) and other slices (64). Each route taken, every matrix at the
    # bar, the FP32-routed one bit for bit (its launch is not touched; deterministic mode:
    # no row-split sums). The FP16-routed ones are not compared entry by entry: the split's
    # tiles are narrower (PAIR_SPLIT_BN), and a tile's float16 Y scale is the tile's.
    A = _both_routes(n, dense, 82)
    with deterministic():
        H0, t0 = adaptqr.geqrf(A)
        H, tau, rec = _under_knobs(A, pair_split=rows)
    assert rec["precision_counts"] == {"fp16": dense, "fp32": 1}, rec
    assert torch.equal(H[-1], H0[-1]) and torch.equal(tau[-1], t0[-1])


@pytest.mark.variant
@pytest.mark.parametrize("n,dense", [(2048, 2), (4096, 1)])
def test_fp16_v16_row_split(n, dense):
    # EXPERIMENTS.md N24: row-split FP16 updates (groups of one panel) with the reflectors
    # from the float16 copy. Their W sums by atomics, so bits are not compared: every matrix
    # at the bar, and the FP32-routed one as without the knob to the atomics' order (its
    # launches do not read the copy).
    A = _both_routes(n, dense, 80)
    H0, t0 = adaptqr.geqrf(A)
    H, tau, _ = _under_knobs(A, fp16_v16=1)
    _fp32_matrix_as_before(H, tau, H0, t0, 1e-5, 1e-4)
