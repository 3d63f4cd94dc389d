"""The ``adaptqr`` command: ``bench``, ``check`` and ``explain``.

Examples::

    adaptqr bench                      # the 12 qr_v2 benchmark cases (CPU: a small set)
    adaptqr bench --quick --paths householder,small_fused --plot
    adaptqr check --cases tests        # exit code 1 if any case misses the half-gate bar
    adaptqr explain --case "640x512 mixed"

``python -m adaptqr ...`` is the same. See bench/README.md for how to read a result.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

# Without CUDA the per-case budgets shrink so that `adaptqr bench` on 2 cores stays well
# under a minute for the six CPU cases (times there say nothing about the GPU anyway).
CPU_RULE = dict(max_repeats=10, budget_s=1.0)
CPU_RULE_QUICK = dict(max_repeats=3, budget_s=0.3)

NO_GPU_BANNER = ("No CUDA device: the qr_v2 GPU workload needs a GPU. Running a small CPU set "
                 "(n <= {n}) of adaptqr.geqrf against torch.geqrf instead; these CPU times say "
                 "nothing about GPU speed.")


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _device(name: str | None):
    import torch

    if name is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {name}: no CUDA device is available")
    return dev


def _select_cases(spec: str | None, device, default_gpu: str, default_cpu: list[dict]) -> list[dict]:
    """The cases to run: --cases resolved, or the defaults; on the CPU only n <= CPU_MAX_N."""
    from adaptqr.bench import cases

    if device.type == "cuda":
        return cases.resolve(spec or default_gpu)
    _err(NO_GPU_BANNER.format(n=cases.CPU_MAX_N) if device.type == "cpu" and spec is None else
         f"CPU run: only cases with n <= {cases.CPU_MAX_N} are run.")
    if spec is None:
        return [cases.normalize(c) for c in default_cpu]
    kept, skipped = cases.cpu_subset(cases.resolve(spec))
    if skipped:
        _err(f"skipping {len(skipped)} case(s) with n > {cases.CPU_MAX_N} on the CPU: "
             + ", ".join(cases.case_name(c) for c in skipped))
    if not kept:
        raise ValueError(f"--cases {spec}: no case with n <= {cases.CPU_MAX_N} to run on the CPU")
    return kept


def _parse_paths(text: str | None) -> list[str | None]:
    if text is None:
        return [None]
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise ValueError(f"--paths {text!r}: give comma-separated path names")
    return list(dict.fromkeys(names))


def _parse_env_variants(items: list[str] | None, option: str = "--env",
                        example: str = "nographs:ADAPTQR_GRAPHS=0") -> list[tuple[str, dict]]:
    """``["nographs:ADAPTQR_GRAPHS=0", "x:A=1,B=2"]`` -> ``[("nographs", {...}), ...]``."""
    out = []
    for item in items or []:
        name, sep, assigns = item.partition(":")
        env = {}
        for a in assigns.split(","):
            var, eq, val = a.partition("=")
            if not eq or not var.strip():
                env = None
                break
            env[var.strip()] = val.strip()
        if not sep or not name.strip() or not env:
            raise ValueError(f"{option} {item!r}: expected NAME:KEY=VALUE[,KEY=VALUE], e.g. {example}")
        out.append((name.strip(), env))
    return out


def _parse_knob_variants(items: list[str] | None) -> list[tuple[str, dict]]:
    """``["ieeetail:tail_prec=ieee", "rows:split_min_rows=128"]`` -> ``[(name, {knob: value})]``
    (integers where the value is one)."""
    from adaptqr import config

    out = []
    for name, assigns in _parse_env_variants(items, "--knobs", "ieeetail:tail_prec=ieee"):
        knobs = {k: int(v) if v.lstrip("-").isdigit() else v for k, v in assigns.items()}
        with config.experiment(**knobs):  # a bad knob or value fails here, before any case runs
            pass
        out.append((name, knobs))
    return out


def cmd_bench(args) -> int:
    from adaptqr import config
    from adaptqr.bench import baseline, cases, report
    from adaptqr.bench.runner import RULE_DEFAULT, RULE_QUICK, BenchOptions, run_bench
    from adaptqr.bench.timing import StopRule

    device = _device(args.device)
    case_list = _select_cases(args.cases, device, "bench", cases.CPU_BENCH_CASES)
    if device.type == "cuda":
        rule = RULE_QUICK if args.quick else RULE_DEFAULT
        brule = baseline.BASELINE_RULE_QUICK if args.quick else baseline.BASELINE_RULE
    else:
        rule = StopRule(**(CPU_RULE_QUICK if args.quick else CPU_RULE))
        brule = rule
    if args.repeats is not None:
        rule = StopRule(max_repeats=args.repeats, budget_s=rule.budget_s, min_repeats=rule.min_repeats)
        brule = StopRule(max_repeats=max(brule.min_repeats, args.repeats), budget_s=brule.budget_s,
                         min_repeats=brule.min_repeats)
    if args.budget is not None:
        rule = StopRule(max_repeats=rule.max_repeats, budget_s=args.budget, min_repeats=rule.min_repeats)
    mode = "none" if args.no_baseline else ("refresh" if args.baseline_refresh else "cache")
    opts = BenchOptions(
        device=device, paths=_parse_paths(args.paths), rule=rule, baseline=mode, baseline_rule=brule,
        cache_dir=config.baseline_cache(),
        max_inputs=None if device.type == "cuda" else cases.CPU_MAX_INPUTS,
        env_variants=_parse_env_variants(args.env),
        knob_variants=_parse_knob_variants(args.knobs),
        op=args.op,
        compile_modes=list(args.compile or []),
        settings={"cases": args.cases or ("bench" if device.type == "cuda" else "cpu"), "quick": bool(args.quick)},
    )
    rec = run_bench(case_list, opts)
    print(report.render_table(rec), flush=True)
    jpath, cpath = report.write_files(rec, args.out)
    print(f"wrote {jpath} and {cpath}")
    if args.plot:
        png = report.write_plot(rec, os.path.splitext(jpath)[0] + ".png")
        print(f"wrote {png}" if png
              else "--plot: matplotlib is not importable (pip install matplotlib); no plot written")
    bad = [c["name"] for c in rec["cases"] for r in c["results"].values() if r["status"] != "ok"]
    return 1 if bad else 0


def cmd_check(args) -> int:
    from adaptqr.bench import cases
    from adaptqr.bench.check import check_cases, render_check

    device = _device(args.device)
    case_list = _select_cases(args.cases, device, "tests", cases.CPU_CHECK_CASES)
    rows = check_cases(case_list, device, path=args.path, progress=_err)
    print(render_check(rows), flush=True)
    return 0 if all(r["passes_bar"] for r in rows) else 1


_CASE_RE = re.compile(r"^\s*(\d+)\s*x\s*(\d+)\s*([a-z]*)\s*$", re.I)


def explain_case(args) -> dict:
    """The case to explain: ``--case "640x512 mixed"`` (cond and seed from the spec lists when
    such a case is listed) with any of --batch/--n/--case-kind/--cond/--seed overriding."""
    from adaptqr.bench import cases

    c = {"batch": 640, "n": 512, "case": "dense", "cond": None, "seed": None}
    if args.case:
        m = _CASE_RE.match(args.case)
        if not m:
            raise ValueError(f"--case {args.case!r}: expected 'BATCHxN [kind]', e.g. '640x512 mixed'")
        c.update(batch=int(m.group(1)), n=int(m.group(2)), case=(m.group(3) or "dense").lower())
        for listed in _listed_cases():
            if (listed["batch"], listed["n"], listed["case"]) == (c["batch"], c["n"], c["case"]):
                c.update(cond=listed["cond"], seed=listed["seed"])
                break
    for k, v in (("batch", args.batch), ("n", args.n), ("case", args.case_kind), ("cond", args.cond),
                 ("seed", args.seed)):
        if v is not None:
            c[k] = v
    c["cond"] = 1 if c["cond"] is None else c["cond"]
    c["seed"] = 0 if c["seed"] is None else c["seed"]
    return cases.normalize(c)


def _listed_cases() -> list[dict]:
    from adaptqr.bench import cases

    try:
        return cases.resolve("bench") + cases.resolve("tests")
    except (ImportError, AttributeError):
        return []


def cmd_explain(args) -> int:
    import adaptqr
    from adaptqr.testing import generate

    device = _device(args.device)
    c = explain_case(args)
    a = generate(c["batch"], c["n"], c["cond"], c["seed"], case=c["case"], device=device)
    print(f"# {c['batch']}x{c['n']} {c['case']} cond={c['cond']} seed={c['seed']} on {device}")
    out = adaptqr.explain(a)
    # Plain data is shown as JSON; an object (adaptqr.Explanation) prints its own report.
    print(json.dumps(out, indent=1, default=str) if isinstance(out, (dict, list)) else out)
    return 0


def _knob_names() -> str:
    """The experiment knobs' names (``adaptqr.config.Knobs``' fields), for ``--knobs``' help."""
    import dataclasses

    from adaptqr import config

    return ", ".join(f.name for f in dataclasses.fields(config.Knobs))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptqr", description="adaptqr: batched QR on NVIDIA GPUs")
    sub = p.add_subparsers(dest="command", required=True)
    cases_help = ("tests (22 cases), bench (12), all, optimizer (4 optimizer shapes), bench+optimizer, "
                  "wide (2 wide shapes), single (batch 1: n 512-4096), cpu (small CPU set) or a JSON "
                  "file of cases")

    b = sub.add_parser("bench", help="time adaptqr.geqrf against torch.geqrf (qr_v2 timing)")
    b.add_argument("--cases", help=cases_help + "; default bench on CUDA, cpu otherwise")
    b.add_argument("--op", default="geqrf", choices=("geqrf", "householder_product", "qr"),
                   help="what is timed against torch's own function (default geqrf; qr: reduced "
                        "linalg.qr; householder_product: on adaptqr.geqrf's factors of each input)")
    b.add_argument("--paths", help="comma-separated path names to compare (forced via geqrf(path=...))")
    b.add_argument("--env", action="append", metavar="NAME:VAR=VALUE[,VAR=VALUE]",
                   help="also time the default dispatch with these environment variables set, as variant "
                        "adaptqr[NAME] (repeatable), e.g. nographs:ADAPTQR_GRAPHS=0")
    b.add_argument("--knobs", action="append", metavar="NAME:KNOB=VALUE[,KNOB=VALUE]",
                   help="also time the default dispatch with these experiment knobs set "
                        "(adaptqr.config.experiment), as variant adaptqr[NAME] (repeatable), e.g. "
                        "ieeetail:tail_prec=ieee; knobs: " + _knob_names())
    b.add_argument("--compile", action="append", metavar="MODE",
                   help="also time the default dispatch inside torch.compile(fullgraph=True, mode=MODE), "
                        "as variant adaptqr[compile:MODE] (repeatable; MODE default or reduce-overhead)")
    b.add_argument("--repeats", type=_positive_int, help="most repeats per case")
    b.add_argument("--quick", action="store_true", help="few repeats, short per-case budget")
    b.add_argument("--budget", type=float, help="seconds of repeats per case (overrides the default)")
    b.add_argument("--out", default=os.path.join("bench", "results"), help="folder for the JSON/CSV/PNG")
    g = b.add_mutually_exclusive_group()
    g.add_argument("--baseline-refresh", action="store_true", help="remeasure torch.geqrf, update the cache")
    g.add_argument("--no-baseline", action="store_true", help="do not measure torch.geqrf")
    b.add_argument("--plot", action="store_true", help="also write a PNG (needs matplotlib)")
    b.add_argument("--device", help="cuda, cuda:1 or cpu (default: cuda when available)")
    b.set_defaults(func=cmd_bench)

    c = sub.add_parser("check", help="worst scaled residuals per case against the gates")
    c.add_argument("--cases", help=cases_help + "; default tests on CUDA, a small profile set otherwise")
    c.add_argument("--path", help="force this path (geqrf(path=...))")
    c.add_argument("--device", help="cuda, cuda:1 or cpu (default: cuda when available)")
    c.set_defaults(func=cmd_check)

    e = sub.add_parser("explain", help="print adaptqr.explain(A) for a generated input")
    e.add_argument("--case", help="e.g. '640x512 mixed' (cond/seed from the spec lists when listed)")
    e.add_argument("--batch", type=_positive_int)
    e.add_argument("--n", type=_positive_int)
    e.add_argument("--case-kind", help="generator profile: dense, upper, rankdef, ..., mixed")
    e.add_argument("--cond", type=float)
    e.add_argument("--seed", type=int)
    e.add_argument("--device", help="cuda, cuda:1 or cpu (default: cuda when available)")
    e.set_defaults(func=cmd_explain)
    return p


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ValueError as e:
        _err(f"adaptqr {args.command}: error: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
