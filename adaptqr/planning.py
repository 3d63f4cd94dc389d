"""Plans: which path takes each route class of one input shape, chosen on the host, cached.

A :class:`Plan` is chosen once per ``(batch, m, n, dtype, device type, forced path,
registry version)`` (:func:`plan_key`) and kept in an LRU cache. It maps
every route class (``adaptqr.registry.ROUTE_CLASSES``) to the path that takes it, and keeps
the rejected paths with their reasons. Running a plan is :mod:`adaptqr.dispatch`'s job.

Example::

    >>> import torch
    >>> from adaptqr import planning
    >>> planning.plan_for(planning.spec_of(torch.randn(4, 5, 5))).owner_names()["dense"]
    'torch'
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import torch

from adaptqr.registry import REGISTRY, ROUTE_CLASSES, ROUTE_DEFAULT, InputSpec, Path, fallback_kind

# Distinct (shape, dtype, device, forced path) combinations remembered. A plan is a few
# hundred bytes; 256 covers a bucketed optimizer's shapes many times over, and a sweep over
# thousands of shapes only pays a cheap re-plan on a miss.
PLAN_CACHE_SIZE = 256
# (device, settings) pairs a plan keeps its panel outcome count for: a process rarely has
# more than a device or two and a settings snapshot or two.
PANEL_OUTCOME_KEYS = 8

_NUM_CLASSES = len(ROUTE_CLASSES)



def spec_of(A: torch.Tensor) -> InputSpec:
    """The :class:`InputSpec` of a ``(*batch, m, n)`` tensor (batch dims flattened)."""
    shape = A.shape
    return InputSpec(math.prod(shape[:-2]), shape[-2], shape[-1], A.dtype, A.device.type)


class Plan:
    """What one input shape runs: an owner path per route class, the base, the gathered rest.

    - ``owners``: tuple, one :class:`Path` per route code.
    - ``base``: the path that factors the whole batch (or None: every owner is gathered).
    - ``gathered``: tuple of ``(path, owner_index)`` for owners that get only their matrices.
    - ``rejected``: list of ``(path name, reason)``.
    - ``probe``: whether the detectors must run (some path reads routes, or routes split the batch).
    - ``capturable``: whether the eager plan may be captured in a CUDA graph.
    - ``direct``: the base's ``Path.direct`` when the base takes the whole batch unprobed
      (no detector, nothing gathered), else None.
    """

    __slots__ = ("key", "spec", "forced", "owners", "base", "gathered", "rejected", "probe", "capturable",
                 "direct", "_zeros", "_owner_table", "_distinct", "_panel_outs")

    def __init__(self, key, spec: InputSpec, forced: str | None, owners: tuple, rejected: list):
        self.key = key
        self.spec = spec
        self.forced = forced
        self.owners = owners
        self.rejected = rejected
        distinct: list[Path] = []
        for p in owners:
            if p not in distinct:
                distinct.append(p)
        self._distinct = tuple(distinct)
        dense_owner = owners[ROUTE_DEFAULT]
        self.base = dense_owner if (dense_owner.routed or dense_owner.takes_all_classes) else None
        self.gathered = tuple((p, i) for i, p in enumerate(distinct) if p is not self.base)
        self.probe = bool(self.gathered) or (self.base is not None and self.base.uses_routes(spec))
        # Gathering syncs with the host, so such plans are never captured.
        self.capturable = not self.gathered and all(p.capturable for p in distinct)
        self.direct = (self.base.direct if self.base is not None and not self.gathered
                       and not self.probe else None)
        self._zeros: dict = {}
        self._owner_table: dict = {}
        self._panel_outs: dict = {}

    @property
    def paths(self) -> tuple:
        """The distinct paths of the plan, in route-code order of first ownership."""
        return self._distinct

    @property
    def lead(self) -> Path:
        """The path that runs first on the whole batch: the base, else the dense class's owner."""
        return self.base if self.base is not None else self.owners[ROUTE_DEFAULT]

    def owner_names(self) -> dict[str, str]:
        """Route class name -> name of the path that takes it."""
        return {c: p.name for c, p in zip(ROUTE_CLASSES, self.owners)}

    def zero_routes(self, B: int, device: torch.device) -> torch.Tensor:
        """A cached all-``ROUTE_DEFAULT`` routes tensor (paths never write routes)."""
        z = self._zeros.get(device)
        if z is None:
            z = torch.full((B,), ROUTE_DEFAULT, dtype=torch.int32, device=device)
            self._zeros[device] = z
        return z

    def panel_outcomes(self, device: torch.device, settings) -> int:
        """Columns of the lead path's ``MatrixInfo.panel_out`` (what each matrix's tried
        panels took, for the decisions log): its number of panels where ``Path.panels`` names
        a tried kind (:func:`adaptqr.registry.fallback_kind`), else 0. Kept by device and
        settings snapshot (the kinds follow the experiment knobs), asked where a call
        allocates its outputs: eagerly, or once for a graph.

        >>> import torch
        >>> plan = plan_for(spec_of(torch.randn(4, 5, 5)))
        >>> plan.panel_outcomes(torch.device("cpu"), None)
        0
        """
        key = (device, settings)
        n = self._panel_outs.get(key)
        if n is None:
            describe = self.lead.panels
            kinds = describe(self.spec, device)[1] if describe is not None else ()
            n = len(kinds) if any(fallback_kind(k) for k in kinds) else 0
            if len(self._panel_outs) >= PANEL_OUTCOME_KEYS:
                self._panel_outs.clear()
            self._panel_outs[key] = n
        return n

    def owner_table(self, device: torch.device) -> torch.Tensor:
        """``(num classes,)`` int64: route code -> index of its owner in :attr:`paths`."""
        t = self._owner_table.get(device)
        if t is None:
            t = torch.tensor([self._distinct.index(p) for p in self.owners], dtype=torch.int64, device=device)
            self._owner_table[device] = t
        return t


_plans: "OrderedDict[tuple, Plan]" = OrderedDict()
_plans_lock = threading.Lock()


def _choose(spec: InputSpec, forced: str | None) -> tuple[tuple, list]:
    REGISTRY.ensure_builtins()
    paths = REGISTRY.paths()
    where = f"input of shape (B={spec.batch}, m={spec.m}, n={spec.n}), dtype {spec.dtype}, device {spec.device_type}"
    if forced is not None:
        p = REGISTRY.get(forced)
        if p is None:
            raise ValueError(f"unknown path {forced!r} (from path= or ADAPTQR_PATH); known paths: {REGISTRY.names()}")
        reason = p.check(spec)
        if reason is not None:
            raise ValueError(f"forced path {forced!r} cannot take the {where}: {reason}")
        if not p.takes_all_classes:
            raise ValueError(
                f"forced path {forced!r} accepts only the classes {sorted(p.classes)}; a forced path must take every "
                f"matrix of the batch ({where}); force a path declared with classes='*'"
            )
        rejected = [(q.name, f"not forced (ADAPTQR_PATH / path= is {forced!r})") for q in paths if q is not p]
        return (p,) * _NUM_CLASSES, rejected

    rejected: list = []
    ok: list[Path] = []
    for p in paths:
        reason = p.check(spec)
        if reason is None:
            reason = p.check_preferred(spec)
        if reason is None:
            ok.append(p)
        else:
            rejected.append((p.name, reason))
    owners = []
    for cls in ROUTE_CLASSES:
        best = None
        for p in ok:  # registration order breaks priority ties: the earlier path wins
            if p.accepts(cls) and (best is None or p.priority > best.priority):
                best = p
        if best is None:
            raise RuntimeError(
                f"no registered path takes {cls!r} matrices of the {where}; registered: {REGISTRY.names()} "
                f"(rejected: {rejected})"
            )
        owners.append(best)
    for p in ok:
        if p not in owners:
            winners = sorted({o.name for o in owners if any(p.accepts(c) for c in ROUTE_CLASSES)})
            rejected.append((p.name, f"outranked (priority {p.priority}) by {', '.join(winners)}"))
    return tuple(owners), rejected


def plan_key(batch: int, m: int, n: int, dtype, device_type: str, forced: str | None) -> tuple:
    """The plan cache's key: the shape, the forced path and the registry's version."""
    return (batch, m, n, dtype, device_type, forced, REGISTRY.version)


def plan_for(spec: InputSpec, forced: str | None = None) -> Plan:
    """The (cached) plan for ``spec``; raises ``ValueError`` for an unknown or inapplicable forced path."""
    key = plan_key(spec.batch, spec.m, spec.n, spec.dtype, spec.device_type, forced)
    plan = _plans.get(key)
    if plan is not None:
        return plan
    return _build(key, spec, forced)


def _build(key, spec: InputSpec, forced: str | None) -> Plan:
    owners, rejected = _choose(spec, forced)
    # The registry may have loaded its built-ins inside _choose: key by the version it now has.
    key = key[:-1] + (REGISTRY.version,)
    plan = Plan(key, spec, forced, owners, rejected)
    with _plans_lock:
        _plans[key] = plan
        while len(_plans) > PLAN_CACHE_SIZE:
            _plans.popitem(last=False)
    return plan


def clear_plans() -> None:
    """Forget every cached plan (they are also invalidated by any registry change)."""
    with _plans_lock:
        _plans.clear()
