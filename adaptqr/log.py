"""The dispatch decisions log: a bounded ring buffer of what each call decided and why.

Off by default, and then free: the dispatcher checks :func:`active` and builds no
:class:`Record` at all. Turn it on with :func:`enable` or ``ADAPTQR_LOG`` (``1``: also mirror
each record to ``logging.getLogger("adaptqr.dispatch")`` at INFO; any other value except
``0``: also append each record as one JSON line to that file). ``ADAPTQR_LOG_SIZE`` bounds the
buffer (default 256 records; the oldest are dropped).

A record keeps the per-matrix routes as the device tensor the detectors produced; it becomes
a list only when read (:func:`decisions`), so recording costs no host sync. Mirroring to the
logger or a file does read it (one host sync per call): use those for debugging only.

Example::

    >>> import torch, adaptqr
    >>> adaptqr.log.enable(); adaptqr.clear_decisions()
    >>> _ = adaptqr.geqrf(torch.randn(3, 4, 4))
    >>> rec = adaptqr.decisions()[-1]
    >>> rec["shape"], rec["plan"]["dense"]
    ([3, 4, 4], 'torch')
    >>> adaptqr.log.disable()
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import threading
import time
from collections import deque

from adaptqr import config
from adaptqr.registry import ROUTE_CLASSES, ROUTE_DEFAULT, fallback_kind

logger = logging.getLogger("adaptqr.dispatch")

_enabled = False
_lock = threading.Lock()
_buffer: deque = deque(maxlen=256)
_seq = itertools.count(1)


def panel_counts(nb: int, kinds: list, n_active: int, took: list | None = None) -> dict:
    """One matrix's panels by kernel (``Path.panels``' ``kinds``, a panel every ``nb``
    columns), with those at or past its ``n_active`` counted as ``"skipped"`` (they exit at
    once). Without a probe ``n_active`` is ``n``: every panel runs. ``took``: per panel, what
    a tried kind (``"base+try"``) took (``MatrixInfo.panel_out``'s row: 0 counts it as
    ``base``; None, or another value, as named).

    >>> panel_counts(32, ["row-split", "row-split", "register", "register"], 70)
    {'row-split': 2, 'register': 1, 'skipped': 1}
    >>> panel_counts(32, ["cuda+gram", "cuda+gram", "cuda"], 96, [1, 0, -1])
    {'cuda+gram': 1, 'cuda': 2}
    """
    out: dict = {}
    for i, kind in enumerate(kinds):
        if i * nb >= n_active:
            kind = "skipped"
        elif took is not None and took[i] == 0:
            kind = fallback_kind(kind) or kind
        out[kind] = out.get(kind, 0) + 1
    return out


def enable(on: bool = True) -> None:
    """Start (or with ``on=False`` stop) recording decisions in the ring buffer."""
    global _enabled
    _enabled = bool(on)


def disable() -> None:
    """Stop recording (``ADAPTQR_LOG`` set to something other than ``0`` still records)."""
    enable(False)


def active() -> bool:
    """Whether calls are being recorded now: :func:`enable` was called or ``ADAPTQR_LOG`` is set."""
    return _enabled or config.log_target() is not None


class Record:
    """One call's decisions. Build only through :func:`record` (so the off state builds none).

    Fields: ``seq`` (increasing id), ``time`` (unix seconds), ``op`` (``"geqrf"`` or ``"qr"``), ``shape``,
    ``dtype``, ``device``, ``forced`` (the forced path or None), ``plan`` (class -> path),
    ``rejected`` (list of ``(path, reason)``), ``mode`` (``"eager"``/``"graph"``/``"empty"``),
    ``routes`` (``(B,)`` device tensor, or None when no detector ran: all ``"dense"``),
    ``fp16`` (``(B,)`` the route probe's FP16 storage scales, or None: every matrix's trailing
    update in FP32), ``fallback`` (None, or what a path handed on: ``{"from", "to",
    "matrices", "reasons"}``, from a registered path's ``info.notes["fallback"]``), ``panels`` (None, or
    ``(path name, nb, kinds, n_active, outcomes)``: the panel kernels of the path that
    describes them, ``Path.panels``, the ``(B,)`` device tensor of ``n_active`` or None, and
    the call's own copy of ``MatrixInfo.panel_out`` or None).
    """

    __slots__ = ("seq", "time", "op", "shape", "dtype", "device", "forced", "plan", "rejected", "mode", "routes",
                 "fp16", "fallback", "panels")

    def __init__(self, *, shape, dtype, device, forced, plan, rejected, mode, routes, op="geqrf",
                 fp16=None, fallback=None, panels=None):
        self.seq = next(_seq)
        self.time = time.time()
        self.op = op
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.forced = forced
        self.plan = plan
        self.rejected = rejected
        self.mode = mode
        self.routes = routes
        self.fp16 = fp16
        self.fallback = fallback
        self.panels = panels

    def to_dict(self) -> dict:
        """Plain data (str/int/list/dict only); materializes the routes."""
        batch = 1
        for d in self.shape[:-2]:
            batch *= d
        if self.routes is None:
            routes = [ROUTE_DEFAULT] * batch
        else:
            routes = [int(r) for r in self.routes.reshape(-1).tolist()]
        classes = [ROUTE_CLASSES[r] if 0 <= r < len(ROUTE_CLASSES) else f"code{r}" for r in routes]
        counts = {c: 0 for c in ROUTE_CLASSES}
        for name in classes:
            counts[name] = counts.get(name, 0) + 1
        # The trailing update's precision per matrix (docs/NUMERICS.md "FP16 route").
        if self.fp16 is None:
            precision = ["fp32"] * batch
        else:
            precision = ["fp16" if s > 0 else "fp32" for s in self.fp16.reshape(-1).tolist()]
        panels, panel_totals = panels_by_matrix(self.panels, self.plan, classes, self.shape[-1])
        return {
            "seq": self.seq,
            "time": self.time,
            "op": self.op,
            "shape": list(self.shape),
            "dtype": str(self.dtype).replace("torch.", ""),
            "device": str(self.device),
            "forced": self.forced,
            "plan": dict(self.plan),
            "rejected": [[name, reason] for name, reason in self.rejected],
            "mode": self.mode,
            "probed": self.routes is not None,
            "routes": routes,
            "counts": counts,
            "precision": precision,
            "precision_counts": {p: precision.count(p) for p in ("fp32", "fp16")},
            "fallback": self.fallback,
            "panels": panels,
            "panel_counts": panel_totals,
        }


def panels_by_matrix(panels, plan: dict, classes: list, n: int) -> tuple[list, dict]:
    """Per matrix (``classes``: each one's route class name), its panels by kernel
    (:func:`panel_counts`; None for a matrix whose path, ``plan[class]``, does not describe
    its panels), and the totals over the batch. ``panels``: :func:`adaptqr.dispatch.panels_of`'s."""
    if panels is None:
        return [None] * len(classes), {}
    name, nb, kinds, n_active, outcomes = panels
    na = n_active.reshape(-1).tolist() if n_active is not None else [n] * len(classes)
    took = outcomes.tolist() if outcomes is not None else [None] * len(classes)
    per, totals = [], {}
    for cls, a, t in zip(classes, na, took):
        if plan.get(cls) != name:
            per.append(None)
            continue
        c = panel_counts(nb, kinds, a, t)
        per.append(c)
        for k, v in c.items():
            totals[k] = totals.get(k, 0) + v
    return per, totals


def record(**fields) -> Record:
    """Build a :class:`Record`, keep it in the ring buffer and mirror it if asked."""
    rec = Record(**fields)
    size = config.get().log_size
    global _buffer
    with _lock:
        if _buffer.maxlen != size:
            _buffer = deque(_buffer, maxlen=max(0, size))
        _buffer.append(rec)
    target = config.log_target()
    if target is not None and target.strip() == "1":
        if logger.isEnabledFor(logging.INFO):
            logger.info("%s", json.dumps(rec.to_dict()))
    elif target is not None:
        with open(os.path.expanduser(target), "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec.to_dict()) + "\n")
    return rec


def decisions(n: int | None = None) -> list[dict]:
    """The last ``n`` records (all kept ones if None), oldest first, as plain dicts."""
    with _lock:
        recs = list(_buffer)
    if n is not None:
        if n < 0:
            raise ValueError(f"n must be >= 0 or None, got {n}")
        recs = recs[len(recs) - n :] if n else []
    return [r.to_dict() for r in recs]


def clear_decisions() -> None:
    """Forget every kept record."""
    with _lock:
        _buffer.clear()
