"""The qr_v2 case lists and the torch.geqrf H200 baseline, from ``qr_v2_cases.json``.

A case is a dict with keys ``batch``, ``n``, ``cond``, ``seed`` and ``case`` (the JSON
omits ``case`` for dense; the loaders fill it in).

Example::

    >>> from adaptqr.testing.cases import bench_cases, case_name, baseline_us
    >>> c = bench_cases()[7]
    >>> case_name(c), baseline_us(c)
    ('640x512 mixed cond=2', 997506.0)
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "CASES_JSON", "test_cases", "bench_cases", "load_cases", "case_name",
    "baseline_h200", "baseline_us", "tolerance",
]

CASES_JSON = Path(__file__).with_name("qr_v2_cases.json")
_KEYS = ("batch", "n", "cond", "seed")


@lru_cache(maxsize=None)
def _data() -> dict:
    with open(CASES_JSON, encoding="utf-8") as f:
        return json.load(f)


def _normalize(c: Any, where: str) -> dict:
    if not isinstance(c, dict):
        raise ValueError(f"{where}: a case must be an object with keys {_KEYS} (+ case), got {c!r}")
    missing = [k for k in _KEYS if k not in c]
    if missing:
        raise ValueError(f"{where}: case {c!r} lacks {missing}")
    out = {k: int(c[k]) for k in _KEYS}
    out["case"] = str(c.get("case") or "dense").lower()
    # Rows of a rectangular case (the optimizers' tall shapes); square when absent.
    if c.get("m") is not None:
        out["m"] = int(c["m"])
    return out


def _normalize_all(items: Any, where: str) -> list[dict]:
    if not isinstance(items, list):
        raise ValueError(f"{where}: expected a list of cases, got {type(items).__name__}")
    return [_normalize(c, f"{where}[{i}]") for i, c in enumerate(items)]


def test_cases() -> list[dict]:
    """The 22 qr_v2 test cases (fresh dicts; callers may modify them)."""
    return _normalize_all(_data()["tests"], "tests")


# pytest collects any module-level callable named test_*; a test module that imports this
# function must not run it as a test.
test_cases.__test__ = False


def bench_cases() -> list[dict]:
    """The 12 qr_v2 benchmark cases, in the JSON's (leaderboard's) order."""
    return _normalize_all(_data()["benchmarks"], "benchmarks")


def tolerance() -> dict:
    """The spec's tolerance block (gates in units of n * eps32)."""
    return dict(_data()["tolerance"])


def baseline_h200() -> list[float]:
    """torch.geqrf on one H200, microseconds, aligned with :func:`bench_cases`."""
    return [float(x) for x in _data()["baseline_h200"]["us"]]


def _key(c: dict) -> tuple:
    c = _normalize(c, "case")
    return tuple(c[k] for k in (*_KEYS, "case"))


def baseline_us(c: dict) -> float | None:
    """The H200 torch.geqrf time of a benchmark case in microseconds, or None if unknown."""
    table = {_key(b): us for b, us in zip(bench_cases(), baseline_h200())}
    return table.get(_key(c))


def case_name(c: dict) -> str:
    """A short display name: ``"640x512 mixed cond=2"`` (``"64x1024x256 ..."`` for a tall case)."""
    rows = f"{int(c['m'])}x" if c.get("m") else ""
    return f"{int(c['batch'])}x{rows}{int(c['n'])} {c.get('case') or 'dense'} cond={c['cond']}"


def load_cases(spec: str | os.PathLike = "tests") -> list[dict]:
    """Cases by name or from a file.

    ``spec``: ``"tests"``, ``"bench"`` (or ``"benchmarks"``), ``"all"`` (tests then bench),
    or a path to a JSON file holding a list of case dicts or an object with ``"tests"``
    and/or ``"benchmarks"`` lists (both are returned, tests first).

    >>> len(load_cases("all"))
    34
    """
    s = os.fspath(spec)
    if s == "tests":
        return test_cases()
    if s in ("bench", "benchmarks"):
        return bench_cases()
    if s == "all":
        return test_cases() + bench_cases()
    p = Path(s)
    if not p.is_file():
        raise ValueError(f"load_cases: {s!r} is neither 'tests', 'bench', 'all' nor a JSON file")
    with open(p, encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, list):
        return _normalize_all(data, s)
    if isinstance(data, dict) and ("tests" in data or "benchmarks" in data):
        return (_normalize_all(data.get("tests", []), f"{s}:tests")
                + _normalize_all(data.get("benchmarks", []), f"{s}:benchmarks"))
    raise ValueError(f"load_cases: {s} must hold a list of cases or an object with 'tests'/'benchmarks'")
