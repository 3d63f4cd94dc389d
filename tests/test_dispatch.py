"""The dispatcher: plan choice and caching, per-matrix routing to user paths, detectors, errors."""

from __future__ import annotations

import pytest
import torch

import adaptqr
from adaptqr import dispatch
from adaptqr.registry import InputSpec, route_code

pytestmark = pytest.mark.usefixtures("clean_dispatch")  # tests/conftest.py


class FakeDetectors:
    """Marks the given matrix indices with the given class; records every call."""

    def __init__(self, marks: dict[int, str]):
        self.marks = marks
        self.probed = 0
        self.finished = []

    def probe(self, H):
        self.probed += 1
        assert H.mT.is_contiguous()
        B, m, n = H.shape
        n_active = torch.full((B,), n, dtype=torch.int32)
        for i, cls in self.marks.items():
            n_active[i] = 0 if cls == "upper" else n // 2
        return {"n_active": n_active, "marker": torch.arange(B)}

    def classify(self, features):
        routes = torch.zeros_like(features["n_active"])
        for i, cls in self.marks.items():
            routes[i] = route_code(cls)
        return routes

    def route(self, H, src=None, settings=None):
        """The dispatcher's one entry: load ``src`` into ``H``, then probe and classify."""
        if src is not None:
            H.copy_(src)
        features = self.probe(H)
        return self.classify(features), features

    def finish_tail(self, H, tau, n_active, n_kept=None, n_nonzero=None):
        self.finished.append((H.shape[0], n_active.clone()))


def _use(monkeypatch, det):
    monkeypatch.setattr(dispatch, "detectors", lambda: det)


def _torch_impl(H, tau, info):
    a, t = torch.geqrf(H)
    H.copy_(a)
    tau.copy_(t)


def test_cpu_default_is_torch_without_probe(monkeypatch):
    det = FakeDetectors({0: "lowrank"})
    _use(monkeypatch, det)
    A = torch.randn(5, 6, 6)
    plan = dispatch.plan_for(dispatch.spec_of(A))
    assert set(plan.owner_names().values()) == {"torch"}
    assert not plan.probe and not plan.gathered
    a, tau = adaptqr.geqrf(A)
    assert det.probed == 0  # one path for every class: no detector, no sync
    assert torch.equal(a, torch.geqrf(A).a)


def test_user_path_gets_exactly_its_matrices(monkeypatch):
    det = FakeDetectors({1: "lowrank", 4: "lowrank", 2: "upper"})
    _use(monkeypatch, det)
    seen = []

    @adaptqr.register_path(name="lowrank_only", classes={"lowrank"}, priority=10)
    def lowrank_only(H, tau, info):
        seen.append((H.clone(), H.stride(), info.routes.clone(), {k: v.clone() for k, v in info.features.items()}))
        _torch_impl(H, tau, info)

    g = torch.Generator().manual_seed(1)
    A = torch.randn(2, 3, 5, 4, generator=g)  # B = 6, rectangular
    A0 = A.clone()
    a, tau = adaptqr.geqrf(A)
    assert torch.equal(A, A0)
    assert len(seen) == 1
    H, stride, routes, feats = seen[0]
    flat = A.reshape(6, 5, 4)
    assert H.shape == (2, 5, 4) and stride == (20, 1, 5)
    assert torch.equal(H, flat[[1, 4]])
    assert routes.tolist() == [1, 1]
    assert feats["marker"].tolist() == [1, 4]
    ref = torch.geqrf(A)
    torch.testing.assert_close(a, ref.a, rtol=0, atol=0)
    torch.testing.assert_close(tau, ref.tau, rtol=0, atol=0)
    assert a.stride() == ref.a.stride()


def test_user_path_results_are_scattered_back(monkeypatch):
    _use(monkeypatch, FakeDetectors({0: "upper", 3: "upper"}))

    @adaptqr.register_path(name="sentinel", classes={"upper"}, priority=1)
    def sentinel(H, tau, info):
        H.fill_(7.0)
        tau.fill_(-7.0)

    A = torch.randn(4, 3, 3)
    a, tau = adaptqr.geqrf(A)
    ref = torch.geqrf(A)
    for i in range(4):
        if i in (0, 3):
            assert (a[i] == 7).all() and (tau[i] == -7).all()
        else:
            assert torch.equal(a[i], ref.a[i]) and torch.equal(tau[i], ref.tau[i])


def test_user_path_absent_class_not_called(monkeypatch):
    _use(monkeypatch, FakeDetectors({}))
    calls = []
    adaptqr.register_path(lambda H, t, i: calls.append(1), name="never", classes={"lowrank"}, priority=10)
    A = torch.randn(3, 4, 4)
    assert torch.equal(adaptqr.geqrf(A).a, torch.geqrf(A).a)
    assert calls == []


def test_routed_base_gets_whole_batch_and_finish_tail(monkeypatch):
    det = FakeDetectors({1: "lowrank", 2: "upper"})
    _use(monkeypatch, det)
    seen = []

    @adaptqr.register_path(name="routed_all", priority=50, routed=True, capturable=True)
    def routed_all(H, tau, info):
        seen.append((H.shape[0], info.routes.tolist()))
        _torch_impl(H, tau, info)

    A = torch.randn(3, 4, 4)
    plan = dispatch.plan_for(dispatch.spec_of(A))
    assert plan.base.name == "routed_all" and plan.probe and not plan.gathered and plan.capturable
    adaptqr.geqrf(A)
    assert seen == [(3, [0, 1, 2])]
    assert len(det.finished) == 1 and det.finished[0][1].tolist() == [4, 2, 0]


def test_routed_path_that_reads_no_routes_for_a_shape_skips_the_probe(monkeypatch):
    det = FakeDetectors({0: "lowrank"})
    probed = []
    real_probe = det.probe
    det.probe = lambda H: probed.append(H.shape) or real_probe(H)
    _use(monkeypatch, det)
    got = []

    @adaptqr.register_path(name="routed_big", priority=50, routed=True, reads_routes=lambda s: s.n > 4)
    def routed_big(H, tau, info):
        got.append(info.routes.tolist())
        _torch_impl(H, tau, info)

    small, big = torch.randn(2, 4, 4), torch.randn(2, 6, 6)
    assert not dispatch.plan_for(dispatch.spec_of(small)).probe
    assert dispatch.plan_for(dispatch.spec_of(big)).probe
    assert torch.equal(adaptqr.geqrf(small).a, torch.geqrf(small).a)
    assert probed == [] and got == [[0, 0]]          # every matrix "dense", no probe
    adaptqr.geqrf(big)
    assert probed == [(2, 6, 6)] and got[-1] == [1, 0]


def test_lean_route_probe_is_the_dispatchers_probe(monkeypatch):
    det = FakeDetectors({1: "lowrank"})
    det.probe = lambda H: pytest.fail("the dispatcher runs route(), never the full probe")
    loaded = []

    def route(H, src=None, settings=None):
        # Eager calls hand the input over for the probe to load (route's contract).
        if src is not None:
            H.copy_(src)
        loaded.append(src is not None)
        return (torch.tensor([0, 1], dtype=torch.int32),
                {"n_active": torch.tensor([H.shape[2], 2], dtype=torch.int32)})

    det.route = route
    _use(monkeypatch, det)
    got = []

    @adaptqr.register_path(name="routed_lean", priority=50, routed=True)
    def routed_lean(H, tau, info):
        got.append((info.routes.tolist(), info.features["n_active"].tolist(), H.clone()))
        _torch_impl(H, tau, info)

    A = torch.randn(2, 4, 4)
    adaptqr.geqrf(A)
    assert [g[:2] for g in got] == [([0, 1], [4, 2])] and det.finished[0][1].tolist() == [4, 2]
    assert loaded == [True] and torch.equal(got[0][2], A)


def test_reads_routes_must_be_callable():
    with pytest.raises(TypeError, match="reads_routes"):
        adaptqr.register_path(_torch_impl, name="bad_rr", reads_routes=True)


def test_detect_off_means_all_dense(monkeypatch):
    det = FakeDetectors({0: "lowrank"})
    det.probe = lambda H: pytest.fail("probe must not run with ADAPTQR_DETECT=0")
    _use(monkeypatch, det)
    monkeypatch.setenv("ADAPTQR_DETECT", "0")
    got = []
    adaptqr.register_path(lambda H, t, i: got.append(1), name="lr", classes={"lowrank"}, priority=10)
    A = torch.randn(2, 3, 3)
    assert torch.equal(adaptqr.geqrf(A).a, torch.geqrf(A).a)
    assert got == []


def test_a_broken_layer_fails_loudly(monkeypatch):
    # Issue 23: an import error of the package's own detectors is raised, not turned into
    # "every matrix dense" (or, for a path module, into a silent torch.geqrf).
    import sys

    monkeypatch.setitem(sys.modules, "adaptqr.detectors", None)

    @adaptqr.register_path(name="routed2", priority=50, routed=True)
    def routed2(H, tau, info):
        _torch_impl(H, tau, info)

    with pytest.raises(ImportError, match="adaptqr.detectors"):
        adaptqr.geqrf(torch.randn(3, 4, 4))


def test_path_failure_names_path(monkeypatch):
    def broken(H, tau, info):
        raise ZeroDivisionError("kaboom")

    adaptqr.register_path(broken, name="broken", priority=99)
    with pytest.raises(RuntimeError, match="'broken'") as info:
        adaptqr.geqrf(torch.randn(2, 3, 3))
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "kaboom" in str(info.value) and "2x3x3" in str(info.value)


def test_priority_and_supports(monkeypatch):
    adaptqr.register_path(_torch_impl, name="small_only", priority=5,
                          supports=lambda s: None if s.n <= 4 else f"n={s.n} > 4")
    p = dispatch.plan_for(InputSpec(2, 4, 4, torch.float32, "cpu"))
    assert p.owner_names()["dense"] == "small_only"
    assert ("torch", "outranked (priority 0) by small_only") in p.rejected
    p = dispatch.plan_for(InputSpec(2, 8, 8, torch.float32, "cpu"))
    assert p.owner_names()["dense"] == "torch"
    assert ("small_only", "n=8 > 4") in p.rejected


def test_priority_tie_earlier_registration_wins():
    adaptqr.register_path(_torch_impl, name="first", priority=7)
    adaptqr.register_path(_torch_impl, name="second", priority=7)
    p = dispatch.plan_for(InputSpec(2, 4, 4, torch.float64, "cpu"))
    assert set(p.owner_names().values()) == {"first"}


def test_plan_cache_and_invalidation():
    spec = InputSpec(3, 5, 5, torch.float32, "cpu")
    p1 = dispatch.plan_for(spec)
    assert dispatch.plan_for(spec) is p1
    adaptqr.register_path(_torch_impl, name="newer", priority=3)
    p2 = dispatch.plan_for(spec)
    assert p2 is not p1 and p2.owner_names()["dense"] == "newer"
    adaptqr.unregister_path("newer")
    assert dispatch.plan_for(spec).owner_names()["dense"] == "torch"


def test_plan_cache_bounded():
    dispatch.clear_plans()
    for b in range(dispatch.PLAN_CACHE_SIZE + 10):
        dispatch.plan_for(InputSpec(b + 1, 2, 2, torch.float32, "cpu"))
    assert len(dispatch._plans) == dispatch.PLAN_CACHE_SIZE


def test_forced_path_must_take_every_class():
    adaptqr.register_path(_torch_impl, name="partial", classes={"lowrank"})
    with pytest.raises(ValueError, match="partial"):
        adaptqr.geqrf(torch.randn(2, 3, 3), path="partial")


def test_forced_path_declined_reason_and_input():
    adaptqr.register_path(_torch_impl, name="picky", supports=lambda s: "only square" if s.m != s.n else None)
    with pytest.raises(ValueError) as info:
        adaptqr.geqrf(torch.randn(2, 5, 3, dtype=torch.float64), path="picky")
    msg = str(info.value)
    assert "only square" in msg and "m=5" in msg and "n=3" in msg and "float64" in msg and "cpu" in msg
    # the forced path is used when it applies, even below torch's priority
    calls = []
    adaptqr.register_path(lambda H, t, i: (calls.append(H.shape), _torch_impl(H, t, i)), name="low", priority=-100)
    adaptqr.geqrf(torch.randn(2, 3, 3), path="low")
    assert calls == [(2, 3, 3)]


def test_forced_by_env(monkeypatch):
    calls = []
    adaptqr.register_path(lambda H, t, i: (calls.append(1), _torch_impl(H, t, i)), name="envpath", priority=-100)
    monkeypatch.setenv("ADAPTQR_PATH", "envpath")
    adaptqr.geqrf(torch.randn(2, 3, 3))
    assert calls == [1]
    # the argument wins over the environment
    adaptqr.geqrf(torch.randn(2, 3, 3), path="torch")
    assert calls == [1]


def test_explain_counts_and_paths(monkeypatch):
    det = FakeDetectors({1: "lowrank", 4: "lowrank", 2: "upper"})
    _use(monkeypatch, det)
    adaptqr.register_path(_torch_impl, name="lr_path", classes={"lowrank"}, priority=10, description="toy")
    factored = []
    monkeypatch.setattr(dispatch, "factor", lambda *a, **k: factored.append(1))
    ex = adaptqr.explain(torch.randn(6, 4, 4))
    assert factored == []
    assert ex.counts == {"dense": 3, "lowrank": 2, "upper": 1}
    assert ex.matrix_paths == ["torch", "lr_path", "torch", "torch", "lr_path", "torch"]
    assert ex.classes[2] == "upper" and ex.probed and ex.gathered
    assert ex.plan == {"dense": "torch", "lowrank": "lr_path", "upper": "torch"}
    text = str(ex)
    assert "lr_path" in text and "lowrank" in text and "toy" in text
    d = ex.to_dict()
    assert d["routes"] == [0, 1, 2, 0, 1, 0] and d["path_counts"] == {"torch": 4, "lr_path": 2}


def test_explain_precision_is_fp16_only_on_the_householder_path(monkeypatch):
    # Scales from the probe mark matrices for the FP16 route, but only the householder path
    # reads them: on a plan whose dense path is torch every matrix stays "fp32".
    det = FakeDetectors({})
    orig = det.probe
    det.probe = lambda H: dict(orig(H), fp16_scale=torch.tensor([4.0, 0.0, 2.0]))
    _use(monkeypatch, det)
    monkeypatch.setattr(dispatch, "factor", lambda *a, **k: None)
    ex = adaptqr.explain(torch.randn(3, 4, 4))
    assert ex.matrix_paths == ["torch"] * 3 and ex.precision == ["fp32"] * 3
    assert ex.precision_counts == {"fp32": 3, "fp16": 0} and "float16" not in str(ex)
    assert adaptqr.explain(torch.randn(0, 4, 4)).precision == []


def test_explain_errors_like_geqrf():
    with pytest.raises(RuntimeError, match="2 dimensions"):
        adaptqr.explain(torch.randn(3))
    with pytest.raises(ValueError, match="known paths"):
        adaptqr.explain(torch.randn(2, 3, 3), path="nope")
    ex = adaptqr.explain(torch.randn(0, 3, 3))
    assert ex.routes == [] and "empty" in ex.probe_note


@pytest.mark.parametrize("shape", [(4, 4), (1, 1, 4, 4), (3, 5, 4), (1, 7), (7, 1)], ids=str)
def test_path_sees_exact_layout(shape):
    seen = []

    def spy(H, tau, info):
        seen.append((tuple(H.shape), H.stride(), tuple(tau.shape), tau.stride()))
        _torch_impl(H, tau, info)

    adaptqr.register_path(spy, name="spy", priority=-100)
    A = torch.randn(shape)
    ours = adaptqr.geqrf(A, path="spy")
    m, n = shape[-2:]
    B = A.numel() // (m * n)
    k = min(m, n)
    assert seen == [((B, m, n), (m * n, 1, m), (B, k), (k, 1))]
    assert torch.equal(ours.a, torch.geqrf(A).a)


def test_graph_key_holds_the_whole_settings_snapshot(monkeypatch):
    # Issue 23: every setting the plan reads while it runs is in the graph key, the
    # experiment knobs included (the tail precision was missing from the hand-made list).
    from adaptqr import config, dispatch

    for var in config.SETTING_VARS:
        monkeypatch.delenv(var, raising=False)
    base = config.snapshot()
    key = dispatch.plan_key(4, 64, 64, torch.float32, "cuda", None)
    k0 = dispatch.graph_key(key, (4, 64, 64), 0, base)
    assert dispatch.graph_key(key, (4, 64, 64), 0, config.snapshot()) == k0
    for var, value in (("ADAPTQR_FP16", "0"), ("ADAPTQR_DETECT", "0"), ("ADAPTQR_GRAPH_ENTRIES", "3")):
        monkeypatch.setenv(var, value)
        changed = config.snapshot()
        assert changed != base and dispatch.graph_key(key, (4, 64, 64), 0, changed) != k0, var
        monkeypatch.delenv(var)
    for knob, value in (("tail_prec", "ieee"), ("split_min_rows", 128), ("fp16_max_n", 1024),
                        ("cuda_panel", 0), ("cuda_panel_rows", 512),
                        ("cuda_panel_fuse", 1), ("cuda_panel_cluster", 512)):
        with config.experiment(**{knob: value}):
            changed = config.snapshot()
            assert changed != base and dispatch.graph_key(key, (4, 64, 64), 0, changed) != k0, knob
    assert config.snapshot() == base


def test_settings_snapshot_is_read_once_a_call(monkeypatch):
    # The snapshot is rebuilt only when a variable changed, and it reaches the path.
    import adaptqr
    from adaptqr import config

    seen = []

    @adaptqr.register_path(name="_settings_probe", priority=500)
    def _probe(H, tau, info):
        seen.append(info.settings)
        H2, tau2 = torch.geqrf(H)
        H.copy_(H2)
        tau.copy_(tau2)

    try:
        with config.experiment(tail_prec="tf32"):
            adaptqr.geqrf(torch.randn(2, 5, 5))
            assert seen[-1] is config.snapshot() and seen[-1].knobs.tail_prec == "tf32"
        monkeypatch.setenv("ADAPTQR_FP16", "0")
        adaptqr.geqrf(torch.randn(2, 5, 5))
        assert seen[-1].knobs.tail_prec is None and seen[-1].fp16 is False
    finally:
        adaptqr.unregister_path("_settings_probe")


def test_direct_plan_hands_the_callers_tensor_to_torch(monkeypatch):
    # A CPU batch that the torch path takes whole, unprobed: torch.geqrf on the caller's
    # tensor itself (no H allocated and loaded), the same outputs bit for bit, the input
    # untouched; a plan that gathers (a user path for one class) is not direct.
    A = torch.randn(2, 3, 7, 5)
    A0 = A.clone()
    plan = dispatch.plan_for(dispatch.spec_of(A), None)
    assert plan.direct is not None and plan.base.name == "torch"
    calls = []
    real = dispatch._alloc
    monkeypatch.setattr(dispatch, "_alloc", lambda *a, **k: calls.append(1) or real(*a, **k))
    a, tau = adaptqr.geqrf(A)
    ref = torch.geqrf(A0)
    assert calls == [] and torch.equal(A, A0)
    assert torch.equal(a, ref.a) and torch.equal(tau, ref.tau) and a.stride() == ref.a.stride()

    def lr(H, tau, info):
        r = torch.geqrf(H)
        H.copy_(r.a)
        tau.copy_(r.tau)

    adaptqr.register_path(lr, name="lr_direct", classes={"lowrank"}, priority=10)
    plan = dispatch.plan_for(dispatch.spec_of(A), None)
    assert plan.gathered and plan.direct is None
