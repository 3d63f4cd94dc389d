"""CPU tests of the adaptqr command line: argument parsing, case selection, check exit codes,
explain's case lookup, and an end-to-end `python -m adaptqr bench --quick` in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from adaptqr import cli
from adaptqr.bench import cases, report

SMALL = [{"batch": 2, "n": 16, "cond": 1, "seed": 11}, {"batch": 2, "n": 24, "cond": 0, "seed": 12, "case": "band"}]


def _cases_file(tmp_path, items=SMALL):
    p = tmp_path / "cases.json"
    p.write_text(json.dumps(items))
    return str(p)


def test_bench_arguments():
    a = cli.build_parser().parse_args(["bench", "--cases", "tests", "--paths", "a,b", "--repeats", "7", "--quick",
                                       "--out", "X", "--baseline-refresh", "--plot", "--device", "cpu"])
    assert (a.cases, a.paths, a.repeats, a.quick, a.out, a.baseline_refresh, a.no_baseline, a.plot, a.device) == \
        ("tests", "a,b", 7, True, "X", True, False, True, "cpu")
    d = cli.build_parser().parse_args(["bench"])
    assert d.cases is None and d.out == os.path.join("bench", "results") and d.repeats is None and not d.quick


@pytest.mark.parametrize("argv", [["bench", "--baseline-refresh", "--no-baseline"], ["bench", "--repeats", "0"],
                                  ["bench", "--repeats", "x"], ["frobnicate"], []])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.build_parser().parse_args(argv)
    assert e.value.code == 2


def test_check_and_explain_arguments():
    c = cli.build_parser().parse_args(["check", "--cases", "bench", "--path", "reference"])
    assert (c.cases, c.path) == ("bench", "reference")
    e = cli.build_parser().parse_args(["explain", "--batch", "4", "--n", "64", "--case-kind", "band", "--cond", "0",
                                       "--seed", "9"])
    assert (e.batch, e.n, e.case_kind, e.cond, e.seed) == (4, 64, "band", 0.0, 9)


def test_parse_paths():
    assert cli._parse_paths(None) == [None]
    assert cli._parse_paths("a, b,a") == ["a", "b"]
    with pytest.raises(ValueError):
        cli._parse_paths(" , ")


def test_select_cases_on_cpu(tmp_path, capsys):
    cpu = torch.device("cpu")
    got = cli._select_cases(None, cpu, "bench", cases.CPU_BENCH_CASES)
    assert got == [cases.normalize(c) for c in cases.CPU_BENCH_CASES]
    assert "needs a GPU" in capsys.readouterr().err
    got = cli._select_cases("tests", cpu, "tests", cases.CPU_CHECK_CASES)
    assert [(c["batch"], c["n"]) for c in got] == [(20, 32)]
    assert "skipping 21 case(s)" in capsys.readouterr().err
    with pytest.raises(ValueError, match="n <= 128"):
        cli._select_cases(_cases_file(tmp_path, [{"batch": 1, "n": 4096, "cond": 0, "seed": 1}]), cpu, "x", [])


def test_explain_case_lookup():
    p = cli.build_parser()
    c = cli.explain_case(p.parse_args(["explain", "--case", "640x512 mixed"]))
    assert c == {"batch": 640, "n": 512, "cond": 2, "seed": 770001, "case": "mixed"}
    c = cli.explain_case(p.parse_args(["explain", "--case", "16x512 rowscale", "--seed", "3"]))
    assert (c["cond"], c["seed"], c["case"]) == (0, 3, "rowscale")
    c = cli.explain_case(p.parse_args(["explain", "--batch", "4", "--n", "64", "--case-kind", "band"]))
    assert (c["batch"], c["n"], c["case"]) == (4, 64, "band")
    with pytest.raises(ValueError, match="BATCHxN"):
        cli.explain_case(p.parse_args(["explain", "--case", "big one"]))


def test_main_reports_bad_cases_with_exit_2(capsys):
    assert cli.main(["check", "--cases", "nonsense", "--device", "cpu"]) == 2
    assert "nonsense" in capsys.readouterr().err


def test_check_exit_codes(tmp_path, monkeypatch, capsys):
    import adaptqr

    f = _cases_file(tmp_path)
    monkeypatch.setattr(adaptqr, "geqrf", lambda a, path=None: torch.geqrf(a), raising=False)
    assert cli.main(["check", "--cases", f, "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "2/2 cases pass" in out and "2x16 dense" in out

    def garbage(a, path=None):
        return torch.randn(a.shape).mT.contiguous().mT, torch.rand(a.shape[:-1])

    monkeypatch.setattr(adaptqr, "geqrf", garbage, raising=False)
    assert cli.main(["check", "--cases", f, "--device", "cpu"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_check_forwards_the_path(tmp_path, monkeypatch, capsys):
    import adaptqr

    seen = []
    monkeypatch.setattr(adaptqr, "geqrf", lambda a, path=None: seen.append(path) or torch.geqrf(a), raising=False)
    assert cli.main(["check", "--cases", _cases_file(tmp_path), "--path", "reference", "--device", "cpu"]) == 0
    assert seen == ["reference", "reference"]


def test_bench_in_process_writes_record(tmp_path, monkeypatch, capsys):
    import adaptqr

    monkeypatch.setattr(adaptqr, "geqrf", lambda a, path=None: torch.geqrf(a), raising=False)
    out = tmp_path / "res"
    rc = cli.main(["bench", "--cases", _cases_file(tmp_path), "--quick", "--out", str(out), "--device", "cpu",
                   "--plot"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "median ms" in text and "2x24 band" in text and "geomean" in text
    js = list(out.glob("*.json"))
    assert len(js) == 1 and len(list(out.glob("*.csv"))) == 1
    rec = json.loads(js[0].read_text())
    assert report.validate_record(rec) == []
    assert rec["settings"]["quick"] is True and len(rec["cases"]) == 2
    try:
        import matplotlib  # noqa: F401
        assert len(list(out.glob("*.png"))) == 1
    except ImportError:
        assert "matplotlib is not importable" in text


def test_bench_quick_end_to_end_on_cpu(tmp_path):
    """The real thing: `python -m adaptqr bench --quick` with adaptqr.geqrf, no GPU."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    r = subprocess.run([sys.executable, "-m", "adaptqr", "bench", "--quick", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "needs a GPU" in r.stderr
    for c in cases.CPU_BENCH_CASES:
        assert cases.case_name(c) in r.stdout
    assert "torch.geqrf geomean" in r.stdout
    rec = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert report.validate_record(rec) == []
    assert rec["summary"]["adaptqr"]["complete"]


def test_explain_prints_the_explanation_of_the_generated_input(monkeypatch, capsys):
    import adaptqr

    seen = []
    monkeypatch.setattr(adaptqr, "explain", lambda a: seen.append(tuple(a.shape)) or "EXPLAINED", raising=False)
    assert cli.main(["explain", "--batch", "3", "--n", "16", "--case-kind", "band", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert seen == [(3, 16, 16)] and "EXPLAINED" in out and "3x16 band" in out
    monkeypatch.setattr(adaptqr, "explain", lambda a: {"plan": {"dense": "torch"}}, raising=False)
    assert cli.main(["explain", "--case", "20x32", "--device", "cpu"]) == 0
    assert json.loads(capsys.readouterr().out.split("\n", 1)[1]) == {"plan": {"dense": "torch"}}


def test_knob_variants_parse_and_fail_early():
    # adaptqr bench --knobs: experiment knobs are no environment variables (issue 23).
    from adaptqr import cli

    assert cli._parse_knob_variants(["ieeetail:tail_prec=ieee", "rows:split_min_rows=128"]) == [
        ("ieeetail", {"tail_prec": "ieee"}), ("rows", {"split_min_rows": 128})]
    for bad in ("x:tailprec=ieee", "x:tail_prec=fp8", "x:split_min_rows=100", "nocolon"):
        with pytest.raises(ValueError):
            cli._parse_knob_variants([bad])
