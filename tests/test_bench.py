"""CPU tests of the bench harness: cases, k, statistics, stop rule, baseline cache, record schema,
refusal to time a failing case. Everything here runs in a few seconds without a GPU."""

from __future__ import annotations

import json
import math
import os

import pytest
import torch

from adaptqr.bench import baseline, cases, report, stats
from adaptqr.bench.decisions import paths_of_record
from adaptqr.bench.runner import BenchOptions, run_bench, summarize
from adaptqr.bench.timing import StopRule, time_calls

TINY = [{"batch": 3, "n": 16, "cond": 1, "seed": 5, "case": "dense"},
        {"batch": 2, "n": 24, "cond": 2, "seed": 6, "case": "mixed"}]


# ---------------------------------------------------------------- statistics and stop rule

def test_geomean():
    assert stats.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert stats.geomean([5.0]) == pytest.approx(5.0)
    assert stats.geomean([1e-3, 1e3, 1.0]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        stats.geomean([])
    with pytest.raises(ValueError):
        stats.geomean([1.0, 0.0])


def test_rel_stderr():
    xs = [1.0, 2.0, 3.0, 4.0]
    expect = (math.sqrt(sum((x - 2.5) ** 2 for x in xs) / 3) / 2) / 2.5
    assert stats.rel_stderr(xs) == pytest.approx(expect)
    assert stats.rel_stderr([1.0]) == math.inf


def test_stop_rule_stderr_and_limits():
    rule = StopRule(max_repeats=100, budget_s=10.0, min_repeats=3)
    steady = [1.0, 1.0001, 0.9999]
    assert not rule.done(steady[:2], 0.0)             # below min_repeats even if steady
    assert rule.done(steady, 0.0)                     # stderr ~ 3e-5 < 1e-3
    noisy = [1.0, 2.0, 1.5]
    assert not rule.done(noisy, 0.0)
    assert rule.done(noisy, 10.5)                     # over budget
    assert StopRule(max_repeats=3, budget_s=100).done(noisy, 0.0)   # max repeats
    # just above / below the 0.1 % threshold
    m = 1.0
    tight = [m * (1 + 0.0015 * s) for s in (-1, 1, -1, 1)]   # stderr = 0.0015*1.1547/2 = 8.7e-4
    loose = [m * (1 + 0.0025 * s) for s in (-1, 1, -1, 1)]   # 1.44e-3
    assert rule.done(tight, 0.0)
    assert not rule.done(loose, 0.0)


def test_time_calls_rotates_inputs_and_divides_by_k():
    seen = []
    xs = [torch.full((1, 2, 2), float(i)) for i in range(3)]
    t = time_calls(lambda a: seen.append(int(a[0, 0, 0])), xs, StopRule(max_repeats=4, budget_s=100, min_repeats=4))
    assert t.k == 3 and len(t.times_ms) == 4
    assert seen == [0, 1, 2] * 4
    assert all(x >= 0 for x in t.times_ms)


# ---------------------------------------------------------------- cases and k

def test_named_case_sets():
    assert len(cases.resolve("tests")) == 22
    bench = cases.resolve("bench")
    assert len(bench) == 12
    assert len(cases.resolve("all")) == 34
    assert cases.case_key(bench[7]) == "640x512-mixed-c2-s770001"
    cpu = cases.resolve("cpu")
    assert cpu and all(c["n"] <= cases.CPU_MAX_N for c in cpu)
    assert {c["case"] for c in cpu} == {"dense", "mixed"}
    # issue 28's one-matrix calls, the seeds of runs 1911-1933
    single = cases.resolve("single")
    assert [(c["batch"], c["n"], c["seed"]) for c in single] == [
        (1, 512, 2800), (1, 768, 2801), (1, 1024, 2802), (1, 3072, 2803), (1, 4096, 2804)]


def test_cases_from_json_file(tmp_path):
    lst = tmp_path / "l.json"
    lst.write_text(json.dumps([{"batch": 2, "n": 8, "cond": 1, "seed": 1},
                               {"batch": 2, "n": 8, "cond": 1, "seed": 1},       # duplicate: dropped
                               {"batch": 4, "n": 16, "cond": 0, "seed": 2, "case": "band"},
                               {"batch": 3, "m": 24, "n": 8, "cond": 0, "seed": 5}]))  # tall
    got = cases.resolve(str(lst))
    assert [cases.case_key(c) for c in got] == ["2x8-dense-c1-s1", "4x16-band-c0-s2",
                                                "3x24x8-dense-c0-s5"]
    obj = tmp_path / "o.json"
    obj.write_text(json.dumps({"tests": [{"batch": 1, "n": 4, "cond": 0, "seed": 3}],
                               "benchmarks": [{"batch": 1, "n": 8, "cond": 0, "seed": 4}]}))
    assert [c["n"] for c in cases.resolve(str(obj))] == [4, 8]


@pytest.mark.parametrize("content", ["{not json", json.dumps({"x": 1}), json.dumps([{"batch": 2}]), json.dumps([])])
def test_bad_case_files_raise(tmp_path, content):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(ValueError):
        cases.resolve(str(p))


def test_unknown_case_set_names_it():
    with pytest.raises(ValueError, match="nonsense"):
        cases.resolve("nonsense")


@pytest.mark.parametrize("batch,n,k", [(20, 32, 50), (40, 176, 50), (40, 352, 13), (640, 512, 1),
                                       (60, 1024, 1), (8, 2048, 2), (2, 4096, 2), (1, 4096, 4)])
def test_inputs_per_case(batch, n, k):
    assert cases.inputs_per_case(batch, n) == k
    assert k == max(1, min(50, (256 << 20) // (batch * n * n * 4)))


def test_cpu_subset():
    kept, skipped = cases.cpu_subset(cases.resolve("tests"))
    assert [c["n"] for c in kept] == [32]
    assert len(skipped) == 21


def test_published_baseline_matches_spec_geomean():
    pub = cases.published_h200_ms()
    assert len(pub) == 12
    assert pub["640x512-dense-c2-s1029"] == pytest.approx(994.923)
    assert stats.geomean(list(pub.values())) * 1e3 == pytest.approx(116445, rel=1e-3)


# ---------------------------------------------------------------- baseline cache

def test_baseline_cache_keyed_by_device_and_torch(tmp_path):
    d = str(tmp_path)
    baseline.save(d, "NVIDIA H200", "2.11.0+cu130", {"a": {"median_ms": 1.0, "mean_ms": 1.1}})
    baseline.save(d, "NVIDIA H200", "2.11.0+cu130", {"b": {"median_ms": 2.0, "mean_ms": 2.2}})   # merges
    baseline.save(d, "NVIDIA B200", "2.11.0+cu130", {"a": {"median_ms": 9.0, "mean_ms": 9.0}})
    got = baseline.load(d, "NVIDIA H200", "2.11.0+cu130")
    assert got["a"]["median_ms"] == 1.0 and got["b"]["median_ms"] == 2.0
    assert baseline.load(d, "NVIDIA B200", "2.11.0+cu130")["a"]["median_ms"] == 9.0
    assert baseline.load(d, "NVIDIA H200", "2.12.0") == {}
    assert baseline.load(d, "NVIDIA H100", "2.11.0+cu130") == {}
    path = baseline.cache_path(d, "NVIDIA H200", "2.11.0+cu130")
    assert path.endswith("nvidia-h200__torch-2-11-0-cu130.json")
    data = json.loads(open(path).read())
    assert data["device"] == "NVIDIA H200" and data["torch"] == "2.11.0+cu130"
    # a newer measurement replaces the old one
    baseline.save(d, "NVIDIA H200", "2.11.0+cu130", {"a": {"median_ms": 0.5, "mean_ms": 0.5}})
    assert baseline.load(d, "NVIDIA H200", "2.11.0+cu130")["a"]["median_ms"] == 0.5
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_baseline_cache_ignores_a_slug_collision_and_rejects_garbage(tmp_path):
    d = str(tmp_path)
    baseline.save(d, "NVIDIA H200", "2.11.0", {"a": {"median_ms": 1.0}})
    # "nvidia h200" slugs to the same file name but is not the same device string
    assert baseline.load(d, "nvidia h200", "2.11.0") == {}
    with open(baseline.cache_path(d, "X", "1"), "w") as f:
        f.write("{broken")
    with pytest.raises(ValueError, match="baseline cache"):
        baseline.load(d, "X", "1")


def test_baseline_measure_cpu():
    xs = [torch.randn(2, 8, 8) for _ in range(2)]
    e = baseline.measure(xs, StopRule(max_repeats=3, budget_s=1.0))
    assert e["k"] == 2 and e["repeats"] == 3 and len(e["times_ms"]) == 3
    assert e["median_ms"] > 0 and e["extra_mib"] is None


# ---------------------------------------------------------------- runner and record

def _opts(geqrf, **kw):
    kw.setdefault("rule", StopRule(max_repeats=3, budget_s=1.0))
    kw.setdefault("baseline", "none")
    return BenchOptions(device=torch.device("cpu"), geqrf=geqrf, max_inputs=2, progress=lambda m: None, **kw)


def test_record_schema_and_values():
    rec = run_bench(TINY, _opts(torch.geqrf, baseline="cache", baseline_rule=StopRule(max_repeats=3, budget_s=1.0)))
    assert report.validate_record(rec) == []
    assert json.loads(json.dumps(rec)) == rec          # plain JSON data
    assert rec["device"]["type"] == "cpu" and rec["git"]["commit"]
    assert set(rec["versions"]) >= {"torch", "triton", "cupy"}
    for c in rec["cases"]:
        r = c["results"]["adaptqr"]
        assert r["status"] == "ok" and r["passes_bar"] is True
        assert r["median_ms"] > 0 and len(r["times_ms"]) == r["repeats"] >= 1
        assert c["baseline"]["source"] == "measured"
        assert c["speedup"]["adaptqr"] == pytest.approx(c["baseline"]["median_ms"] / r["median_ms"])
        assert c["k"] == 2
    s = rec["summary"]["adaptqr"]
    assert s["complete"] and s["n_timed"] == 2
    medians = [c["results"]["adaptqr"]["median_ms"] for c in rec["cases"]]
    assert s["geomean_median_ms"] == pytest.approx(stats.geomean(medians))
    assert s["geomean_speedup"] == pytest.approx(s["baseline_geomean_median_ms"] / s["geomean_median_ms"])


def _garbage(a):
    h = torch.randn(a.shape[0], a.shape[-1], a.shape[-1]).mT
    return h, torch.rand(a.shape[0], a.shape[-1])


def test_failing_case_is_not_timed(monkeypatch):
    import adaptqr

    monkeypatch.setattr(adaptqr, "geqrf", _garbage, raising=False)
    rec = run_bench(TINY[:1], _opts(None))
    r = rec["cases"][0]["results"]["adaptqr"]
    assert r["status"] == "FAILED" and r["passes_bar"] is False
    assert r["times_ms"] == [] and r["median_ms"] is None and r["repeats"] == 0
    assert r["worst_factor"] > report.FACTOR_BAR
    assert r["failing_inputs"] and r["failing_inputs"][0]["input"] == 0
    assert rec["summary"]["adaptqr"]["n_failed"] == 1 and rec["summary"]["adaptqr"]["geomean_median_ms"] is None
    assert report.validate_record(rec) == []
    assert "FAILED" in report.render_table(rec)


def test_input_modified_in_place_fails():
    def clobber(a):
        out = torch.geqrf(a)
        a.zero_()
        return out

    rec = run_bench(TINY[:1], _opts(clobber))
    r = rec["cases"][0]["results"]["adaptqr"]
    assert r["status"] == "FAILED" and r["failing_inputs"][0]["input_modified"] is True


def test_library_error_is_reported_per_case():
    calls = []

    def boom(a, path=None):
        calls.append(path)
        raise RuntimeError("no path takes this")

    rec = run_bench(TINY, _opts(boom, paths=["x"]))
    assert calls == ["x", "x"]
    for c in rec["cases"]:
        r = c["results"]["adaptqr[x]"]
        assert r["status"] == "error" and "no path takes this" in r["error"] and r["times_ms"] == []


def test_paths_compare_variants():
    got = []

    def lib(a, path=None):
        got.append(path)
        return torch.geqrf(a)

    rec = run_bench(TINY[:1], _opts(lib, paths=["p1", "p2"]))
    assert rec["variants"] == ["adaptqr[p1]", "adaptqr[p2]"]
    assert set(rec["cases"][0]["results"]) == {"adaptqr[p1]", "adaptqr[p2]"}
    assert {"p1", "p2"} <= set(got)
    assert report.validate_record(rec) == []


def test_env_variants_run_under_their_environment_and_restore_it(monkeypatch):
    monkeypatch.delenv("ADAPTQR_GRAPHS", raising=False)
    seen = []

    def lib(a, path=None):
        seen.append(os.environ.get("ADAPTQR_GRAPHS"))
        return torch.geqrf(a)

    rec = run_bench(TINY[:1], _opts(lib, env_variants=[("nographs", {"ADAPTQR_GRAPHS": "0"})]))
    assert rec["variants"] == ["adaptqr", "adaptqr[nographs]"]
    res = rec["cases"][0]["results"]
    assert res["adaptqr[nographs]"]["env"] == {"ADAPTQR_GRAPHS": "0"} and "env" not in res["adaptqr"]
    assert None in seen and "0" in seen           # the default ran without it, the variant with it
    assert "ADAPTQR_GRAPHS" not in os.environ      # restored after the variant
    assert report.validate_record(rec) == []


def test_env_variant_parsing():
    from adaptqr.cli import _parse_env_variants

    assert _parse_env_variants(["nographs:ADAPTQR_GRAPHS=0", "x:A=1,B=2"]) == [
        ("nographs", {"ADAPTQR_GRAPHS": "0"}), ("x", {"A": "1", "B": "2"})]
    for bad in ["nographs", "n:ADAPTQR_GRAPHS", ":A=1", "n:=1"]:
        with pytest.raises(ValueError, match="--env"):
            _parse_env_variants([bad])


def test_commit_hint_when_git_cannot_say(monkeypatch, tmp_path):
    from adaptqr.bench import env as bench_env

    monkeypatch.setenv("ADAPTQR_COMMIT", "abc123")
    assert bench_env.git_info(str(tmp_path))["commit"] == "abc123"
    monkeypatch.delenv("ADAPTQR_COMMIT")
    assert bench_env.git_info(str(tmp_path))["commit"] == "unknown"


def test_published_baseline_is_the_fallback():
    bench12 = cases.resolve("bench")
    entry = {"name": "x", "key": cases.case_key(bench12[0]), "results": {"adaptqr": {"status": "ok", "median_ms": 0.028,
             "mean_ms": 0.03}}, "baseline": {"source": "published_h200", "median_ms": 0.28},
             "speedup": {"adaptqr": 10.0}}
    s = summarize([entry], ["adaptqr"])["adaptqr"]
    assert s["geomean_speedup"] == pytest.approx(10.0) and s["baseline_sources"] == ["published_h200"]


def test_summary_geomean_over_paired_cases_only():
    def e(ours, base, status="ok"):
        return {"results": {"v": {"status": status, "median_ms": ours, "mean_ms": ours}},
                "baseline": None if base is None else {"source": "cache", "median_ms": base},
                "speedup": {"v": None if (base is None or status != "ok") else base / ours}}

    s = summarize([e(1.0, 100.0), e(4.0, 100.0), e(2.0, None), e(None, 50.0, "FAILED")], ["v"])["v"]
    assert s["n_cases"] == 4 and s["n_timed"] == 3 and s["n_failed"] == 1 and not s["complete"]
    assert s["geomean_median_ms"] == pytest.approx(2.0)            # (1*4*2)^(1/3)
    assert s["n_speedup"] == 2 and s["geomean_speedup"] == pytest.approx(50.0)   # sqrt(100*25)


def test_validate_record_catches_problems():
    rec = run_bench(TINY[:1], _opts(torch.geqrf))
    assert report.validate_record(rec) == []
    bad = json.loads(json.dumps(rec))
    del bad["git"]
    assert any("git" in e for e in report.validate_record(bad))
    bad = json.loads(json.dumps(rec))
    r = bad["cases"][0]["results"]["adaptqr"]
    r["status"] = "FAILED"
    assert any("must not be timed" in e for e in report.validate_record(bad))
    bad["cases"][0]["results"]["adaptqr"]["median_ms"] = "fast"
    assert any("median_ms" in e for e in report.validate_record(bad))


def test_write_files_names_and_no_overwrite(tmp_path):
    rec = run_bench(TINY[:1], _opts(torch.geqrf))
    rec["date"] = "2026-11-29T10:15:03+00:00"
    j1, c1 = report.write_files(rec, str(tmp_path))
    j2, _ = report.write_files(rec, str(tmp_path))
    slug = rec["device"]["slug"]
    assert os.path.basename(j1) == f"{slug}_2026-11-29_1015.json"
    assert os.path.basename(j2) == f"{slug}_2026-11-29_1015-2.json"
    assert os.path.basename(c1) == f"{slug}_2026-11-29_1015.csv"
    assert json.loads(open(j1).read())["cases"][0]["key"] == "3x16-dense-c1-s5"
    lines = open(c1).read().splitlines()
    assert lines[0].split(",") == report.CSV_FIELDS and len(lines) == 2


def test_paths_of_record():
    assert paths_of_record({"plan": {"dense": "hh", "clustered": "skip", "band": "hh"},
                            "counts": {"dense": 5, "clustered": 2, "band": 1, "rankdef": 0}}) == ["hh:6", "skip:2"]
    assert paths_of_record({"plan": {}}) is None
    assert paths_of_record(None) is None


def test_git_info_outside_a_checkout(tmp_path):
    from adaptqr.bench.env import git_info

    assert git_info(str(tmp_path)) == {"commit": "unknown", "dirty": None}


@pytest.mark.parametrize("mod", ["stats", "timing", "cases", "baseline", "env", "memory", "decisions", "report"])
def test_docstring_examples_run(mod):
    import doctest
    import importlib

    res = doctest.testmod(importlib.import_module(f"adaptqr.bench.{mod}"))
    assert res.failed == 0 and res.attempted > 0


# ---------------------------------------------------------------- on a GPU

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.gpu
@needs_cuda
def test_cuda_timing_and_memory_accounting():
    from adaptqr.bench.memory import MIB, extra_memory_bytes

    xs = [torch.randn(4, 64, 64, device="cuda") for _ in range(3)]
    t = time_calls(torch.geqrf, xs, StopRule(max_repeats=5, budget_s=5.0))
    assert t.k == 3 and 3 <= len(t.times_ms) <= 5 and all(x > 0 for x in t.times_ms)

    def with_workspace(a):
        ws = torch.empty(8 << 20, dtype=torch.uint8, device=a.device)   # 8 MiB scratch, freed on return
        ws.zero_()
        return a * 2

    extra = extra_memory_bytes(with_workspace, xs[0])
    assert 8 * MIB <= extra < 9 * MIB


@pytest.mark.gpu
@needs_cuda
def test_cuda_bench_record(tmp_path):
    rec = run_bench(TINY, BenchOptions(device=torch.device("cuda"), geqrf=torch.geqrf, progress=lambda m: None,
                                       rule=StopRule(max_repeats=5, budget_s=2.0), baseline="refresh",
                                       baseline_rule=StopRule(max_repeats=3, budget_s=2.0), cache_dir=str(tmp_path)))
    assert report.validate_record(rec) == []
    assert rec["device"]["type"] == "cuda" and rec["summary"]["adaptqr"]["complete"]
    name = torch.cuda.get_device_name()
    assert set(baseline.load(str(tmp_path), name, torch.__version__)) == {cases.case_key(c) for c in TINY}


def test_commit_hint_wins_over_a_checkout(monkeypatch):
    # A working tree copied to a GPU machine may carry a stale .git: the hint is the truth.
    from adaptqr.bench.env import git_info

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    monkeypatch.delenv("ADAPTQR_COMMIT", raising=False)
    real = git_info(repo)["commit"]
    monkeypatch.setenv("ADAPTQR_COMMIT", "0123abc")
    assert git_info(repo) == {"commit": "0123abc", "dirty": None, "source": "ADAPTQR_COMMIT"}
    assert real != "0123abc"


# ---------------------------------------------------------------- --op (issue 25)

@pytest.mark.parametrize("op", ["householder_product", "qr"])
def test_ops_are_checked_timed_and_compared_with_torch(op):
    cases_ = TINY + [{"batch": 2, "m": 40, "n": 12, "cond": 0, "seed": 7, "case": "dense"}]
    rec = run_bench(cases_, _opts(None, op=op, baseline="cache", baseline_rule=StopRule(max_repeats=3, budget_s=1.0)))
    assert report.validate_record(rec) == []
    assert rec["settings"]["op"] == op
    for c in rec["cases"]:
        r = c["results"]["adaptqr"]
        assert r["status"] == "ok" and r["passes_bar"] is True, r
        assert c["key"].endswith(":" + op)
        assert c["baseline"]["source"] == "measured" and c["baseline"]["median_ms"] > 0
    assert "torch.linalg." in report.render_table(rec)


def test_op_check_fails_a_wrong_result(monkeypatch):
    import adaptqr

    monkeypatch.setattr(adaptqr, "householder_product", lambda h, tau: torch.linalg.householder_product(h, tau * 1.5))
    rec = run_bench(TINY[:1], _opts(None, op="householder_product"))
    assert rec["cases"][0]["results"]["adaptqr"]["status"] == "FAILED"


def test_unknown_op_and_paths_with_another_op():
    from adaptqr.bench.ops import get_op

    with pytest.raises(ValueError, match="unknown --op"):
        get_op("lu")
    with pytest.raises(ValueError, match="--op geqrf only"):
        get_op("qr").library(None, "householder")


def test_tall_cases():
    c = cases.normalize({"batch": 64, "m": 1024, "n": 256, "seed": 1})
    assert cases.case_key(c) == "64x1024x256-dense-c0-s1" and cases.case_name(c).startswith("64x1024x256 dense")
    assert cases.inputs_per_case(64, 256, 1024) == 4  # 64 MiB an input
    from adaptqr.testing import make_inputs

    (a,) = make_inputs({"batch": 2, "m": 10, "n": 4, "cond": 0, "seed": 3}, 1, "cpu")
    assert a.shape == (2, 10, 4)
    with pytest.raises(ValueError, match="rectangular"):
        cases.normalize({"batch": 2, "m": 10, "n": 4, "seed": 3, "case": "rankdef"})
    assert [cases.case_key(x) for x in cases.resolve("optimizer")][0] == "64x1024x256-dense-c0-s2501"


def test_compile_variant_is_checked_and_timed():
    rec = run_bench(TINY[:1], _opts(None, compile_modes=["default"]))
    assert rec["variants"] == ["adaptqr", "adaptqr[compile:default]"]
    r = rec["cases"][0]["results"]["adaptqr[compile:default]"]
    assert r["status"] == "ok" and r["passes_bar"] is True and r["median_ms"] > 0


def test_run_variant_warms_up_before_timing(monkeypatch):
    # One input: the check's call, then two more, so that the graph cache's capture (a
    # key's 2nd call) is not a timed repeat.
    from adaptqr.bench import runner

    calls = []

    def fn(a):
        calls.append(a.shape)
        return torch.geqrf(a)

    seen = []
    real = runner.time_calls

    def spy(f, inputs, rule):
        seen.append(len(calls))
        return real(f, inputs, rule)

    monkeypatch.setattr(runner, "time_calls", spy)
    for k in (1, 2, 4):
        calls.clear()
        inputs = [torch.randn(2, 8, 8, dtype=torch.float64) for _ in range(k)]
        r = runner.run_variant(fn, None, inputs, StopRule(max_repeats=2, budget_s=1.0))
        assert r["status"] == "ok", r
    assert seen == [runner.WARM_CALLS, runner.WARM_CALLS, 4]
