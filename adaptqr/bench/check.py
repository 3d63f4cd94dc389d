"""``adaptqr check``: factor each case once, print its worst scaled residuals against the gates.

A case passes when every matrix stays at or below half the gate (factor 10, orthogonality
50, in units of n * eps32; spec/qr_v2.md) and the input is left unmodified.

Example (CPU)::

    >>> import torch
    >>> from adaptqr.bench.check import check_cases, render_check
    >>> rows = check_cases([{"batch": 2, "n": 16, "cond": 1, "seed": 3, "case": "dense"}],
    ...                    torch.device("cpu"), geqrf=torch.geqrf)          # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from adaptqr.bench import cases as _cases
from adaptqr.bench.report import FACTOR_BAR, FACTOR_GATE, ORTH_BAR, ORTH_GATE


def check_one(case: dict, device: torch.device, fn: Callable) -> dict:
    """Check ``fn`` on the case's own input (its seed); never raises for a library error."""
    from adaptqr.testing import check_geqrf, generate

    row = {"name": _cases.case_name(case), "key": _cases.case_key(case), "status": None, "error": None,
           "worst_factor": None, "worst_orth": None, "passes_gate": False, "passes_bar": False}
    try:
        a = generate(case["batch"], case["n"], case["cond"], case["seed"], case=case["case"], device=device)
        guard = a.clone()
        h, tau = fn(a)[:2]
        res = check_geqrf(guard, h, tau)
    except Exception as e:
        row.update(status="error", error=f"{type(e).__name__}: {e}")
        return row
    modified = not torch.equal(a, guard)
    row.update(worst_factor=float(res.worst_factor), worst_orth=float(res.worst_orth),
               passes_gate=bool(res.passes_gate) and not modified,
               passes_bar=bool(res.passes_bar) and not modified)
    if modified:
        row["error"] = "the input was modified"
    row["status"] = "pass" if row["passes_bar"] else "FAIL"
    return row


def check_cases(case_list: list[dict], device: torch.device, path: str | None = None,
                geqrf: Callable | None = None, progress: Callable[[str], None] | None = None) -> list[dict]:
    if geqrf is None:
        import adaptqr

        geqrf = adaptqr.geqrf
    fn = geqrf if path is None else functools.partial(geqrf, path=path)
    rows = []
    for i, c in enumerate(case_list):
        if progress:
            progress(f"[{i + 1}/{len(case_list)}] {_cases.case_name(c)}")
        rows.append(check_one(c, device, fn))
    return rows


def render_check(rows: list[dict]) -> str:
    header = ["case", "status", f"factor (gate {FACTOR_GATE:g}, bar {FACTOR_BAR:g})",
              f"orth (gate {ORTH_GATE:g}, bar {ORTH_BAR:g})", "gate", "note"]
    body = [[r["name"], r["status"], "-" if r["worst_factor"] is None else f"{r['worst_factor']:.3g}",
             "-" if r["worst_orth"] is None else f"{r['worst_orth']:.3g}",
             "ok" if r["passes_gate"] else "over", r["error"] or ""] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(header)]
    table = [header, ["-" * w for w in widths], *body]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in table]
    n_fail = sum(1 for r in rows if not r["passes_bar"])
    lines.append("")
    lines.append(f"{len(rows) - n_fail}/{len(rows)} cases pass the half-gate bar"
                 + (f"; {n_fail} FAIL" if n_fail else ""))
    return "\n".join(lines)
