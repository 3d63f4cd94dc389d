"""The cholqr path in the dispatcher (CPU side): opt-in, its reasons, the plan key, the forced
error, and the fallback notes reaching the decisions log."""

from __future__ import annotations

import pytest
import torch

import adaptqr
from adaptqr import dispatch, log

pytestmark = pytest.mark.usefixtures("clean_dispatch")  # tests/conftest.py


def _reasons(plan) -> dict:
    return dict(plan.rejected)


def test_off_by_default_with_how_to_enable():
    plan = dispatch.plan_for(dispatch.spec_of(torch.randn(2, 2048, 2048)))
    assert "ADAPTQR_CHOLQR=1" in _reasons(plan)["cholqr"]


def test_flag_is_part_of_the_plan_key(monkeypatch):
    spec = dispatch.spec_of(torch.randn(2, 2048, 2048))
    off = dispatch.plan_for(spec)
    monkeypatch.setenv("ADAPTQR_CHOLQR", "1")
    on = dispatch.plan_for(spec)
    assert on is not off
    assert "CUDA" in _reasons(on)["cholqr"]  # on, but this is a CPU tensor
    small = dispatch.plan_for(dispatch.spec_of(torch.randn(2, 512, 512)))
    assert "2048" in _reasons(small)["cholqr"]


def test_forced_on_cpu_names_the_device(monkeypatch):
    monkeypatch.setenv("ADAPTQR_CHOLQR", "1")
    with pytest.raises(ValueError, match="device cpu.*needs a CUDA tensor"):
        adaptqr.geqrf(torch.randn(1, 2048, 2048), path="cholqr")


def test_path_notes_reach_the_log():
    fb = {"from": "noting", "to": "torch", "matrices": [1], "reasons": [2]}

    def noting(H, tau, info):
        a, t = torch.geqrf(H)
        H.copy_(a)
        tau.copy_(t)
        info.notes["fallback"] = fb

    adaptqr.register_path(noting, name="noting", priority=1000)
    log.enable()
    A = torch.randn(3, 6, 6, dtype=torch.float64)
    adaptqr.geqrf(A)
    rec = adaptqr.decisions()[-1]
    assert rec["plan"]["dense"] == "noting"
    assert rec["fallback"] == fb
    adaptqr.unregister_path("noting")
    adaptqr.geqrf(A)
    assert adaptqr.decisions()[-1]["fallback"] is None
