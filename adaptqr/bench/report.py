"""Present a bench record: terminal table, JSON and CSV files, optional PNG plot, schema check.

Example::

    >>> from adaptqr.bench.report import format_ms, result_basename
    >>> format_ms(0.01234), format_ms(1234.5)
    ('0.01234', '1234')
    >>> result_basename({"device": {"slug": "nvidia-h200"}, "date": "2026-11-29T10:15:03+00:00"})
    'nvidia-h200_2026-11-29_1015'
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import os

# Scaled-residual gates of spec/qr_v2.md and the project's half-gate bar.
FACTOR_GATE, ORTH_GATE = 20.0, 100.0
FACTOR_BAR, ORTH_BAR = FACTOR_GATE / 2, ORTH_GATE / 2

# Required keys of the record and of each part, with their types (None allowed where listed).
_TOP = {"schema": str, "device": dict, "versions": dict, "git": dict, "date": str, "settings": dict,
        "variants": list, "cases": list, "summary": dict}
_CASE = {"name": str, "key": str, "batch": int, "n": int, "seed": int, "case": str, "k": int,
         "results": dict, "speedup": dict}
_RESULT = {"status": str, "times_ms": list, "repeats": int}
_RESULT_NUM = ("mean_ms", "median_ms", "worst_factor", "worst_orth", "extra_mib", "rel_stderr")
_SUMMARY_NUM = ("geomean_median_ms", "geomean_mean_ms", "geomean_speedup", "baseline_geomean_median_ms")


def validate_record(rec: dict) -> list[str]:
    """Problems with a record's shape (empty list: valid). Used by tests and before writing."""
    errs = []

    def need(d, spec, where):
        for k, t in spec.items():
            if k not in d:
                errs.append(f"{where}: missing {k!r}")
            elif not isinstance(d[k], t):
                errs.append(f"{where}.{k}: expected {t.__name__}, got {type(d[k]).__name__}")

    def num(d, keys, where):
        for k in keys:
            if k not in d:
                errs.append(f"{where}: missing {k!r}")
            elif d[k] is not None and not isinstance(d[k], (int, float)):
                errs.append(f"{where}.{k}: expected a number or null, got {type(d[k]).__name__}")

    need(rec, _TOP, "record")
    if errs:
        return errs
    need(rec["device"], {"name": str, "type": str, "slug": str}, "device")
    need(rec["git"], {"commit": str}, "git")
    for m in ("torch", "triton", "cupy"):
        if m not in rec["versions"]:
            errs.append(f"versions: missing {m!r}")
    for i, c in enumerate(rec["cases"]):
        need(c, _CASE, f"cases[{i}]")
        num(c, ("cond", "published_h200_ms"), f"cases[{i}]")
        if "baseline" not in c:
            errs.append(f"cases[{i}]: missing 'baseline'")
        elif c["baseline"] is not None:
            num(c["baseline"], ("mean_ms", "median_ms"), f"cases[{i}].baseline")
        for v, r in c.get("results", {}).items():
            need(r, _RESULT, f"cases[{i}].results[{v}]")
            num(r, _RESULT_NUM, f"cases[{i}].results[{v}]")
            for f in ("passes_gate", "passes_bar"):
                if f not in r or not (r[f] is None or isinstance(r[f], bool)):
                    errs.append(f"cases[{i}].results[{v}].{f}: expected a bool or null")
            if r.get("status") not in ("ok", "FAILED", "error"):
                errs.append(f"cases[{i}].results[{v}].status: {r.get('status')!r}")
            if r.get("status") != "ok" and r.get("times_ms"):
                errs.append(f"cases[{i}].results[{v}]: a {r['status']} case must not be timed")
    for v in rec["variants"]:
        if v not in rec["summary"]:
            errs.append(f"summary: missing variant {v!r}")
        else:
            num(rec["summary"][v], _SUMMARY_NUM, f"summary[{v}]")
    return errs


def format_ms(x: float | None) -> str:
    """Four significant digits (no exponent from 1 us to 1000 s); '-' for missing."""
    if x is None:
        return "-"
    if x >= 1000:
        return f"{x:.0f}"
    return f"{x:.4g}" if x >= 1e-3 else f"{x:.2e}"


def _fmt(x, spec="{:.1f}") -> str:
    return "-" if x is None else spec.format(x)


def table_rows(rec: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the terminal table: one row per case and variant."""
    header = ["case", "variant", "status", "median ms", "mean ms", "reps", "torch ms", "speedup",
              "factor", "orth", "extra MiB", "kept MiB", "torch MiB", "path(s)"]
    rows = []
    for c in rec["cases"]:
        base = c.get("baseline") or {}
        tmark = "*" if base.get("source") == "published_h200" else ""
        for v, r in c["results"].items():
            sp = c["speedup"].get(v)
            rows.append([
                c["name"], v, r["status"] or "-", format_ms(r["median_ms"]), format_ms(r["mean_ms"]),
                str(r["repeats"]), format_ms(base.get("median_ms")) + tmark,
                "-" if sp is None else f"{sp:.1f}x" + tmark,
                _fmt(r["worst_factor"], "{:.3g}"), _fmt(r["worst_orth"], "{:.3g}"),
                _fmt(r["extra_mib"]), _fmt(r.get("retained_mib")), _fmt(base.get("extra_mib")),
                ",".join(r["paths_taken"]) if r.get("paths_taken") else ("?" if r["status"] == "ok" else "-"),
            ])
    return header, rows


def _baseline_name(rec: dict) -> str:
    """torch's function the run compares with (``--op``; records before it: geqrf)."""
    op = rec.get("settings", {}).get("op", "geqrf")
    return {"geqrf": "torch.geqrf", "qr": "torch.linalg.qr"}.get(op, f"torch.linalg.{op}")


def render_table(rec: dict) -> str:
    header, rows = table_rows(rec)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    out = [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]
    out.append("")
    baseline = _baseline_name(rec)
    for v, s in rec["summary"].items():
        msg = (f"{v}: geomean median {format_ms(s['geomean_median_ms'])} ms, mean {format_ms(s['geomean_mean_ms'])} ms"
               f" over {s['n_timed']}/{s['n_cases']} timed cases")
        if s["geomean_speedup"] is not None:
            msg += (f"; {baseline} geomean {format_ms(s['baseline_geomean_median_ms'])} ms,"
                    f" speedup {s['geomean_speedup']:.1f}x over {s['n_speedup']} cases")
        if s["n_failed"] or s["n_error"]:
            msg += f"; {s['n_failed']} FAILED, {s['n_error']} error (not timed, not in the geomean)"
        out.append(msg)
    if any((c.get("baseline") or {}).get("source") == "published_h200" for c in rec["cases"]):
        out.append("* torch.geqrf figure published for one H200 (spec JSON), not measured here")
    out.append(f"factor/orth: worst scaled residuals over all inputs; gates {FACTOR_GATE:g}/{ORTH_GATE:g},"
               f" bar {FACTOR_BAR:g}/{ORTH_BAR:g}")
    return "\n".join(out)


def result_basename(rec: dict) -> str:
    """``<device-slug>_<YYYY-MM-DD>_<HHMM>`` from the record's device and (UTC) date."""
    d = _dt.datetime.fromisoformat(rec["date"])
    return f"{rec['device']['slug']}_{d.strftime('%Y-%m-%d')}_{d.strftime('%H%M')}"


def _free_base(out_dir: str, base: str) -> str:
    """``base``, or ``base-2``, ``base-3``... so two runs in one minute don't overwrite each other."""
    cand, i = base, 1
    while os.path.exists(os.path.join(out_dir, cand + ".json")):
        i += 1
        cand = f"{base}-{i}"
    return cand


CSV_FIELDS = ["name", "key", "batch", "n", "cond", "seed", "case", "k", "variant", "path", "status",
              "median_ms", "mean_ms", "repeats", "rel_stderr", "worst_factor", "worst_orth", "passes_gate",
              "passes_bar", "extra_mib", "retained_mib", "paths_taken", "baseline_source",
              "baseline_median_ms", "baseline_mean_ms", "baseline_extra_mib", "published_h200_ms", "speedup"]


def write_files(rec: dict, out_dir: str) -> tuple[str, str]:
    """Write ``<base>.json`` and ``<base>.csv`` under out_dir; returns their paths."""
    errs = validate_record(rec)
    if errs:
        raise ValueError("bench record does not match its schema: " + "; ".join(errs[:5]))
    os.makedirs(out_dir, exist_ok=True)
    base = _free_base(out_dir, result_basename(rec))
    jpath, cpath = os.path.join(out_dir, base + ".json"), os.path.join(out_dir, base + ".csv")
    with open(jpath, "w") as f:
        json.dump(rec, f, indent=1, default=str)
        f.write("\n")
    with open(cpath, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for c in rec["cases"]:
            b = c.get("baseline") or {}
            for v, r in c["results"].items():
                w.writerow({
                    **{k: c.get(k) for k in ("name", "key", "batch", "n", "cond", "seed", "case", "k",
                                             "published_h200_ms")},
                    **{k: r.get(k) for k in ("path", "status", "median_ms", "mean_ms", "repeats", "rel_stderr",
                                             "worst_factor", "worst_orth", "passes_gate", "passes_bar",
                                             "extra_mib", "retained_mib")},
                    "variant": v,
                    "paths_taken": ";".join(r.get("paths_taken") or []),
                    "baseline_source": b.get("source"),
                    "baseline_median_ms": b.get("median_ms"),
                    "baseline_mean_ms": b.get("mean_ms"),
                    "baseline_extra_mib": b.get("extra_mib"),
                    "speedup": c["speedup"].get(v),
                })
    return jpath, cpath


def write_plot(rec: dict, png_path: str) -> str | None:
    """Per-case speedup and time vs the torch baseline (log scale) as a PNG; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    names = [c["name"] for c in rec["cases"]]
    xs = range(len(names))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(6, 0.9 * len(names)), 8), sharex=True)
    width = 0.8 / (len(rec["variants"]) + 1)
    for j, v in enumerate(rec["variants"]):
        sp = [c["speedup"].get(v) or float("nan") for c in rec["cases"]]
        t = [c["results"][v]["median_ms"] or float("nan") for c in rec["cases"]]
        ax1.bar([x + j * width for x in xs], sp, width, label=v)
        ax2.bar([x + j * width for x in xs], t, width, label=v)
    tb = [(c.get("baseline") or {}).get("median_ms") or float("nan") for c in rec["cases"]]
    ax2.bar([x + len(rec["variants"]) * width for x in xs], tb, width, label=_baseline_name(rec))
    ax1.set_yscale("log")
    ax1.set_ylabel(f"speedup over {_baseline_name(rec)}")
    ax1.legend()
    ax2.set_yscale("log")
    ax2.set_ylabel("median ms per call")
    ax2.set_xticks([x + len(rec["variants"]) * width / 2 for x in xs])   # centre of each case's bar group
    ax2.set_xticklabels(names, rotation=45, ha="right")
    ax2.legend()
    fig.suptitle(f"adaptqr bench: {rec['device']['name']}, {rec['date']}")
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return png_path
