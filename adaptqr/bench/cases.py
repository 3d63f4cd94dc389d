"""Which cases a bench or check run covers, their names, and how many rotating inputs each gets.

A case is a dict ``{"batch", "n", "cond", "seed", "case"}`` as in qr_v2_cases.json
(``"case"`` defaults to ``"dense"``; an optional ``"m"`` makes a rectangular dense case).
``--cases`` takes ``tests`` (22 cases), ``bench`` (12), ``all`` (both), ``optimizer`` (the
optimizers' shapes of issue 25), ``bench+optimizer``, ``wide`` (m < n, issue 26), ``single``
(one matrix a call, issue 28), ``cpu`` (the small CPU set) or a JSON
file holding either a list of cases or an object with ``"tests"`` and/or ``"benchmarks"``
lists.

Example::

    >>> from adaptqr.bench.cases import case_key, inputs_per_case, CPU_BENCH_CASES
    >>> case_key({"batch": 640, "n": 512, "cond": 2, "seed": 1029})
    '640x512-dense-c2-s1029'
    >>> inputs_per_case(640, 512), inputs_per_case(20, 32)
    (1, 50)
    >>> all(c["n"] <= 128 for c in CPU_BENCH_CASES)
    True
"""

from __future__ import annotations

from typing import Any

Case = dict[str, Any]

# Without CUDA only small problems finish in seconds on 2 cores (torch.geqrf on the CPU,
# float64 checks); 128 is the largest n the CPU set and CPU check use.
CPU_MAX_N = 128
# The spec's k exists to defeat the GPU's L2; on the CPU it only multiplies the check cost,
# so the CPU runs cap it.
CPU_MAX_INPUTS = 4

CPU_BENCH_CASES: list[Case] = [
    {"batch": 8, "n": 32, "cond": 1, "seed": 1101, "case": "dense"},
    {"batch": 8, "n": 64, "cond": 1, "seed": 1102, "case": "dense"},
    {"batch": 4, "n": 128, "cond": 1, "seed": 1103, "case": "dense"},
    {"batch": 8, "n": 32, "cond": 2, "seed": 1104, "case": "mixed"},
    {"batch": 8, "n": 64, "cond": 2, "seed": 1105, "case": "mixed"},
    {"batch": 4, "n": 128, "cond": 2, "seed": 1106, "case": "mixed"},
]

# Every generator profile once at a CPU-sized shape, for `adaptqr check` without CUDA.
_PROFILES = ("dense", "upper", "rankdef", "nearrank", "clustered", "band", "rowscale", "nearcollinear", "mixed")
CPU_CHECK_CASES: list[Case] = [
    {"batch": 4, "n": 64, "cond": 2 if p in ("dense", "upper", "mixed") else 0, "seed": 2100 + i, "case": p}
    for i, p in enumerate(_PROFILES)
]

#: The shapes second-order optimizers factor (issue 25): SOAP's and Dion's tall d x r
#: power-iteration blocks, and single-shape square batches of Shampoo/SOAP statistics.
OPTIMIZER_CASES: list[Case] = [
    {"batch": 64, "m": 1024, "n": 256, "cond": 0, "seed": 2501, "case": "dense"},
    {"batch": 64, "n": 512, "cond": 0, "seed": 2502, "case": "dense"},
    {"batch": 16, "n": 1024, "cond": 0, "seed": 2503, "case": "dense"},
    {"batch": 4, "n": 4096, "cond": 0, "seed": 2504, "case": "dense"},
]

#: Wide inputs (m < n), which torch.geqrf loops over on the host (issue 26).
WIDE_CASES: list[Case] = [
    {"batch": 64, "m": 256, "n": 1024, "cond": 0, "seed": 2601, "case": "dense"},
    {"batch": 8, "m": 1024, "n": 4096, "cond": 0, "seed": 2602, "case": "dense"},
]

#: One matrix a call (issue 28: at least 2x torch at n = 512, 768, 1024 and 3072; issue 24:
#: 1x4096 at least 3x).
SINGLE_CASES: list[Case] = [
    {"batch": 1, "n": n, "cond": 1, "seed": 2800 + i, "case": "dense"}
    for i, n in enumerate((512, 768, 1024, 3072, 4096))
]

NAMED_SETS = ("tests", "bench", "all", "optimizer", "bench+optimizer", "wide", "single", "cpu")


def normalize(c: Case) -> Case:
    """A copy with every key present and typed; raises ValueError naming a malformed case."""
    try:
        cond = float(c.get("cond", 0))
        out = {
            "batch": int(c["batch"]),
            "n": int(c["n"]),
            # integral conds stay ints so keys read "c2", not "c2.0"
            "cond": int(cond) if cond.is_integer() else cond,
            "seed": int(c["seed"]),
            "case": str(c.get("case", "dense")),
        }
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"malformed case {c!r}: needs batch, n, seed (and optional cond, case): {e}") from None
    if out["batch"] < 1 or out["n"] < 1:
        raise ValueError(f"malformed case {c!r}: batch and n must be >= 1")
    if c.get("m") is not None and int(c["m"]) != out["n"]:
        out["m"] = int(c["m"])
        if out["m"] < 1 or out["case"] != "dense":
            raise ValueError(f"malformed case {c!r}: a rectangular case (m != n) is dense")
    return out


def case_key(c: Case) -> str:
    """A stable identifier (baseline cache key, CSV column)."""
    c = normalize(c)
    rows = f"{c['m']}x" if "m" in c else ""
    return f"{c['batch']}x{rows}{c['n']}-{c['case']}-c{c['cond']}-s{c['seed']}"


def case_name(c: Case) -> str:
    """The short display name, e.g. ``640x512 mixed`` (the testing layer's when it has one)."""
    try:
        from adaptqr.testing import case_name as _name

        return str(_name(c))
    except ImportError:
        c = normalize(c)
        return f"{c['batch']}x{c['n']} {c['case']}"


def inputs_per_case(batch: int, n: int, m: int | None = None) -> int:
    """k of spec/qr_v2.md: enough distinct inputs to fill 256 MiB, between 1 and 50 (``m``:
    the rows of a tall case)."""
    try:
        from adaptqr.testing import inputs_per_case as _k

        return int(_k(batch, n, m))
    except ImportError:
        return max(1, min(50, (256 << 20) // (batch * (m or n) * n * 4)))


def resolve(spec: str) -> list[Case]:
    """The cases named by a ``--cases`` value, duplicates (same key) dropped, order kept.

    ``cpu`` is this module's small set; everything else (names and JSON files) is the
    testing layer's :func:`adaptqr.testing.load_cases`.
    """
    if spec == "cpu":
        cases = CPU_BENCH_CASES
    elif spec == "wide":
        cases = WIDE_CASES
    elif spec == "single":
        cases = SINGLE_CASES
    elif spec in ("optimizer", "bench+optimizer"):
        from adaptqr.testing import load_cases

        cases = (load_cases("bench") if spec != "optimizer" else []) + OPTIMIZER_CASES
    else:
        from adaptqr.testing import load_cases

        try:
            cases = load_cases(spec)
        except OSError as e:
            raise ValueError(f"--cases {spec!r}: cannot read it: {e}") from None
        except ValueError as e:
            raise ValueError(f"--cases must be one of {', '.join(NAMED_SETS)} or a JSON file of cases: {e}") from None
        if not cases:
            raise ValueError(f"--cases {spec!r}: no cases in it")
    seen: set[str] = set()
    out = []
    for c in cases:
        c = normalize(c)
        key = case_key(c)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def cpu_subset(cases: list[Case]) -> tuple[list[Case], list[Case]]:
    """Split into (kept, skipped) by n <= CPU_MAX_N."""
    kept = [c for c in cases if c["n"] <= CPU_MAX_N]
    skipped = [c for c in cases if c["n"] > CPU_MAX_N]
    return kept, skipped


def published_h200_ms() -> dict[str, float]:
    """The spec JSON's published torch.geqrf medians on one H200, by case key (ms)."""
    from adaptqr.testing import bench_cases
    from adaptqr.testing.cases import baseline_h200

    return {case_key(c): us / 1e3 for c, us in zip(bench_cases(), baseline_h200())}
