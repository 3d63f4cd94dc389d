"""The ``small`` path (H37) on the CPU: where it is planned, what it declines, and its
``direct`` entry (outputs in torch.geqrf's layout for any batch dims) with the kernel run
by the host shim in place of the GPU launch."""

from __future__ import annotations

import pytest
import torch

import adaptqr
from adaptqr.paths import small
from adaptqr.paths.kernels import geqrf_small_cuda
from adaptqr.planning import plan_for
from adaptqr.registry import InputSpec
from adaptqr.testing import check_geqrf, cuda_host


@pytest.mark.parametrize("shape,owner", [((20, 32, 32), "small"), ((64, 64, 16), "small"),
                                         ((1, 20, 32), "small"), ((65, 32, 32), "householder"),
                                         ((40, 48, 48), "small"),
                                         ((20, 56, 56), "small"), ((8, 57, 57), "householder"),
                                         ((40, 64, 64), "householder"), ((640, 32, 32), "householder")])
def test_planned_within_its_measured_bounds(monkeypatch, shape, owner):
    # H37: where its kernel is there, the plan takes it for few matrices of few columns, and
    # past either bound householder keeps the shape, the small path's reason in the log.
    from adaptqr.planning import clear_plans

    monkeypatch.setattr(geqrf_small_cuda, "available", lambda: True)
    clear_plans()
    plan = plan_for(InputSpec(*shape, torch.float32, "cuda"))
    clear_plans()
    assert set(plan.owner_names().values()) == {owner}
    if owner == "householder":
        assert ("small", small.prefers(InputSpec(*shape, torch.float32, "cuda"))) in plan.rejected
        assert "name it" in small.prefers(InputSpec(*shape, torch.float32, "cuda"))
    else:
        assert plan.direct is small.direct and not plan.probe


def test_not_planned_without_its_kernel(monkeypatch):
    # No cupy (or no device, or no compile): householder keeps small shapes, the reason logged.
    from adaptqr.planning import clear_plans

    monkeypatch.setattr(geqrf_small_cuda, "available", lambda: False)
    clear_plans()
    plan = plan_for(InputSpec(20, 32, 32, torch.float32, "cuda"))
    clear_plans()
    assert plan.owner_names()["dense"] == "householder"
    assert any(name == "small" and "not available" in why for name, why in plan.rejected)


@pytest.mark.parametrize("spec,why", [
    ((4, 32, 32, torch.float32, "cpu"), "CUDA tensor"),
    ((4, 32, 32, torch.float64, "cuda"), "float32"),
    ((4, 65, 32, torch.float32, "cuda"), "65x32"),
    ((4, 32, 65, torch.float32, "cuda"), "32x65"),
])
def test_small_declines_with_its_reason(spec, why):
    assert why in small.capable(InputSpec(*spec))


def test_named_on_a_cpu_tensor_raises_naming_the_reason():
    with pytest.raises(ValueError, match="small: needs a CUDA tensor"):
        adaptqr.geqrf(torch.randn(2, 8, 8), path="small")


@pytest.mark.skipif(not cuda_host.available(), reason="needs a C++20 compiler")
@pytest.mark.parametrize("shape", [(2, 3, 12, 10), (12, 10), (1, 5, 9), (2, 1, 7, 7)])
def test_direct_gives_geqrfs_layout_for_any_batch_dims(monkeypatch, shape):
    monkeypatch.setattr(geqrf_small_cuda, "launch", cuda_host.geqrf_small_launch)
    A = torch.randn(*shape, generator=torch.Generator().manual_seed(len(shape)))
    keep = A.clone()
    a, tau = small.direct(A)
    ref_a, ref_tau = torch.geqrf(A)
    assert torch.equal(A, keep)
    assert a.shape == ref_a.shape and a.stride() == ref_a.stride()
    assert tau.shape == ref_tau.shape and tau.stride() == ref_tau.stride()
    m, n = shape[-2:]
    r = check_geqrf(A.reshape(-1, m, n), a.reshape(-1, m, n), tau.reshape(-1, min(m, n)))
    assert r.passes_bar, r.summary
    torch.testing.assert_close(tau, ref_tau, rtol=0, atol=1e-5)


@pytest.mark.skipif(not cuda_host.available(), reason="needs a C++20 compiler")
def test_impl_factors_the_dispatchers_buffer_in_place(monkeypatch):
    monkeypatch.setattr(geqrf_small_cuda, "launch", cuda_host.geqrf_small_launch)
    A = torch.randn(3, 16, 12, generator=torch.Generator().manual_seed(3))
    H = A.mT.contiguous().mT
    tau = torch.empty(3, 12)
    small.factor_small(H, tau, None)
    ref_a, ref_tau = small.direct(A)
    assert torch.equal(H, ref_a) and torch.equal(tau, ref_tau)


@pytest.mark.skipif(not cuda_host.available(), reason="needs a C++20 compiler")
def test_the_dispatcher_hands_it_the_callers_tensor(monkeypatch, clean_dispatch):
    # Through adaptqr.geqrf: a path with `direct` (here the small path's, its kernel on the
    # host shim, declared for CPU tensors) gets the caller's strided tensor itself, and the
    # decisions log records the call with the path.
    from adaptqr import log
    from adaptqr.registry import REGISTRY, Path

    monkeypatch.setattr(geqrf_small_cuda, "launch", cuda_host.geqrf_small_launch)
    got = []

    def direct(A):
        got.append(A)
        return small.direct(A)

    REGISTRY.ensure_builtins()
    REGISTRY.add(Path(name="small_on_cpu", impl=small.factor_small, priority=-100,
                      supports=lambda spec: None if spec.device_type == "cpu" else "CPU only",
                      direct=direct))
    try:
        A = torch.randn(6, 16, 20, generator=torch.Generator().manual_seed(8)).mT[::2]
        keep = A.clone()
        log.enable()
        a, tau = adaptqr.geqrf(A, path="small_on_cpu")
        rec = adaptqr.decisions()[-1]
    finally:
        log.disable()
        REGISTRY.remove("small_on_cpu")
    assert len(got) == 1 and got[0] is A and torch.equal(A, keep)
    ref_a, ref_tau = torch.geqrf(A)
    assert a.stride() == ref_a.stride()
    torch.testing.assert_close(tau, ref_tau, rtol=0, atol=1e-5)
    assert check_geqrf(A, a, tau).passes_bar
    assert rec["plan"]["dense"] == "small_on_cpu" and rec["mode"] == "eager"
