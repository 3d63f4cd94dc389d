"""Run the benchmark: per case, check adaptqr on every rotating input, time it, compare with torch.geqrf.

The result is a plain dict (the JSON record; schema in bench/README.md and
:func:`adaptqr.bench.report.validate_record`).

Example (CPU, a fake library call standing in for adaptqr.geqrf)::

    >>> import torch
    >>> from adaptqr.bench.runner import BenchOptions, run_bench
    >>> from adaptqr.bench.timing import StopRule
    >>> opts = BenchOptions(device=torch.device("cpu"), rule=StopRule(max_repeats=3, budget_s=1),
    ...                     baseline="none", geqrf=torch.geqrf, progress=lambda m: None)
    >>> rec = run_bench([{"batch": 2, "n": 16, "cond": 1, "seed": 1}], opts)   # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from adaptqr.bench import baseline as _baseline
from adaptqr.bench import cases as _cases
from adaptqr.bench import env, stats
from adaptqr.bench.decisions import paths_taken
from adaptqr.bench.memory import MIB, allocated_bytes, extra_memory_bytes
from adaptqr.bench.ops import Op, get_op
from adaptqr.bench.timing import StopRule, time_calls

SCHEMA = "adaptqr-bench/1"

# Default budgets (spec: "stop ... after a time budget"). 10 s a case keeps the 12-case run
# near two minutes of adaptqr timing; --quick is for iterating on a kernel.
RULE_DEFAULT = StopRule(max_repeats=100, budget_s=10.0)
RULE_QUICK = StopRule(max_repeats=10, budget_s=2.0)
#: Calls of a variant before its timed repeats (the check's included): the graph cache's
#: first replay is a key's 3rd call.
WARM_CALLS = 3


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class BenchOptions:
    """What a bench run does. ``paths``: [None] times the default dispatch; names force paths.

    ``baseline``: ``"cache"`` (use cached torch.geqrf figures, measure missing ones),
    ``"refresh"`` (remeasure all), ``"none"``. ``geqrf``: the library call (None:
    ``adaptqr.geqrf``, looked up at run time). ``max_inputs`` caps k (the CPU runs).
    ``env_variants``: ``[(name, {VAR: value})]``, the default dispatch timed again with those
    environment variables set (e.g. ``("nographs", {"ADAPTQR_GRAPHS": "0"})``), so a
    setting is compared with the default in the same run on the same inputs.
    ``knob_variants``: ``[(name, {knob: value})]``, likewise with experiment knobs set
    (:func:`adaptqr.config.experiment`, e.g. ``("ieeetail", {"tail_prec": "ieee"})``).
    ``op``: what is timed (:mod:`adaptqr.bench.ops`: geqrf, householder_product, qr).
    ``compile_modes``: the default dispatch timed again inside ``torch.compile(fullgraph=True,
    mode=...)``, as variant ``adaptqr[compile:MODE]`` (issue 26: within 5 % of eager).
    """

    device: torch.device
    paths: list[str | None] = field(default_factory=lambda: [None])
    rule: StopRule = RULE_DEFAULT
    baseline: str = "cache"
    baseline_rule: StopRule = _baseline.BASELINE_RULE
    cache_dir: str | None = None
    max_inputs: int | None = None
    geqrf: Callable | None = None
    progress: Callable[[str], None] = _stderr
    settings: dict = field(default_factory=dict)
    env_variants: list[tuple[str, dict]] = field(default_factory=list)
    knob_variants: list[tuple[str, dict]] = field(default_factory=list)
    op: str = "geqrf"
    compile_modes: list[str] = field(default_factory=list)

    def variants(self) -> list[Variant]:
        """Every variant, in run order."""
        out = [Variant(variant_name(p), p) for p in self.paths]
        out += [Variant(f"adaptqr[{name}]", env=dict(env)) for name, env in self.env_variants]
        out += [Variant(f"adaptqr[{name}]", knobs=dict(k)) for name, k in self.knob_variants]
        out += [Variant(f"adaptqr[compile:{mode}]", compile=mode) for mode in self.compile_modes]
        return out


class Variant(NamedTuple):
    """One timed variant: a forced path, environment variables, experiment knobs, or the call
    inside ``torch.compile(fullgraph=True, mode=compile)`` (``"default"``,
    ``"reduce-overhead"``, ...)."""

    name: str
    path: str | None = None
    env: dict = {}
    knobs: dict = {}
    compile: str | None = None


def variant_name(path: str | None) -> str:
    return "adaptqr" if path is None else f"adaptqr[{path}]"


@contextlib.contextmanager
def environment(env: dict):
    """Set ``env``'s variables for the block and restore the previous values after it."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _library_fn(opts: BenchOptions, path: str | None) -> Callable:
    return get_op(opts.op).library(opts.geqrf, path)


def _compiled(fn: Callable, mode: str) -> Callable:
    """``fn`` inside ``torch.compile(fullgraph=True)``; ``mode`` ``"default"`` or another of
    torch.compile's modes (CPU runs use the ``aot_eager`` backend: no code generation)."""
    def call(x):
        return fn(x)

    compiled = {}

    def run(x):
        if "f" not in compiled:
            kw = {"mode": None if mode == "default" else mode}
            if x.device.type != "cuda":
                kw = {"backend": "aot_eager"}
            compiled["f"] = torch.compile(call, fullgraph=True, **kw)
        return compiled["f"](x)

    return run


def make_inputs(case: dict, k: int, device: torch.device) -> list[torch.Tensor]:
    """The k rotating inputs of a case (input i uses seed + 42*(i+1); testing layer's generator)."""
    from adaptqr.testing import make_inputs as _make

    return list(_make(case, k, device))


def _check_all(fn: Callable, inputs: list, op: Op) -> dict:
    """Run fn once on each input, check each output (and that the input is untouched)."""
    worst_f = worst_o = 0.0
    gate = bar = True
    failing_inputs = []
    for i, a in enumerate(inputs):
        guard = a.clone()
        out = fn(a)
        res = op.check(guard, out)
        del out
        modified = not op.unchanged(a, guard)
        wf, wo = float(res.worst_factor), float(res.worst_orth)
        worst_f, worst_o = max(worst_f, wf), max(worst_o, wo)
        ok_bar = bool(res.passes_bar) and not modified
        gate = gate and bool(res.passes_gate) and not modified
        bar = bar and ok_bar
        if not ok_bar:
            failing_inputs.append({"input": i, "worst_factor": wf, "worst_orth": wo, "input_modified": modified})
    return {"worst_factor": worst_f, "worst_orth": worst_o, "passes_gate": gate, "passes_bar": bar,
            "failing_inputs": failing_inputs}


def _empty_result(path: str | None) -> dict:
    return {"path": path, "status": None, "error": None, "worst_factor": None, "worst_orth": None,
            "passes_gate": None, "passes_bar": None, "failing_inputs": [], "mean_ms": None,
            "median_ms": None, "times_ms": [], "repeats": 0, "rel_stderr": None,
            "extra_mib": None, "retained_mib": None, "paths_taken": None}


def run_variant(fn: Callable, path: str | None, inputs: list, rule: StopRule, op: Op | None = None) -> dict:
    """Check then (only if every output passes the half-gate bar) time one library variant."""
    r = _empty_result(path)
    before = allocated_bytes(inputs[0].device)
    try:
        r.update(_check_all(fn, inputs, op or get_op("geqrf")))
    except Exception as e:  # a crash is reported per case; the other cases still run
        r.update(status="error", error=f"{type(e).__name__}: {e}")
        return r
    after = allocated_bytes(inputs[0].device)
    if before is not None and after is not None:
        r["retained_mib"] = max(0, after - before) / MIB
    if not r["passes_bar"]:
        r["status"] = "FAILED"
        return r
    try:
        # The check called fn once an input; the graph cache captures a key on its 2nd call
        # and replays from its 3rd (docs/GRAPHS.md): with fewer than WARM_CALLS inputs the
        # capture would land in the first timed repeat (run 0155: 60x1024, one input, a
        # 0.6 s repeat among three).
        for _ in range(WARM_CALLS - len(inputs)):
            fn(inputs[0])
        t = time_calls(fn, inputs, rule)
        extra = extra_memory_bytes(fn, inputs[0])
    except Exception as e:
        r.update(status="error", error=f"{type(e).__name__}: {e}")
        return r
    r.update(status="ok", mean_ms=t.mean_ms, median_ms=t.median_ms, times_ms=list(t.times_ms),
             repeats=len(t.times_ms), rel_stderr=t.rel_stderr,
             extra_mib=None if extra is None else extra / MIB, paths_taken=paths_taken(fn, inputs[0]))
    return r


def _baseline_for(case: dict, key: str, inputs, opts: BenchOptions, cached: dict, dev_name: str) -> dict | None:
    if opts.baseline == "none":
        return None
    if opts.baseline == "cache" and key in cached:
        return {**cached[key], "source": "cache"}
    entry = _baseline.measure(inputs, opts.baseline_rule, get_op(opts.op).torch_fn())
    # CPU figures depend on the host and its load; only device figures are worth keeping.
    if opts.device.type == "cuda" and opts.cache_dir:
        _baseline.save(opts.cache_dir, dev_name, torch.__version__, {key: entry})
    return {**entry, "source": "measured"}


def run_case(case: dict, opts: BenchOptions, cached: dict, published: dict, dev_name: str) -> dict:
    """One case's record entry: every variant's result, the baseline, speedups."""
    op = get_op(opts.op)
    key = op.cache_key(_cases.case_key(case))
    k = _cases.inputs_per_case(case["batch"], case["n"], case.get("m"))
    if opts.max_inputs is not None:
        k = min(k, opts.max_inputs)
    inputs = op.prepare(make_inputs(case, k, opts.device))
    entry = {"name": _cases.case_name(case), "key": key, **case, "k": k, "results": {},
             "baseline": None, "published_h200_ms": published.get(key), "speedup": {}}
    from adaptqr import config

    for name, path, env_vars, knobs, mode in opts.variants():
        opts.progress(f"  {name}: check {k} input(s), then time")
        fn = _library_fn(opts, path)
        if mode is not None:
            fn = _compiled(fn, mode)
        with environment(env_vars), config.experiment(**knobs):
            r = run_variant(fn, path, inputs, opts.rule, op)
        if env_vars:
            r["env"] = dict(env_vars)
        if knobs:
            r["knobs"] = dict(knobs)
        entry["results"][name] = r
        opts.progress(f"  {name}: " + (f"median {r['median_ms']:.4g} ms over {r['repeats']} repeats"
                                       if r["status"] == "ok" else
                                       f"{r['status']} (factor {r['worst_factor']}, orth {r['worst_orth']}"
                                       f"{', ' + r['error'] if r['error'] else ''}): not timed"))
    base = None
    if opts.baseline != "none":
        opts.progress(f"  torch {op.name} baseline" + (" (cached)" if opts.baseline == "cache" and key in cached
                                                         else ""))
        base = _baseline_for(case, key, inputs, opts, cached, dev_name)
        opts.progress(f"  torch {op.name}: median {base['median_ms']:.4g} ms ({base['source']})")
    if base is None and entry["published_h200_ms"] is not None and op.name == "geqrf":
        base = {"source": "published_h200", "median_ms": entry["published_h200_ms"], "mean_ms": None}
    entry["baseline"] = base
    for name, r in entry["results"].items():
        ok = r["status"] == "ok" and base is not None and base.get("median_ms")
        entry["speedup"][name] = base["median_ms"] / r["median_ms"] if ok else None
    return entry


def summarize(entries: list[dict], variants: list[str]) -> dict:
    """Per variant: geomeans of medians and means over timed cases, and the geomean speedup.

    The geomean speedup uses only cases with both a timed result and a baseline, and equals
    geomean(baseline medians) / geomean(adaptqr medians) over those cases.
    """
    out = {}
    for v in variants:
        rs = [(e, e["results"][v]) for e in entries if v in e["results"]]
        timed = [(e, r) for e, r in rs if r["status"] == "ok"]
        paired = [(e, r) for e, r in timed if e["speedup"].get(v) is not None]
        s = {
            "n_cases": len(rs),
            "n_timed": len(timed),
            "n_failed": sum(1 for _, r in rs if r["status"] == "FAILED"),
            "n_error": sum(1 for _, r in rs if r["status"] == "error"),
            "complete": len(timed) == len(rs) and len(rs) > 0,
            "geomean_median_ms": stats.geomean([r["median_ms"] for _, r in timed]) if timed else None,
            "geomean_mean_ms": stats.geomean([r["mean_ms"] for _, r in timed]) if timed else None,
            "n_speedup": len(paired),
            "baseline_geomean_median_ms": None,
            "geomean_speedup": None,
            "baseline_sources": sorted({e["baseline"]["source"] for e, _ in paired}),
        }
        if paired:
            s["baseline_geomean_median_ms"] = stats.geomean([e["baseline"]["median_ms"] for e, _ in paired])
            s["geomean_speedup"] = stats.geomean([e["speedup"][v] for e, _ in paired])
        out[v] = s
    return out


def run_bench(case_list: list[dict], opts: BenchOptions) -> dict:
    """Run every case and return the JSON record."""
    dev_name = env.device_name(opts.device)
    cached: dict = {}
    if opts.baseline == "cache" and opts.device.type == "cuda" and opts.cache_dir:
        cached = _baseline.load(opts.cache_dir, dev_name, torch.__version__)
    published = _cases.published_h200_ms()
    entries = []
    for i, case in enumerate(case_list):
        opts.progress(f"[{i + 1}/{len(case_list)}] {_cases.case_name(case)} ({_cases.case_key(case)})")
        entries.append(run_case(case, opts, cached, published, dev_name))
    variants = [v[0] for v in opts.variants()]
    return {
        "schema": SCHEMA,
        "device": {"name": dev_name, "type": opts.device.type, "slug": _baseline.slug(dev_name)},
        "versions": env.versions(),
        "git": env.git_info(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "settings": {"op": opts.op, "paths": list(opts.paths), "env_variants": [[n, e] for n, e in opts.env_variants],
                     "knob_variants": [[n, k] for n, k in opts.knob_variants],
                     "max_repeats": opts.rule.max_repeats,
                     "budget_s": opts.rule.budget_s, "baseline": opts.baseline, **opts.settings},
        "variants": variants,
        "cases": entries,
        "summary": summarize(entries, variants),
    }
