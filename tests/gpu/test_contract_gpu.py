"""adaptqr.geqrf against torch.geqrf on CUDA: layout, values, errors, out=, autograd, graphs, log."""

from __future__ import annotations

import warnings

import pytest
import torch

import adaptqr
from adaptqr.testing import bench_cases, case_name, check_geqrf, generate

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
SHAPES = [(4, 4), (5, 3), (3, 5), (3, 4, 4), (3, 6, 2), (2, 3, 8, 8), (20, 32, 32), (4, 64, 48), (1, 1), (7, 1)]
f32, f64, c64, c128 = DTYPES


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for var in ("ADAPTQR_LOG", "ADAPTQR_PATH", "ADAPTQR_DETECT"):
        monkeypatch.delenv(var, raising=False)
    adaptqr.log.disable()
    adaptqr.clear_decisions()
    yield
    adaptqr.log.disable()
    adaptqr.clear_decisions()


def _rand(shape, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    if dtype.is_complex:
        re = torch.randn(shape, generator=g, device="cuda", dtype=torch.float64)
        im = torch.randn(shape, generator=g, device="cuda", dtype=torch.float64)
        return torch.complex(re, im).to(dtype)
    return torch.randn(shape, generator=g, device="cuda", dtype=torch.float64).to(dtype)


def _check_factor(A, a, tau):
    """Q R = A and Q^H Q = I, in float64/complex128, at the qr_v2 gates' scale."""
    wide = torch.complex128 if A.is_complex() else torch.float64
    m, n = A.shape[-2:]
    k = min(m, n)
    Q = torch.linalg.householder_product(a[..., :, :k].to(wide), tau.to(wide))
    R = torch.triu(a.to(wide))[..., :k, :]
    eps = torch.finfo(A.dtype).eps
    scale = max(m, n) * eps
    res = torch.linalg.matrix_norm(Q @ R - A.to(wide), ord=1) / torch.linalg.matrix_norm(A.to(wide), ord=1)
    orth = torch.linalg.matrix_norm(Q.mH @ Q - torch.eye(k, dtype=wide, device=A.device), ord=1)
    assert (res / scale).max().item() < 20, (res / scale).max().item()
    assert (orth / scale).max().item() < 100, (orth / scale).max().item()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_torch(shape, dtype):
    A = _rand(shape, dtype)
    A0 = A.clone()
    ours, ref = adaptqr.geqrf(A), torch.geqrf(A)
    assert torch.equal(A, A0)
    assert ours.a.data_ptr() != A.data_ptr()
    for x, y in zip(ours, ref):
        assert x.shape == y.shape and x.dtype == y.dtype and x.device == y.device
        assert x.stride() == y.stride(), (x.stride(), y.stride())
    _check_factor(A, ours.a, ours.tau)
    tol = 1e-3 if dtype in (f32, c64) else 1e-9
    torch.testing.assert_close(ours.a, ref.a, rtol=tol, atol=tol)
    torch.testing.assert_close(ours.tau, ref.tau, rtol=tol, atol=tol)


def test_forced_torch_is_exact():
    A = _rand((6, 16, 16), f32)
    ours, ref = adaptqr.geqrf(A, path="torch"), torch.geqrf(A)
    assert torch.equal(ours.a, ref.a) and torch.equal(ours.tau, ref.tau)


@pytest.mark.parametrize(
    "make",
    [
        lambda: _rand((3, 16, 16), f32).mT,
        lambda: _rand((6, 16, 16), f32)[::2],
        lambda: _rand((1, 16, 16), f32).expand(4, 16, 16),
    ],
    ids=["transposed", "strided-batch", "expanded"],
)
def test_non_contiguous(make):
    A = make()
    A0 = A.clone()
    ours, ref = adaptqr.geqrf(A), torch.geqrf(A)
    assert torch.equal(A, A0)
    assert ours.a.stride() == ref.a.stride()
    _check_factor(A, ours.a, ours.tau)


@pytest.mark.parametrize("shape", [(0, 4, 4), (2, 0, 3), (2, 4, 0), (0, 32, 32)], ids=str)
def test_empty(shape):
    A = torch.randn(shape, device="cuda")
    for x, y in zip(adaptqr.geqrf(A), torch.geqrf(A)):
        assert x.shape == y.shape and x.dtype == y.dtype and x.device == y.device


def test_nan_propagates_without_hang():
    A = _rand((8, 32, 32), f32)
    A[3, 5, 7] = float("nan")
    A[5, 0, 0] = float("inf")
    a, tau = adaptqr.geqrf(A)
    torch.cuda.synchronize()
    bad = ~torch.isfinite(a).flatten(1).all(1)
    assert bad[3].item() and bad[5].item()
    good = [i for i in range(8) if i not in (3, 5)]
    _check_factor(A[good], a[good], tau[good])


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: torch.ones(3, 3, dtype=torch.int32, device="cuda"), NotImplementedError),
        (lambda: torch.ones(3, 3, dtype=torch.float16, device="cuda"), NotImplementedError),
        (lambda: torch.ones(3, device="cuda"), RuntimeError),
    ],
)
def test_bad_input_errors(make, expected):
    A = make()
    with pytest.raises(expected):
        torch.geqrf(A)
    with pytest.raises(expected) as info:
        adaptqr.geqrf(A)
    assert "cuda" in str(info.value)


@pytest.mark.parametrize("where", ["a", "tau"])
def test_out_wrong_device(where):
    A = _rand((2, 4, 4), f32)

    def out():
        a = torch.empty(0, device="cpu" if where == "a" else "cuda")
        t = torch.empty(0, device="cpu" if where == "tau" else "cuda")
        return a, t

    with pytest.raises(RuntimeError):
        torch.geqrf(A, out=out())
    with pytest.raises(RuntimeError) as info:
        adaptqr.geqrf(A, out=out())
    assert "cpu" in str(info.value) and "cuda" in str(info.value)


@pytest.mark.parametrize(
    "ash, adt, tsh, tdt",
    [((0,), f32, (0,), f32), ((2, 4, 4), f32, (2, 4), f32), ((5, 5), f32, (3,), f32), ((2, 4, 4), f64, (2, 4), c64)],
    ids=str,
)
def test_out_like_torch(ash, adt, tsh, tdt):
    A = _rand((2, 4, 4), f32)
    results = []
    for fn in (torch.geqrf, adaptqr.geqrf):
        a, t = torch.zeros(ash, dtype=adt, device="cuda"), torch.zeros(tsh, dtype=tdt, device="cuda")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            res = fn(A, out=(a, t))
        assert res.a is a and res.tau is t
        results.append((a, t, bool(w)))
    (ra, rt, rw), (oa, ot, ow) = results
    assert rw == ow
    for x, y in ((oa, ra), (ot, rt)):
        assert x.shape == y.shape and x.stride() == y.stride() and x.dtype == y.dtype
        torch.testing.assert_close(x, y, rtol=1e-3, atol=1e-3)


def test_requires_grad_like_torch():
    A = _rand((4, 8, 8), f32).requires_grad_()
    ours, ref = adaptqr.geqrf(A), torch.geqrf(A)
    assert ours.a.requires_grad and ref.a.requires_grad
    with pytest.raises(NotImplementedError):
        ref.a.sum().backward()
    with pytest.raises(NotImplementedError):
        ours.a.sum().backward()


def test_repeated_calls_fresh_results_and_log():
    """Capturable plans go through the graph cache: results stay fresh; the log says so."""
    adaptqr.log.enable()
    outs = []
    # 64 columns: householder's graph (20x32 is the small path's, one launch, no graph).
    inputs = [_rand((20, 64, 64), f32, seed=s) for s in range(4)]
    for A in inputs:
        outs.append(adaptqr.geqrf(A))
    for A, (a, tau) in zip(inputs, outs):
        _check_factor(A, a, tau)
    recs = adaptqr.decisions()
    assert len(recs) == 4 and all(r["device"].startswith("cuda") for r in recs)
    if "householder" in adaptqr.paths_registered():
        assert recs[-1]["plan"]["dense"] == "householder"
        assert recs[-1]["mode"] == "graph"
        assert len(recs[-1]["routes"]) == 20


def _mixed_batch(n=32):
    """20 matrices n x n: 0-4 have a zero last quarter of columns (lowrank), 5-7 are upper triangular."""
    A = _rand((20, n, n), f32, seed=3)
    A[0:5, :, 3 * n // 4:] = 0
    A[5:8] = torch.triu(A[5:8]) + torch.eye(n, device="cuda")
    return A


def test_routed_plan_on_mixed_batch():
    if "householder" not in adaptqr.paths_registered():
        pytest.skip("householder path not importable")
    # n = 160 takes the blocked schedule, whose panels skip each matrix's negligible tail.
    A = _mixed_batch(160)
    ex = adaptqr.explain(A)
    assert ex.probed and not ex.gathered
    assert ex.counts["lowrank"] >= 5 and ex.counts["upper"] >= 3, ex.counts
    assert ex.counts["lowrank"] + ex.counts["upper"] + ex.counts["dense"] == 20
    a, tau = adaptqr.geqrf(A)
    _check_factor(A, a, tau)
    torch.testing.assert_close(a, torch.geqrf(A).a, rtol=1e-3, atol=1e-3)


def test_one_launch_schedule_skips_the_probe():
    if "householder" not in adaptqr.paths_registered():
        pytest.skip("householder path not importable")
    # n = 64: householder's whole QR is one fused launch; routes would change no work (at
    # n = 32 the small path takes 20 matrices, unprobed too).
    A = _mixed_batch(64)
    ex = adaptqr.explain(A)
    assert not ex.probed and "reads per-matrix routes" in ex.probe_note
    a, tau = adaptqr.geqrf(A)
    _check_factor(A, a, tau)
    torch.testing.assert_close(a, torch.geqrf(A).a, rtol=1e-3, atol=1e-3)


def test_user_path_shares_batch_on_cuda():
    seen = []

    @adaptqr.register_path(name="gpu_upper_user", classes={"upper"}, priority=500)
    def gpu_upper_user(H, tau, info):
        seen.append((H.clone(), info.routes.clone()))
        tau.zero_()

    try:
        A = _mixed_batch()
        adaptqr.log.enable()
        a, tau = adaptqr.geqrf(A)
        ex = adaptqr.explain(A)
    finally:
        adaptqr.unregister_path("gpu_upper_user")
    ups = [i for i, c in enumerate(ex.classes) if c == "upper"]
    assert ups and set(range(5, 8)) <= set(ups)
    (H, routes), = seen
    assert torch.equal(H, A[ups]) and routes.tolist() == [2] * len(ups)
    _check_factor(A, a, tau)
    rec = adaptqr.decisions()[-1]
    assert rec["plan"]["upper"] == "gpu_upper_user" and rec["mode"] == "eager"


@pytest.mark.parametrize("case", bench_cases(), ids=case_name)
def test_no_host_sync_on_any_benchmark_case(case, monkeypatch):
    """The whole call (probes, routes, kernels, tail) runs without one host synchronization,
    eagerly and, for the shapes that are captured, as a graph replay."""
    A = generate(case["batch"], case["n"], case["cond"], case["seed"], case.get("case", "dense"), device="cuda")
    for _ in range(3):  # compile the kernels, build the plan, capture where the policy captures
        adaptqr.geqrf(A)
    torch.cuda.synchronize()
    results = []
    for graphs in ("0", "1"):
        monkeypatch.setenv("ADAPTQR_GRAPHS", graphs)
        torch.cuda.set_sync_debug_mode("error")
        try:
            results.append(adaptqr.geqrf(A))
        finally:
            torch.cuda.set_sync_debug_mode(0)
    for a, tau in results:
        res = check_geqrf(A, a, tau)
        assert res.passes_bar, res.summary


def test_graph_key_follows_the_settings_a_plan_reads(monkeypatch):
    """A graph captured with the probes on must not be replayed once ADAPTQR_DETECT=0."""
    import adaptqr.graphs as graphs

    graphs.clear()
    graphs.reset_stats()
    A = _rand((40, 176, 176), f32, seed=5)
    for _ in range(3):
        adaptqr.geqrf(A)
    assert graphs.stats()["captures"] == 1
    monkeypatch.setenv("ADAPTQR_DETECT", "0")
    for _ in range(3):
        a, tau = adaptqr.geqrf(A)
    assert graphs.stats()["captures"] == 2
    _check_factor(A, a, tau)
    graphs.clear()


@pytest.mark.parametrize("shape", [(130, 512, 512), (3, 2050, 1500), (3, 2000, 2100)])
def test_large_input_load_is_exact(shape):
    # Inputs past TRITON_COPY_MIN_BYTES take the Triton column-major copy (adaptqr.layout).
    from adaptqr.layout import TRITON_COPY_MIN_BYTES, load_column_major

    A = torch.randn(*shape, device="cuda")
    assert A.numel() * 4 >= TRITON_COPY_MIN_BYTES
    A0 = A.clone()
    a = torch.empty(shape[0], shape[2], shape[1], device="cuda").mT
    load_column_major(A, a)
    assert torch.equal(a, A) and torch.equal(A, A0)
    # Through the public call: the input untouched, the output in geqrf's layout, the bar met.
    a1, t1 = adaptqr.geqrf(A)
    assert torch.equal(A, A0) and a1.mT.is_contiguous()
    assert check_geqrf(A, a1, t1).passes_bar


@pytest.mark.parametrize("shape", [(40, 176, 176), (7, 100, 60)])
def test_small_input_load_by_the_triton_copy(shape):
    # X5: inputs from layout.TRITON_COPY_MIN_BYTES (4 MiB; 40x176 is 5 MB, 7x100x60 below
    # it) load by the Triton transpose. The copy is exact; through the public call (eager or
    # capture, then replays, whose load runs outside the graph) the input stays untouched
    # and every result passes the bar.
    import adaptqr.graphs as graphs
    from adaptqr.layout import load_column_major

    A = torch.randn(*shape, device="cuda")
    A0 = A.clone()
    a = torch.empty(shape[0], shape[2], shape[1], device="cuda").mT
    load_column_major(A, a, backend="triton")
    assert torch.equal(a, A)
    graphs.clear()
    for _ in range(3):
        a1, t1 = adaptqr.geqrf(A)
        assert torch.equal(A, A0) and check_geqrf(A, a1, t1).passes_bar
    graphs.clear()
