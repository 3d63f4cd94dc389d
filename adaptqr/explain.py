"""``adaptqr.explain(A)``: which path each matrix of ``A`` would take, and why. Factors nothing.

It builds (or reuses) the plan ``adaptqr.geqrf(A)`` would use, runs the probes the plan needs
on a copy of ``A``, and reads the routes back to the host (a diagnostic, so host syncs are
fine here).

Example::

    >>> import torch, adaptqr
    >>> ex = adaptqr.explain(torch.randn(3, 8, 8))
    >>> ex.counts["dense"], ex.matrix_paths
    (3, ['torch', 'torch', 'torch'])
    >>> print(ex)  # doctest: +ELLIPSIS
    adaptqr.explain: input (3, 8, 8) float32 on cpu...
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from adaptqr import config, dispatch, validate
from adaptqr import log as _log
from adaptqr.registry import ROUTE_CLASSES, ROUTE_DEFAULT


@dataclass
class Explanation:
    """What ``adaptqr.geqrf(A)`` would do with ``A``.

    - ``shape``, ``dtype``, ``device``, ``forced`` (the forced path or None)
    - ``plan``: route class -> path name
    - ``rejected``: list of ``(path, reason)``
    - ``probed``: whether the detectors ran (else every matrix is "dense"), ``probe_note`` why not
    - ``routes``: per-matrix route codes (flattened batch), ``classes``: their names,
      ``matrix_paths``: the path each matrix would take
    - ``counts``: class name -> number of matrices; ``path_counts``: path -> number of matrices
    - ``gathered``: whether some path takes a sub-batch (one host sync per call)
    - ``capturable``: whether the plan may run as a CUDA graph
    - ``descriptions``: path name -> its description, for the paths of the plan
    - ``precision``: per matrix ``"fp16"`` when the route probe sends it to the
      householder path's FP16-resident trailing update (issue 8, docs/NUMERICS.md), else
      ``"fp32"`` (the path's own precision); ``precision_counts``: their counts
    - ``panels``: per matrix, its panels by kernel (``{"register": 12, "skipped": 4}``;
      :func:`adaptqr.log.panel_counts`), None where its path does not describe them; a
      tried kind (``"cluster-cuda+gram"``) as planned, where the decisions log says what
      each panel took; ``panel_counts``: the totals over the batch
    """

    shape: tuple
    dtype: str
    device: str
    forced: str | None
    plan: dict
    rejected: list
    probed: bool
    probe_note: str
    routes: list
    classes: list
    matrix_paths: list
    counts: dict
    path_counts: dict
    gathered: bool
    capturable: bool
    descriptions: dict = field(default_factory=dict)
    precision: list = field(default_factory=list)
    precision_counts: dict = field(default_factory=dict)
    panels: list = field(default_factory=list)
    panel_counts: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Plain data (for JSON)."""
        d = dict(self.__dict__)
        d["shape"] = list(self.shape)
        d["rejected"] = [list(r) for r in self.rejected]
        return d

    def __str__(self) -> str:
        lines = [
            f"adaptqr.explain: input {tuple(self.shape)} {self.dtype} on {self.device}"
            + (f", forced path {self.forced!r}" if self.forced else ""),
            f"  probes: {'ran' if self.probed else 'not run (' + self.probe_note + ')'}; "
            f"{'one host sync per call (a path takes a sub-batch)' if self.gathered else 'no host sync'}; "
            f"{'capturable as a CUDA graph' if self.capturable else 'eager'}",
            "",
        ]
        w_cls = max(len("class"), *(len(c) for c in self.plan))
        w_path = max(len("path"), *(len(p) for p in self.plan.values()))
        lines.append(f"  {'class':<{w_cls}}  {'code':>4}  {'matrices':>8}  {'path':<{w_path}}  description")
        for code, cls in enumerate(ROUTE_CLASSES):
            p = self.plan.get(cls, "-")
            lines.append(
                f"  {cls:<{w_cls}}  {code:>4}  {self.counts.get(cls, 0):>8}  {p:<{w_path}}  "
                f"{self.descriptions.get(p, '')}"
            )
        if self.rejected:
            lines.append("")
            lines.append("  rejected paths:")
            w = max(len(n) for n, _ in self.rejected)
            for name, reason in self.rejected:
                lines.append(f"    {name:<{w}}  {reason}")
        if self.precision_counts.get("fp16"):
            lines.append("")
            lines.append(f"  trailing update: {self.precision_counts['fp16']} matrices in float16 "
                         f"storage (FP16 route), {self.precision_counts['fp32']} in FP32")
        if self.panel_counts:
            lines.append("")
            kinds = ", ".join(f"{k} {v}" for k, v in self.panel_counts.items())
            lines.append(f"  panels over the batch: {kinds}")
        if self.routes:
            shown = ", ".join(f"{i}:{c}" for i, c in enumerate(self.classes[:16]))
            more = f", ... ({len(self.classes) - 16} more)" if len(self.classes) > 16 else ""
            lines.append("")
            lines.append(f"  per matrix: {shown}{more}")
        return "\n".join(lines)


def explain(A: torch.Tensor, *, path: str | None = None) -> Explanation:
    """Explain the dispatch of ``A`` (``(*, m, n)``) without factoring it.

    Raises exactly what ``adaptqr.geqrf(A, path=path)`` would raise for a bad input or an
    unknown/inapplicable forced path.
    """
    validate.check_input(A)
    forced = path if path is not None else config.forced_path()
    shape = tuple(A.shape)
    spec = dispatch.spec_of(A)
    dtype = str(A.dtype).replace("torch.", "")
    B, m, n = spec.batch, spec.m, spec.n
    if B == 0 or m == 0 or n == 0:
        dispatch.check_known(forced)
        return Explanation(shape, dtype, str(A.device), forced, {}, [], False, "empty input: nothing to factor",
                           [ROUTE_DEFAULT] * B, ["dense"] * B, [], {c: 0 for c in ROUTE_CLASSES}, {}, False, False)

    plan = dispatch.plan_for(spec, forced)
    note = ""
    with torch.no_grad():
        a, _, H, _ = dispatch._alloc(A, B, m, n)
        a.copy_(A)
        routes, feats = dispatch.probe(plan, H)
    if routes is None:
        if not plan.probe:
            note = "no path of the plan reads per-matrix routes for this shape"
        elif not config.detect_enabled():
            note = "ADAPTQR_DETECT=0"
        else:
            note = "adaptqr.detectors not available"
        codes = [ROUTE_DEFAULT] * B
    else:
        codes = [int(c) for c in routes.reshape(-1).tolist()]
    owners = plan.owner_names()
    classes = [ROUTE_CLASSES[c] if 0 <= c < len(ROUTE_CLASSES) else f"code{c}" for c in codes]
    matrix_paths = [owners.get(c, "?") for c in classes]
    counts = {c: 0 for c in ROUTE_CLASSES}
    path_counts: dict = {}
    for c, p in zip(classes, matrix_paths):
        counts[c] = counts.get(c, 0) + 1
        path_counts[p] = path_counts.get(p, 0) + 1
    scales = (feats or {}).get("fp16_scale")
    scales = scales.reshape(-1).tolist() if scales is not None else [0.0] * B
    precision = ["fp16" if sc > 0 and p == "householder" else "fp32"
                 for sc, p in zip(scales, matrix_paths)]
    panels, panel_totals = _log.panels_by_matrix(
        dispatch.panels_of(plan, A.device, (feats or {}).get("n_active")), owners, classes, n)
    return Explanation(
        shape=shape,
        dtype=dtype,
        device=str(A.device),
        forced=forced,
        plan=owners,
        rejected=list(plan.rejected),
        probed=routes is not None,
        probe_note=note,
        routes=codes,
        classes=classes,
        matrix_paths=matrix_paths,
        counts=counts,
        path_counts=path_counts,
        gathered=bool(plan.gathered) and routes is not None,
        capturable=plan.capturable and A.is_cuda,
        descriptions={p.name: p.description for p in plan.paths},
        precision=precision,
        precision_counts={k: precision.count(k) for k in ("fp32", "fp16")},
        panels=panels,
        panel_counts=panel_totals,
    )
