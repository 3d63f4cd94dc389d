"""The decisions log: off costs nothing, records are right, bounded, mirrored when asked."""

from __future__ import annotations

import json
import logging

import pytest
import torch

import adaptqr
from adaptqr import dispatch, log
from adaptqr.registry import route_code

pytestmark = pytest.mark.usefixtures("clean_dispatch")  # tests/conftest.py


def test_off_builds_no_record(monkeypatch):
    def forbidden(*a, **k):
        raise AssertionError("a Record was built while the log is off")

    monkeypatch.setattr(log, "Record", forbidden)
    monkeypatch.setattr(log, "record", forbidden)
    adaptqr.geqrf(torch.randn(3, 4, 4))
    adaptqr.geqrf(torch.randn(0, 4, 4))
    adaptqr.geqrf(torch.randn(2, 5, 3, dtype=torch.complex64))
    assert adaptqr.decisions() == []
    assert not log.active()


def test_record_contents(monkeypatch):
    class Det:
        def route(self, H, src=None, settings=None):
            if src is not None:
                H.copy_(src)
            return (torch.tensor([0, route_code("lowrank"), 0], dtype=torch.int32),
                    {"n_active": torch.tensor([4, 2, 4], dtype=torch.int32)})

    monkeypatch.setattr(dispatch, "detectors", lambda: Det())

    def lr(H, tau, info):
        a, t = torch.geqrf(H)
        H.copy_(a)
        tau.copy_(t)

    adaptqr.register_path(lr, name="lr_logged", classes={"lowrank"}, priority=10)
    log.enable()
    adaptqr.geqrf(torch.randn(3, 4, 4, dtype=torch.float64))
    # routes stay a tensor inside the buffer until read
    assert isinstance(log._buffer[-1].routes, torch.Tensor)
    (rec,) = adaptqr.decisions()
    assert rec["shape"] == [3, 4, 4] and rec["dtype"] == "float64" and rec["device"] == "cpu"
    assert rec["forced"] is None and rec["mode"] == "eager" and rec["probed"]
    assert rec["plan"] == {"dense": "torch", "lowrank": "lr_logged", "upper": "torch"}
    assert rec["routes"] == [0, 1, 0]
    assert rec["counts"] == {"dense": 2, "lowrank": 1, "upper": 0}
    names = [r[0] for r in rec["rejected"]]
    assert "reference" in names
    json.dumps(rec)  # plain data


def test_forced_and_empty_records():
    log.enable()
    adaptqr.geqrf(torch.randn(2, 3, 3), path="torch")
    adaptqr.geqrf(torch.randn(2, 0, 3))
    r1, r2 = adaptqr.decisions()
    assert r1["forced"] == "torch" and r1["routes"] == [0, 0] and not r1["probed"]
    assert any("not forced" in reason for _, reason in r1["rejected"])
    assert r2["mode"] == "empty" and r2["plan"] == {}


def test_bounded_and_n(monkeypatch):
    monkeypatch.setenv("ADAPTQR_LOG_SIZE", "3")
    log.enable()
    for b in range(1, 6):
        adaptqr.geqrf(torch.randn(b, 2, 2))
    recs = adaptqr.decisions()
    assert [r["shape"][0] for r in recs] == [3, 4, 5]
    assert recs[0]["seq"] < recs[1]["seq"] < recs[2]["seq"]
    assert [r["shape"][0] for r in adaptqr.decisions(2)] == [4, 5]
    assert adaptqr.decisions(0) == []
    with pytest.raises(ValueError):
        adaptqr.decisions(-1)
    adaptqr.clear_decisions()
    assert adaptqr.decisions() == []


def test_env_mirror_to_logger(monkeypatch, caplog):
    monkeypatch.setenv("ADAPTQR_LOG", "1")
    assert log.active()
    with caplog.at_level(logging.INFO, logger="adaptqr.dispatch"):
        adaptqr.geqrf(torch.randn(2, 3, 3))
    msgs = [r.getMessage() for r in caplog.records if r.name == "adaptqr.dispatch"]
    assert len(msgs) == 1 and json.loads(msgs[0])["shape"] == [2, 3, 3]
    assert len(adaptqr.decisions()) == 1


def test_env_jsonl_file(monkeypatch, tmp_path):
    path = tmp_path / "decisions.jsonl"
    monkeypatch.setenv("ADAPTQR_LOG", str(path))
    adaptqr.geqrf(torch.randn(2, 3, 3))
    adaptqr.geqrf(torch.randn(1, 4, 2))
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["shape"] for x in lines] == [[2, 3, 3], [1, 4, 2]]


def test_env_zero_is_off(monkeypatch):
    monkeypatch.setenv("ADAPTQR_LOG", "0")
    assert not log.active()
    adaptqr.geqrf(torch.randn(2, 3, 3))
    assert adaptqr.decisions() == []
