"""The path registry: route table, Path validation, register/unregister, duplicates."""

from __future__ import annotations

import pytest
import torch

import adaptqr
from adaptqr.registry import ALL_CLASSES, REGISTRY, InputSpec, MatrixInfo, Path


def _impl(H, tau, info):
    a, t = torch.geqrf(H)
    H.copy_(a)
    tau.copy_(t)


@pytest.fixture(autouse=True)
def _restore_registry():
    before = set(adaptqr.paths_registered())
    yield
    for name in set(REGISTRY.names()) - before:
        REGISTRY.remove(name)


def test_route_table_is_fixed():
    assert adaptqr.ROUTE_CLASSES == ("dense", "lowrank", "upper")
    assert adaptqr.ROUTE_DEFAULT == 0
    for code, name in enumerate(adaptqr.ROUTE_CLASSES):
        assert adaptqr.route_code(name) == code
        assert adaptqr.route_name(code) == name
    with pytest.raises(ValueError, match="known classes"):
        adaptqr.route_code("sparse")
    for bad in (3, -1, True, 1.0):
        with pytest.raises(ValueError):
            adaptqr.route_name(bad)


def test_builtins_registered_through_register_path():
    paths = adaptqr.paths_registered()
    assert "torch" in paths
    t = paths["torch"]
    assert t.classes == frozenset({ALL_CLASSES}) and not t.routed
    # every builtin other than torch outranks it only where faster: reference never does
    if "reference" in paths:
        assert paths["reference"].priority < t.priority
    if "householder" in paths:
        hh = paths["householder"]
        assert hh.priority > t.priority and hh.routed and hh.capturable
        assert hh.check(InputSpec(4, 8, 8, torch.float32, "cpu")) is not None
        assert hh.check(InputSpec(4, 8, 8, torch.float64, "cuda")) is not None
        assert hh.check(InputSpec(4, 8, 8, torch.float32, "cuda")) is None


@pytest.mark.parametrize(
    "kwargs, exc, needle",
    [
        (dict(name=""), ValueError, "identifier"),
        (dict(name="has space"), ValueError, "identifier"),
        (dict(name=3), ValueError, "identifier"),
        (dict(name="x", impl=5), TypeError, "impl must be callable"),
        (dict(name="x", supports="yes"), TypeError, "supports must be callable"),
        (dict(name="x", classes=set()), ValueError, "classes is empty"),
        (dict(name="x", classes={"sparse"}), ValueError, "unknown route classes"),
        (dict(name="x", classes=7), TypeError, "classes"),
        (dict(name="x", priority=1.5), TypeError, "priority"),
        (dict(name="x", priority=True), TypeError, "priority"),
        (dict(name="x", routed=1), TypeError, "routed"),
        (dict(name="x", capturable="no"), TypeError, "capturable"),
    ],
)
def test_path_validation(kwargs, exc, needle):
    kw = dict(impl=_impl)
    kw.update(kwargs)
    with pytest.raises(exc, match=needle):
        Path(**kw)


def test_path_is_frozen_and_classes_normalized():
    p = Path(name="p", impl=_impl, classes="lowrank")
    assert p.classes == frozenset({"lowrank"})
    assert p.accepts("lowrank") and not p.accepts("dense") and not p.takes_all_classes
    with pytest.raises(Exception):
        p.priority = 3


def test_register_decorator_and_call_forms():
    v0 = REGISTRY.version

    @adaptqr.register_path(name="deco", classes={"upper"}, priority=3, description="d")
    def deco(H, tau, info):
        _impl(H, tau, info)

    assert callable(deco) and deco.__name__ == "deco"
    p = adaptqr.register_path(_impl, name="called", classes=["lowrank", "upper"])
    assert isinstance(p, Path) and p.classes == frozenset({"lowrank", "upper"})
    got = adaptqr.paths_registered()
    assert got["deco"].impl is deco and got["deco"].priority == 3 and got["deco"].description == "d"
    assert list(got)[-2:] == ["deco", "called"]
    assert REGISTRY.version == v0 + 2
    adaptqr.unregister_path("deco")
    assert "deco" not in adaptqr.paths_registered()
    assert REGISTRY.version == v0 + 3


def test_duplicates_raise():
    adaptqr.register_path(_impl, name="dup")
    with pytest.raises(ValueError, match="already registered"):
        adaptqr.register_path(_impl, name="dup")
    with pytest.raises(ValueError, match="already registered"):
        adaptqr.register_path(_impl, name="torch")


def test_unregister_unknown_lists_known():
    with pytest.raises(KeyError, match="torch"):
        adaptqr.unregister_path("never_there")


def test_supports_misbehaving():
    bad_type = Path(name="bt", impl=_impl, supports=lambda s: 42)
    spec = InputSpec(2, 3, 3, torch.float32, "cpu")
    with pytest.raises(TypeError, match="bt"):
        bad_type.check(spec)

    def boom(s):
        raise KeyError("oops")

    raising = Path(name="rs", impl=_impl, supports=boom)
    with pytest.raises(RuntimeError, match="rs") as info:
        raising.check(spec)
    assert isinstance(info.value.__cause__, KeyError)


def test_prefers_bounds_the_automatic_plan_not_a_named_call():
    # A path that supports every CPU input but prefers batches of at most 4: above that the
    # plan passes over it with its reason in the log; named, it takes the batch anyway.
    from adaptqr.planning import clear_plans, plan_for

    def prefers(spec):
        return None if spec.batch <= 4 else f"pref: batch {spec.batch} over 4"

    adaptqr.register_path(_impl, name="pref", priority=500, prefers=prefers)
    clear_plans()
    small, big = InputSpec(4, 6, 6, torch.float32, "cpu"), InputSpec(5, 6, 6, torch.float32, "cpu")
    assert set(plan_for(small).owner_names().values()) == {"pref"}
    plan = plan_for(big)
    assert "pref" not in plan.owner_names().values()
    assert ("pref", "pref: batch 5 over 4") in plan.rejected
    assert set(plan_for(big, forced="pref").owner_names().values()) == {"pref"}
    A = torch.randn(5, 6, 6)
    a, tau = adaptqr.geqrf(A, path="pref")
    ref = torch.geqrf(A)
    assert torch.equal(a, ref.a) and torch.equal(tau, ref.tau)


def test_prefers_misbehaving():
    spec = InputSpec(2, 3, 3, torch.float32, "cpu")
    with pytest.raises(TypeError, match="prefers\\(\\) must return"):
        Path(name="pt", impl=_impl, prefers=lambda s: 1).check_preferred(spec)
    with pytest.raises(TypeError, match="prefers must be callable"):
        Path(name="pc", impl=_impl, prefers=3)
    assert Path(name="pn", impl=_impl).check_preferred(spec) is None


def test_matrix_info():
    r = torch.zeros(4, dtype=torch.int32)
    info = MatrixInfo(r)
    assert info.routes is r and info.features == {}
    assert "routes=(4,)" in repr(info)


def test_input_spec_describe():
    s = InputSpec(20, 32, 32, torch.float32, "cuda")
    assert s.describe() == "20x32x32 float32 on cuda" and s.square


def test_concurrent_first_calls_see_every_builtin(monkeypatch):
    """A thread must never plan against a half-loaded registry (it once saw an empty one)."""
    import threading
    import time

    import adaptqr.builtin_paths as builtin_paths
    from adaptqr.registry import Registry

    reg = Registry()
    real = builtin_paths.register_all

    def slow(r):
        time.sleep(0.3)  # widen the window in which another thread arrives
        real(r)

    monkeypatch.setattr(builtin_paths, "register_all", slow)
    seen = []

    def first_call():
        reg.ensure_builtins()
        seen.append(set(reg.names()))

    threads = [threading.Thread(target=first_call) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 3 and all({"torch", "reference"} <= s for s in seen), seen
