"""The dispatcher: run the plan of an input shape (:mod:`adaptqr.planning`: chosen on the host,
cached), routing each matrix on the device.

Running a plan on a batch ``A`` (``(*batch, m, n)``):

1. ``H`` = column-major copy of ``A`` (flattened to ``(B, m, n)``), ``tau`` = ``(B, min(m, n))``.
2. If the plan needs routes (a routed path that reads them for this shape, or several paths
   sharing the batch) and ``ADAPTQR_DETECT`` is on:
   ``routes, features = route(H)`` (as ``classify(probe(H))``, lean); else every matrix
   is ``ROUTE_DEFAULT`` ("dense").
3. The *base* path (the owner of "dense" when it is routed or takes every class) factors the
   whole batch, reading ``info.routes`` itself: no host sync, capturable as one CUDA graph.
   A routed path is followed by ``adaptqr.detectors.finish_tail(H, tau, n_active, n_kept=...,
   n_nonzero=...)`` with the probe's counts.
4. Every other owner (a user path declared for some classes only, or a second routed path)
   gets only its matrices: gathered by route, factored, scattered back. Counting them needs
   ONE host sync per call; it happens only when a path that is not the base shares a batch
   (e.g. a user path for "lowrank" next to the GPU path), and such plans are not captured.

For CUDA inputs of capturable plans the whole of 1-4 goes through
``adaptqr.graphs.run(key, fn, A)`` (capture once, replay after).

Example::

    >>> import torch
    >>> from adaptqr import dispatch
    >>> H, tau = dispatch.run(torch.randn(2, 3, 5, 5))
    >>> H.shape, tau.shape, H.mT.is_contiguous()
    (torch.Size([2, 3, 5, 5]), torch.Size([2, 3, 5]), True)
    >>> dispatch.plan_for(dispatch.spec_of(torch.randn(4, 5, 5))).owner_names()["dense"]
    'torch'
"""

from __future__ import annotations

import math

import torch

from adaptqr import config
from adaptqr import log as _log
from adaptqr.layout import geqrf_outputs, load_column_major
from adaptqr.planning import (  # noqa: F401  (PLAN_CACHE_SIZE, plan_for, spec_of, clear_plans: public here too)
    _NUM_CLASSES,
    PLAN_CACHE_SIZE,
    Plan,
    _build,
    _plans,
    clear_plans,
    plan_for,
    plan_key,
    spec_of,
)
from adaptqr.registry import REGISTRY, InputSpec, MatrixInfo, Path

# ---------------------------------------------------------------------------------------------
# The layers below (imported on first use; an import error of the package's own modules is
# raised, never turned into a silent torch.geqrf)
# ---------------------------------------------------------------------------------------------


def detectors():
    """``adaptqr.detectors`` (``route``, ``finish_tail``)."""
    import adaptqr.detectors as det

    return det


def graphs():
    """``adaptqr.graphs`` (``run``)."""
    import adaptqr.graphs as g

    return g


# ---------------------------------------------------------------------------------------------
# Running a plan
# ---------------------------------------------------------------------------------------------


def probe(plan: Plan, H: torch.Tensor, src: torch.Tensor | None = None,
          settings: config.Settings | None = None):
    """``(routes, features)`` for the column-major batch ``H`` under ``plan`` and the call's
    ``settings`` (default: the current snapshot).

    ``routes`` is None (every matrix "dense") when the plan needs no routes or
    ``ADAPTQR_DETECT=0``. With ``src`` (a ``(B, m, n)`` view of the input), the
    probe also loads ``src`` into ``H`` (fused where it can), and the result is
    ``(None, None)`` when it does not run: the caller then loads ``H`` itself.
    """
    settings = settings or config.snapshot()
    if not plan.probe or not settings.detect:
        return (None, {}) if src is None else (None, None)
    # Only what routing needs, in two launches (the full probe is ~40 small kernels).
    return detectors().route(H, src=src, settings=settings)


def _call(path: Path, H, tau, info, spec: InputSpec, notes: dict | None = None) -> None:
    """Run ``path`` on ``H``/``tau``; what it reports in ``info.notes`` goes into ``notes``
    (for the decisions log) with matrix indices of this batch."""
    try:
        path.impl(H, tau, info)
    except Exception as exc:
        raise RuntimeError(
            f"adaptqr: path {path.name!r} failed on {spec.describe()} (batch of {H.shape[0]}): "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if path.routed and "n_active" in info.features:
        f = info.features
        counts = {name: f[name] for name in ("n_kept", "n_nonzero") if name in f}
        detectors().finish_tail(H, tau, f["n_active"], **counts)
    if notes is not None and info.notes:
        notes.update(info.notes)


def _subset(features: dict, idx: torch.Tensor) -> dict:
    return {k: v.index_select(0, idx) for k, v in features.items()}


def factor(plan: Plan, H: torch.Tensor, tau: torch.Tensor, routes=None, features=None,
           notes: dict | None = None, settings: config.Settings | None = None,
           panel_out: torch.Tensor | None = None) -> None:
    """Run ``plan`` on the column-major ``H`` ``(B, m, n)`` and ``tau`` ``(B, k)``, in place.

    ``routes``/``features`` come from :func:`probe` (None: all "dense"). ``notes`` (a dict)
    receives what the paths report (``MatrixInfo.notes``) for the decisions log.
    ``settings`` (default: the current snapshot) reaches the paths as ``info.settings``.
    ``panel_out`` (:meth:`Plan.panel_outcomes` columns) reaches the lead path as
    ``info.panel_out``.
    """
    spec = plan.spec
    settings = settings or config.snapshot()
    if features is None:
        features = {}
    if routes is None or not plan.gathered:
        owner = plan.lead
        if routes is None:
            # Nothing is known: every matrix is "dense", so its owner takes the whole batch.
            routes = plan.zero_routes(H.shape[0], H.device)
        _call(owner, H, tau, MatrixInfo(routes, features, settings, panel_out), spec, notes)
        return

    # Some owner takes only its matrices. Gather them BEFORE the base factors H in place.
    owner = plan.owner_table(H.device).index_select(0, routes.long().clamp_(0, _NUM_CLASSES - 1))
    order = torch.argsort(owner, stable=True)
    counts = torch.bincount(owner, minlength=len(plan.paths)).tolist()  # the one host sync
    offsets = [0]
    for c in counts:
        offsets.append(offsets[-1] + c)
    jobs = []
    for path, i in plan.gathered:
        if counts[i] == 0:
            continue
        idx = order[offsets[i] : offsets[i + 1]]
        Hs = H.mT.index_select(0, idx).mT  # stays column-major
        taus = torch.empty((idx.numel(), tau.shape[1]), dtype=tau.dtype, device=tau.device)
        jobs.append((path, idx, Hs, taus))
    if plan.base is not None:
        _call(plan.base, H, tau, MatrixInfo(routes, features, settings, panel_out), spec, notes)
    for path, idx, Hs, taus in jobs:
        _call(path, Hs, taus, MatrixInfo(routes.index_select(0, idx), _subset(features, idx),
                                         settings), spec)
        H.mT.index_copy_(0, idx, Hs.mT)
        tau.index_copy_(0, idx, taus)


def _alloc(A: torch.Tensor, B: int, m: int, n: int):
    """``(a, tau)`` in torch.geqrf's exact layout for ``A``'s shape, and their ``(B, m, n)`` /
    ``(B, k)`` views for the paths."""
    a, tau = geqrf_outputs(A)
    return (a, tau) + _path_views(a, tau, B, m, n)


def empty_outputs(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Uninitialized ``(a, tau)`` in torch.geqrf's layout for ``A``'s shape (also on fake
    tensors: the custom op's fake implementation)."""
    m, n = A.shape[-2], A.shape[-1]
    return _alloc(A, math.prod(A.shape[:-2]), m, n)[:2]


def _path_views(a: torch.Tensor, tau: torch.Tensor, B: int, m: int, n: int):
    """The ``(B, m, n)`` / ``(B, k)`` views of geqrf's outputs that the paths take."""
    k = min(m, n)
    # as_strided, not view: a view keeps arbitrary strides on size-1 dims (B = 1 from a 2-D
    # input), and the paths check for exactly (m*n, 1, m) and (k, 1).
    return a.as_strided((B, m, n), (m * n, 1, m)), tau.as_strided((B, k), (k, 1))


class _Runner:
    """The eager plan on a ``(*batch, m, n)`` input, as an in-place plan for graphs.run.

    ``runner(A) -> (a, tau)`` runs it eagerly. For a CUDA graph it splits into ``alloc``
    (torch.geqrf's output layout), ``load`` (``a.copy_(A)``, outside the graph) and ``body``
    (probe and factor in place): a replay then copies the input once, straight into the
    output, instead of into a static input and again inside the graph. Where the lead path
    reports what its tried panels took (:meth:`Plan.panel_outcomes`), a third output holds
    it (``MatrixInfo.panel_out``): a replay returns its own with the factors, for the log.
    """

    __slots__ = ("plan", "settings", "routes", "fp16", "n_active", "notes")

    def __init__(self, plan: Plan, settings: config.Settings):
        self.plan = plan
        self.settings = settings
        self.routes = None
        self.fp16 = None
        self.n_active = None
        self.notes: dict = {}

    def alloc(self, A: torch.Tensor) -> tuple:
        shape = A.shape
        a, tau_full, _, _ = _alloc(A, self.plan.spec.batch, shape[-2], shape[-1])
        n_out = self.plan.panel_outcomes(A.device, self.settings)
        if n_out:
            return a, tau_full, torch.full((self.plan.spec.batch, n_out), -1, dtype=torch.int32,
                                           device=A.device)
        return a, tau_full

    @staticmethod
    def load(A: torch.Tensor, outs: tuple) -> None:
        load_column_major(A, outs[0])

    def body(self, outs: tuple, src: torch.Tensor | None = None) -> None:
        spec = self.plan.spec
        H, tau = _path_views(outs[0], outs[1], spec.batch, spec.m, spec.n)
        routes, features = probe(self.plan, H, src, self.settings)
        if features is None:  # no probe ran to load the input
            load_column_major(src, H)
            features = {}
        self.routes = routes
        self.fp16 = features.get("fp16_scale")
        self.n_active = features.get("n_active")
        factor(self.plan, H, tau, routes, features, self.notes, self.settings,
               outs[2] if len(outs) > 2 else None)

    def __call__(self, A: torch.Tensor):
        outs = self.alloc(A)
        spec = self.plan.spec
        try:
            # Eagerly the probe loads the input as it reads it (one pass over the batch).
            src = A.view(spec.batch, spec.m, spec.n)
        except RuntimeError:  # no (B, m, n) view of these strides
            src = None
        if src is None:
            self.load(A, outs)
        self.body(outs, src)
        return outs


def run(A: torch.Tensor, path: str | None = None, op: str = "geqrf", *, fresh: bool = False):
    """Factor a validated ``(*batch, m, n)`` tensor: ``(a, tau)`` with torch.geqrf's layout.

    ``path`` forces a path by name (else ``ADAPTQR_PATH``). ``op``: the public op the
    factorization serves (``"geqrf"``, ``"qr"``), for the decisions log. ``fresh``: a graph
    replay returns copies of its outputs rather than its own (the custom op: torch.compile's
    CUDA graphs want every output in their own memory pool; an eager run's are fresh). The input is
    never modified.
    """
    settings = config.snapshot()  # the call's settings, read once
    forced = path if path is not None else settings.path
    shape = A.shape
    m, n = shape[-2], shape[-1]
    B = math.prod(shape[:-2])
    dev_type = "cuda" if A.is_cuda else A.device.type
    key = plan_key(B, m, n, A.dtype, dev_type, forced)
    plan = _plans.get(key)
    if plan is None:
        if not REGISTRY.builtins_loaded:
            REGISTRY.ensure_builtins()
            key = key[:-1] + (REGISTRY.version,)
            plan = _plans.get(key)
        if plan is None:
            if B == 0 or m == 0 or n == 0:
                return _empty(A, forced, op)
            plan = _build(key, InputSpec(B, m, n, A.dtype, dev_type), forced)
    else:
        try:
            _plans.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile
            pass

    runner = _Runner(plan, settings)
    mode = "eager"
    # Inside a capture of the caller's (torch.compile's mode="reduce-overhead", or a user's
    # torch.cuda.graph) the kernels are captured there: no graph of our own within it.
    if dev_type == "cuda" and plan.capturable and not torch.cuda.is_current_stream_capturing():
        mode = "graph"
        # Allocated outside any capture, so the graph only reads it.
        plan.zero_routes(B, A.device)
        result = graphs().run(graph_key(key, shape, A.get_device(), settings), runner, A,
                              fresh=fresh)
    elif plan.direct is not None:
        # The whole batch to a path that takes the caller's tensor as it is (torch.geqrf):
        # no output allocated and loaded here first (8x32x32 on a CPU: 90 -> 73 us a call,
        # EXPERIMENTS.md O2).
        result = plan.direct(A)
    else:
        with graphs().on_device(A.device):
            result = runner(A)

    if _log._enabled or settings.log is not None:
        routes, fp16, n_active = runner.routes, runner.fp16, runner.n_active
        if mode == "graph":
            # A replay does not call the runner, and routes written inside a graph are
            # overwritten by the next replay: probe again, eagerly, for the record.
            a, _, H, _ = _alloc(A, B, m, n)
            a.copy_(A)
            with graphs().on_device(A.device):
                routes, feats = probe(plan, H, settings=settings)
            fp16 = (feats or {}).get("fp16_scale")
            n_active = (feats or {}).get("n_active")
        _log.record(shape=list(shape), dtype=A.dtype, device=A.device, forced=forced, plan=plan.owner_names(),
                    rejected=list(plan.rejected), mode=mode, routes=routes, fp16=fp16,
                    fallback=runner.notes.get("fallback"), op=op,
                    panels=panels_of(plan, A.device, n_active, _outcomes(result, mode)))
    return result[0], result[1]


def _outcomes(result: tuple, mode: str) -> torch.Tensor | None:
    """The call's ``MatrixInfo.panel_out`` for its record, or None: a replay's is its output
    slot's own, which a held record would keep busy (and the next replay of the slot would
    overwrite), so the record gets a copy (on the device, no sync)."""
    if len(result) < 3:
        return None
    return result[2].clone() if mode == "graph" else result[2]


def panels_of(plan: Plan, device: torch.device, n_active, outcomes=None) -> tuple | None:
    """``(path name, nb, kinds, n_active, outcomes)`` for the decisions log and ``explain``:
    the panel kernels (``Path.panels``) of the path that takes the dense class and what its
    tried panels took (the call's ``MatrixInfo.panel_out``, or None: ``explain`` factors
    nothing), or None when it does not describe them."""
    owner = plan.lead
    if owner.panels is None:
        return None
    nb, kinds = owner.panels(plan.spec, device)
    return owner.name, nb, list(kinds), n_active, outcomes


def graph_key(plan_key: tuple, shape, device_index: int, settings: config.Settings) -> tuple:
    """The graph cache's key of a call: its plan, shape and device, and its whole settings
    snapshot, so that a replay never serves a graph captured under other settings (any
    variable the plan reads while it runs: ADAPTQR_DETECT, ADAPTQR_FP16, the experiment
    knobs; the tail precision was missing from a hand-made list once)."""
    return ("adaptqr.geqrf", plan_key, tuple(shape), device_index, settings)


def check_known(forced: str | None) -> None:
    """Raise ``ValueError`` listing the known paths when ``forced`` names none (empty inputs
    are not planned, but an unknown forced path is an error all the same)."""
    if forced is not None and REGISTRY.get(forced) is None:
        REGISTRY.ensure_builtins()
        if REGISTRY.get(forced) is None:
            raise ValueError(f"unknown path {forced!r} (from path= or ADAPTQR_PATH); known paths: {REGISTRY.names()}")


def _empty(A: torch.Tensor, forced: str | None, op: str):
    """The result for B == 0, m == 0 or n == 0: nothing to factor, nothing dispatched."""
    check_known(forced)
    shape = A.shape
    m, n = shape[-2], shape[-1]
    a, tau, _, _ = _alloc(A, math.prod(shape[:-2]), m, n)
    if _log._enabled or config.log_target() is not None:
        _log.record(shape=list(shape), dtype=A.dtype, device=A.device, forced=forced, plan={}, rejected=[],
                    mode="empty", routes=None, op=op)
    return a, tau
