"""The decisions log: off costs nothing, records are right, bounded, mirrored when asked."""

from __future__ import annotations

import json
import logging

import pytest
import torch

import adaptqr
from adaptqr import config, dispatch, log
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


def test_panel_kinds_per_matrix(monkeypatch):
    # A path that describes its panels (Path.panels): each matrix it takes gets its panels
    # by kernel in the record and in explain, those at or past its n_active as skipped;
    # a matrix of another path gets None.
    class Det:
        def route(self, H, src=None, settings=None):
            if src is not None:
                H.copy_(src)
            return (torch.tensor([0, 0, route_code("lowrank")], dtype=torch.int32),
                    {"n_active": torch.tensor([8, 3, 8], dtype=torch.int32)})

        def finish_tail(self, H, tau, n_active):  # a routed path's tail: nothing to do here
            pass

    monkeypatch.setattr(dispatch, "detectors", lambda: Det())

    def fac(H, tau, info):
        a, t = torch.geqrf(H)
        H.copy_(a)
        tau.copy_(t)

    seen = []

    def panels(spec, device):
        seen.append((spec.batch, spec.m, spec.n, device.type))
        return 2, ["wide", "wide", "narrow", "narrow"]

    adaptqr.register_path(fac, name="described", classes={"dense"}, priority=10, routed=True,
                          panels=panels)
    adaptqr.register_path(fac, name="plain_lr", classes={"lowrank"}, priority=10)
    log.enable()
    A = torch.randn(3, 8, 8, dtype=torch.float64)
    adaptqr.geqrf(A)
    (rec,) = adaptqr.decisions()
    assert rec["plan"]["dense"] == "described" and rec["plan"]["lowrank"] == "plain_lr"
    assert rec["panels"] == [{"wide": 2, "narrow": 2}, {"wide": 2, "skipped": 2}, None]
    assert rec["panel_counts"] == {"wide": 4, "narrow": 2, "skipped": 2}
    assert seen[-1] == (3, 8, 8, "cpu")
    ex = adaptqr.explain(A)
    assert ex.panels == rec["panels"] and ex.panel_counts == rec["panel_counts"]
    assert "panels over the batch: wide 4, narrow 2, skipped 2" in str(ex)
    json.dumps(rec)


def test_tried_panels_counted_by_what_they_took():
    # A kind "base+try" (the householder path's "+gram" panels) is tried first, matrix by
    # matrix: the path gets info.panel_out, (B, panels) int32, and writes 1 where the try
    # held and 0 where the panel fell back to its base kind; the record counts each under
    # what it took, a panel at or past n_active as skipped, an unwritten entry as named.
    # explain factors nothing: it shows the kinds as planned.
    seen = []

    def fac(H, tau, info):
        a, t = torch.geqrf(H)
        H.copy_(a)
        tau.copy_(t)
        out = info.panel_out
        seen.append((tuple(out.shape), out.dtype, out.tolist()))
        out[:, 0] = torch.tensor([1, 0, 1], dtype=torch.int32)
        out[0, 1] = 0  # matrix 0's second panel fell back; the others' stay unwritten

    def panels(spec, device):
        return 3, ["cta+gram", "cta+gram", "cta"]

    adaptqr.register_path(fac, name="tried", priority=10, capturable=True, panels=panels)
    log.enable()
    A = torch.randn(3, 9, 9, dtype=torch.float64)
    a, tau = adaptqr.geqrf(A)
    torch.testing.assert_close(a, torch.geqrf(A)[0])
    assert seen == [((3, 3), torch.int32, [[-1] * 3] * 3)]
    (rec,) = adaptqr.decisions()
    assert rec["panels"] == [{"cta+gram": 1, "cta": 2}, {"cta": 2, "cta+gram": 1},
                             {"cta+gram": 2, "cta": 1}]
    assert rec["panel_counts"] == {"cta+gram": 4, "cta": 5}
    ex = adaptqr.explain(A)
    assert ex.panels == [{"cta+gram": 2, "cta": 1}] * 3
    # A path whose kinds name no try gets no panel_out.
    def plain(H, tau, info):
        seen.append(info.panel_out)
        a, t = torch.geqrf(H)
        H.copy_(a)
        tau.copy_(t)

    adaptqr.register_path(plain, name="plain", priority=20,
                          panels=lambda spec, device: (3, ["cta"] * 3))
    adaptqr.geqrf(A)
    assert seen[-1] is None


def test_tried_panel_outcomes_through_a_graph_cache():
    # Replayed, the dispatcher's in-place plan returns its slot's own outputs; the third
    # (what the tried panels took) is each call's, and the record gets a copy of it: a
    # held record must neither keep the slot busy nor see the next replay's outcomes.
    from adaptqr import config, planning
    from adaptqr.graphs.cache import GraphCache

    class Replays:  # a backend whose replay runs the captured body again
        accepts = staticmethod(lambda A: True)
        is_capturing = staticmethod(lambda A: False)
        warmup = staticmethod(lambda fn, A: tuple(fn(A)))
        begin = end = release = staticmethod(lambda h: None)

        def capture(self, thunk, device):
            outs = tuple(thunk())
            return thunk, outs, 0

        def replay(self, thunk):
            thunk()

    def fac(H, tau, info):
        a, t = torch.geqrf(H)
        H.copy_(a)
        tau.copy_(t)
        # "took the try" where the matrix's first entry is positive
        info.panel_out[:, 0] = (H[:, 0, 0] > 0).to(torch.int32)

    adaptqr.register_path(fac, name="tried", priority=10, capturable=True,
                          panels=lambda spec, device: (4, ["x+y", "x"]))
    A = torch.randn(3, 8, 8, dtype=torch.float64)
    plan = planning.plan_for(planning.spec_of(A))
    cache = GraphCache(backend=Replays())
    runner = dispatch._Runner(plan, config.snapshot())
    for _ in range(2):  # eager, then the capture
        cache.run(("k",), runner, A)
    for X in (A, -A):
        out = cache.run(("k",), runner, X)
        assert len(out) == 3 and torch.equal(out[2][:, 0], (out[0][:, 0, 0] > 0).to(torch.int32))
        kept = dispatch._outcomes(out, "graph")
        assert torch.equal(kept, out[2]) and kept.data_ptr() != out[2].data_ptr()
        assert dispatch._outcomes(out, "eager") is out[2]
        del out
    assert dispatch._outcomes((A, A), "graph") is None
    assert cache.stats()["hits"] == 2


def test_householder_describes_its_panels():
    from adaptqr.paths import householder

    cpu = torch.device("cpu")
    nb, kinds = householder.PATH.panels(dispatch.spec_of(torch.empty(2, 64, 64)), cpu)
    assert (nb, kinds) == (64, ["one-launch"])
    nb, kinds = householder.panel_kinds(640, 512, 512, cpu)
    assert nb == 32 and kinds == ["register"] * 16
    # Off the GPU no panel is row-split: a tall panel streams (nb 32 at n = 64: the table's
    # 16 is schedules.SMALL_N_NB's 32).
    assert householder.panel_kinds(2, 4096, 64, cpu) == (32, ["streamed"] * 2)
    assert log.panel_counts(32, kinds, 100) == {"register": 4, "skipped": 12}
    assert log.panel_counts(64, ["one-launch"], 64) == {"one-launch": 1}
    assert log.panel_counts(32, ["register"], 0) == {"skipped": 1}


def test_householder_names_its_gram_panels(monkeypatch):
    # H22: where CUDA C panels run (made to look so here), a batch of at most
    # GRAM_PANEL_MAX_BATCH matrices names the panels tried as CholeskyQR2 first; a panel of
    # 32 rows (one warp) or of fewer columns, and larger batches, keep the column steps,
    # but for panels of at most GRAM_SMALL_PANEL_ROWS rows up to GRAM_SMALL_PANEL_MAX_BATCH
    # matrices (H51b). At batch 1 the panels of 257-512 rows and (H48b) of 129-256 rows run
    # in clusters.
    from adaptqr.paths import householder, panel_plan, schedules
    from adaptqr.paths.kernels import panel_cuda

    monkeypatch.setattr(panel_plan, "_cuda_panels", lambda want, nb, device: want)
    monkeypatch.setattr(panel_cuda, "cluster_available", lambda: True)
    cpu = torch.device("cpu")
    nb, kinds = householder.panel_kinds(1, 512, 512, cpu)
    assert nb == 32
    assert kinds == (["cluster-cuda+gram"] * 12 + ["register-cuda+gram"] * 3
                     + ["register-cuda"])
    kinds = householder.panel_kinds(1, 1000, 1000, cpu)[1]
    assert kinds[-1] == "register-cuda" and kinds[-2] == "register-cuda+gram"
    mid = householder.panel_kinds(schedules.GRAM_PANEL_MAX_BATCH + 1, 512, 512, cpu)[1]
    assert mid == ["register-cuda"] * 8 + ["register-cuda+gram"] * 7 + ["register-cuda"]
    big = schedules.GRAM_SMALL_PANEL_MAX_BATCH + 1
    plain = householder.panel_kinds(big, 512, 512, cpu)[1]
    assert len(plain) == 16 and not any("+gram" in k for k in plain)
    with config.experiment(gram_panel=0):
        assert not any("+gram" in k for k in householder.panel_kinds(1, 512, 512, cpu)[1])
    with config.experiment(gram_max_batch=640):
        assert householder.panel_kinds(big, 512, 512, cpu)[1] == [k + "+gram" for k in plain[:15]] + plain[15:]
    assert log.panel_counts(32, kinds, 1000) == {"cluster-cuda+gram": 28,
                                                 "register-cuda+gram": 3,
                                                 "register-cuda": 1}
