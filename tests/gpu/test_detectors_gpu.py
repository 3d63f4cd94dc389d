"""GPU tests of adaptqr.detectors at benchmark sizes (run by the coordinator on an H200).

- probe (Triton) agrees with the torch fallback on every qr_v2 benchmark case, full batch;
- n_active / routes are what each profile must give;
- a mixed batch holds several classes;
- probe + classify + finish_tail never synchronize with the host;
- the low-rank flow (reference path on the prefix + finish_tail) passes the bar at full batch.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

from adaptqr.detectors import classify, finish_tail, probe, route_codes  # noqa: E402
from adaptqr.testing import EXPECTED_N_ACTIVE, bench_cases, case_name, check_geqrf, generate  # noqa: E402

CODES = route_codes()
EXPECTED_ACTIVE = EXPECTED_N_ACTIVE


def colmajor(A: torch.Tensor) -> torch.Tensor:
    return A.mT.contiguous().mT


EPS32 = torch.finfo(torch.float32).eps


def _same(a: torch.Tensor, b: torch.Tensor, name: str, terms: int) -> None:
    if a.dtype.is_floating_point:
        # Different summation orders (tiles vs torch's reductions). A float32 sum of `terms`
        # nonnegative numbers is within (terms - 1) * eps32 / 2 of the exact one, relatively,
        # whatever the order, so two orders differ by at most terms * eps32 (a 2-norm by half
        # of that). The 4096-long row norms of 2x4096 differed by 1.4e-5 (H200, 2026-11-29).
        rtol = max(1e-5, terms * EPS32)
        torch.testing.assert_close(a, b, rtol=rtol, atol=0, equal_nan=True, msg=name)
    else:
        assert torch.equal(a, b), name


@pytest.mark.parametrize("case", bench_cases(), ids=case_name)
def test_probe_and_classify_on_benchmark_case(case):
    n, batch, profile = case["n"], case["batch"], case.get("case", "dense")
    A = generate(batch, n, case["cond"], case["seed"], profile, device="cuda")
    H = colmajor(A)
    f = probe(H)
    ref = probe(H, backend="torch")
    for k in ref:
        _same(f[k], ref[k], f"{case_name(case)}: {k}", terms=n)
    routes = classify(f)
    assert routes.shape == (batch,) and routes.dtype == torch.int32 and routes.is_cuda
    assert f["n_active"].dtype == torch.int32 and f["n_active"].is_cuda
    if profile in EXPECTED_ACTIVE:
        want = EXPECTED_ACTIVE[profile](n)
        assert (f["n_active"] == want).all(), f["n_active"].unique().tolist()
        code = CODES["upper"] if profile == "upper" else CODES["lowrank" if want < n else "dense"]
        assert (routes == code).all()
    else:  # mixed: dense plus rankdef/clustered matrices at these batch sizes
        assert {CODES["dense"], CODES["lowrank"]} <= set(routes.tolist())
    assert torch.equal(H, colmajor(A))  # the probe only reads
    # The route probe loading the input on the way (eager calls): H is the input, bit for
    # bit, and the routes and features are the route probe's on the loaded H.
    from adaptqr.detectors import route

    H2 = torch.empty_like(H)
    r2, f2 = route(H2, src=A)
    r1, f1 = route(H)
    assert torch.equal(H2, H) and torch.equal(r2, r1)
    assert all(torch.equal(f2[k], f1[k]) for k in f1)


@pytest.mark.parametrize("n", [32, 176, 352, 512, 1024, 2048])
def test_mixed_batch_routes_hold_every_class(n):
    parts = [generate(3, n, 1, 11, p, device="cuda") for p in ("dense", "upper", "rankdef", "clustered")]
    A = torch.cat(parts)
    f = probe(colmajor(A))
    routes = classify(f).tolist()
    assert routes == [CODES["dense"]] * 3 + [CODES["upper"]] * 3 + [CODES["lowrank"]] * 6
    assert f["n_active"].tolist() == [n] * 3 + [0] * 3 + [3 * n // 4] * 3 + [n // 2 + 2] * 3


def test_no_host_sync():
    A = generate(640, 512, 0, 770001, "mixed", device="cuda")
    H = colmajor(A).clone()
    tau = torch.zeros(640, 512, device="cuda")
    # Warm up: Triton compiles and torch caches on the first call.
    f = probe(H)
    classify(f)
    finish_tail(H.clone(), tau.clone(), f["n_active"])
    torch.cuda.synchronize()
    old = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        f = probe(H)
        routes = classify(f)
        finish_tail(H, tau, f["n_active"])
    finally:
        torch.cuda.set_sync_debug_mode(old)
    assert routes.shape == (640,)


def test_probe_under_cuda_graph_capture():
    A = generate(64, 256, 0, 5, "rankdef", device="cuda")
    H = colmajor(A)
    f = probe(H)
    classify(f)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fg = probe(H)
        rg = classify(fg)
    g.replay()
    torch.cuda.synchronize()
    assert (fg["n_active"] == 192).all() and (rg == CODES["lowrank"]).all()


@pytest.mark.parametrize("scale", [1e30, 1e-30])
def test_probe_extreme_scales_on_gpu(scale):
    A = torch.randn(8, 512, 512, device="cuda", dtype=torch.float64)
    f = probe(colmajor((A * scale).float()))
    ref = (A * scale).float().double()
    torch.testing.assert_close(f["col_norm2"].double(), ref.norm(dim=1), rtol=1e-5, atol=0)
    torch.testing.assert_close(f["row_norm2"].double(), ref.norm(dim=2), rtol=1e-5, atol=0)


def test_finish_tail_triton_matches_torch():
    A = torch.randn(50, 300, 260, device="cuda")
    n_active = torch.randint(0, 261, (50,), device="cuda", dtype=torch.int32)
    n_active[:3] = torch.tensor([0, 260, 259], dtype=torch.int32)
    H1 = colmajor(A).clone()
    H2 = H1.clone()
    t1 = torch.randn(50, 260, device="cuda")
    t2 = t1.clone()
    finish_tail(H1, t1, n_active)
    finish_tail(H2, t2, n_active, backend="torch")
    assert torch.equal(H1, H2) and torch.equal(t1, t2)


@pytest.mark.parametrize("profile,batch,n", [("rankdef", 640, 512), ("clustered", 640, 512), ("upper", 64, 512)])
def test_lowrank_flow_passes_the_bar_at_full_batch(profile, batch, n):
    from adaptqr.paths.reference import factor_reference

    A = generate(batch, n, 0, 770003, profile, device="cuda")
    H = colmajor(A).clone()
    f = probe(H)
    classify(f)
    tau = torch.empty(batch, n, device="cuda")
    factor_reference(H, tau, SimpleNamespace(features=f))
    finish_tail(H, tau, f["n_active"])
    res = check_geqrf(A, H, tau)
    assert res.passes_bar, (res.worst_factor, res.worst_orth, res.error)


@pytest.mark.parametrize("batch,n", [(64, 512), (8, 1024)])
def test_dropped_tail_is_zero_and_passes_the_bar(batch, n):
    # EXPERIMENTS.md N33: a clustered matrix's 4 eps32 tail is dropped whole (zero columns,
    # tau 0) by the public call, the factorization passes the bar, and with the knob off the
    # tail holds Q1^T a_j instead (nonzero), also at the bar.
    import adaptqr
    from adaptqr import config

    # The first quarter: dense cond=2 (FP16-routed) whose last 32 columns are negligible,
    # dropped too and, with the tail gone, still on the FP16 route.
    A = generate(batch, n, 0, 331, "clustered", "cuda")
    A[: batch // 2] = generate(batch // 2, n, 2, 332, "dense", "cuda")
    A[: batch // 4, :, n - 32:] *= 1e-30
    A0 = A.clone()
    H, tau = adaptqr.geqrf(A)
    assert torch.equal(A, A0)
    lo = EXPECTED_ACTIVE["clustered"](n)
    assert (H[batch // 2:, :, lo:] == 0).all() and (tau[batch // 2:, lo:] == 0).all()
    assert (H[: batch // 4, :, n - 32:] == 0).all() and (tau[: batch // 4, n - 32:] == 0).all()
    assert (H[batch // 4: batch // 2, :, lo:] != 0).any()
    r = check_geqrf(A, H, tau)
    assert r.passes_bar, (r.worst_factor, r.worst_orth)
    with config.experiment(drop_tail=0):
        H2, tau2 = adaptqr.geqrf(A)
    assert (H2[batch // 2:, : lo, lo:] != 0).any()
    r2 = check_geqrf(A, H2, tau2)
    assert r2.passes_bar, (r2.worst_factor, r2.worst_orth)
