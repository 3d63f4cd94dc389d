"""The path registry: which implementations exist, what they take, which class of matrix each accepts.

A *path* is one way of factoring a batch in place (see docs/INTERNALS.md for the contract of
``impl(H, tau, info)``). The dispatcher (:mod:`adaptqr.dispatch`) picks, for each input shape,
the highest-priority path that supports it for each per-matrix *route class*.

Route classes
-------------
The detectors write one int32 route code per matrix; this table is the only place that maps
codes to names (the detectors, the dispatcher, the log and ``explain`` all use it):

====  ===========  ==============================================================
code  name         meaning
====  ===========  ==============================================================
0     ``dense``    the default: nothing special is known (``ROUTE_DEFAULT``)
1     ``lowrank``  a negligible or zero column tail: ``features["n_active"] < n``
2     ``upper``    already upper triangular: ``features["n_active"] == 0``
====  ===========  ==============================================================

New classes are appended (codes never change meaning); a path declares the class names it
accepts, or ``"*"`` for all of them.

Example::

    >>> import torch, adaptqr
    >>> @adaptqr.register_path(name="toy", supports=lambda s: None if s.device_type == "cpu" else "CPU only",
    ...                        classes={"lowrank"}, priority=5, description="toy example")
    ... def toy(H, tau, info):
    ...     a, t = torch.geqrf(H)
    ...     H.copy_(a); tau.copy_(t)
    >>> "toy" in adaptqr.paths_registered()
    True
    >>> adaptqr.unregister_path("toy")
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import torch

# ---------------------------------------------------------------------------------------------
# Route classes
# ---------------------------------------------------------------------------------------------

ROUTE_CLASSES: tuple[str, ...] = ("dense", "lowrank", "upper")
"""Route class names; the index of a name is its int32 route code."""

ROUTE_DEFAULT: int = 0
"""Route code of a matrix nothing is known about (``"dense"``); also what every matrix gets
when no detector ran."""

ALL_CLASSES = "*"
"""Wildcard for :attr:`Path.classes`: the path accepts every route class, present and future."""

_CODE_OF = {name: code for code, name in enumerate(ROUTE_CLASSES)}


def route_code(name: str) -> int:
    """The int route code of a class name, e.g. ``route_code("lowrank") == 1``."""
    try:
        return _CODE_OF[name]
    except KeyError:
        raise ValueError(f"unknown route class {name!r}; known classes: {list(ROUTE_CLASSES)}") from None


def route_name(code: int) -> str:
    """The class name of an int route code, e.g. ``route_name(2) == "upper"``."""
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < len(ROUTE_CLASSES):
        raise ValueError(f"unknown route code {code!r}; known codes: 0..{len(ROUTE_CLASSES) - 1} {list(ROUTE_CLASSES)}")
    return ROUTE_CLASSES[code]


#: Joins a tried panel kind to the kind it falls back to (:attr:`Path.panels`).
TRY_MARK = "+"


def fallback_kind(kind: str) -> str | None:
    """The kind a tried panel kind (``"base+try"``) falls back to, None for a plain kind.

    >>> fallback_kind("cluster-cuda+gram"), fallback_kind("register")
    ('cluster-cuda', None)
    """
    base, mark, _ = kind.partition(TRY_MARK)
    return base if mark else None


# ---------------------------------------------------------------------------------------------
# What a path sees
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputSpec:
    """The static description of a call that plans are chosen from (no tensor data).

    ``batch`` is the flattened batch size B (product of the leading dims), the matrices are
    ``m x n``; ``dtype`` a torch dtype; ``device_type`` e.g. ``"cpu"`` or ``"cuda"``.

    >>> InputSpec(batch=20, m=32, n=32, dtype=torch.float32, device_type="cuda").square
    True
    """

    batch: int
    m: int
    n: int
    dtype: torch.dtype
    device_type: str

    @property
    def square(self) -> bool:
        return self.m == self.n

    def describe(self) -> str:
        """``'20x32x32 float32 on cuda'``: for error messages."""
        return f"{self.batch}x{self.m}x{self.n} {str(self.dtype).replace('torch.', '')} on {self.device_type}"


class MatrixInfo:
    """Per-matrix information handed to ``impl(H, tau, info)``.

    ``routes``: ``(B,)`` int32 device tensor of route codes (all ``ROUTE_DEFAULT`` when no
    detector ran). ``features``: dict name -> ``(B, ...)`` device tensor (e.g. ``"n_active"``,
    int32 ``(B,)``); empty when no detector ran. ``notes``: what the path reports back for
    the decisions log (plain data, host side), e.g. ``notes["fallback"]``: the matrices it
    handed to another path and why. ``settings``: the call's
    :class:`adaptqr.config.Settings` snapshot (None outside a dispatched call).
    ``panel_out``: None, or, for a path whose ``Path.panels`` names a tried kind
    (``"base+try"``, :func:`fallback_kind`), a ``(B, number of panels)`` int32 device
    tensor in which the path writes what each matrix's tried panel took: 1 the try, 0 the
    base kind (the decisions log counts it so); an entry left unwritten counts as named.

    >>> info = MatrixInfo(torch.zeros(3, dtype=torch.int32), {})
    >>> info.routes.shape, info.features, info.notes, info.panel_out
    (torch.Size([3]), {}, {}, None)
    """

    __slots__ = ("routes", "features", "notes", "settings", "panel_out")

    def __init__(self, routes: torch.Tensor | None, features: Mapping[str, torch.Tensor] | None = None,
                 settings=None, panel_out: torch.Tensor | None = None):
        self.routes = routes
        self.features = features if features is not None else {}
        self.notes: dict = {}
        self.settings = settings
        self.panel_out = panel_out

    def __repr__(self) -> str:
        r = None if self.routes is None else tuple(self.routes.shape)
        return f"MatrixInfo(routes={r}, features={sorted(self.features)})"


# ---------------------------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------------------------


def _always(spec: InputSpec) -> None:
    return None


@dataclass(frozen=True)
class Path:
    """One registered implementation.

    - ``name``: identifier, unique in the registry (what ``path=`` / ``ADAPTQR_PATH`` name).
    - ``impl(H, tau, info) -> None``: factors ``H`` (``(B, m, n)``, column-major) in place and
      writes ``tau`` (``(B, min(m, n))``); see docs/INTERNALS.md.
    - ``supports(spec) -> None | str``: static predicate on an :class:`InputSpec`; ``None``
      if the path takes that input, else the reason it declines (shown in the log).
    - ``classes``: frozenset of route class names it accepts, ``{"*"}`` for all.
    - ``priority``: higher wins, per class.
    - ``capturable``: the impl can be captured in a CUDA graph (no host sync, no allocation
      outside torch's caching allocator).
    - ``routed``: the impl reads ``info.routes`` itself and handles every class it accepts in
      its kernels, so it can be given the whole batch; a path that is not routed gets only the
      matrices of its classes (gathered, one host sync) when it shares a batch with another
      path.
    - ``reads_routes(spec) -> bool``: for a routed path, whether its kernels use the routes
      for this input at all (None: always). When they would change no work (e.g. a whole QR
      in one fused launch) the plan skips the probes, which would cost more than they save.
    - ``description``: one line for ``explain`` and the docs.
    - ``direct(A) -> (a, tau)`` (optional): the same factorization from the caller's
      ``(*, m, n)`` tensor itself, in torch.geqrf's output layout, never modifying ``A``;
      the dispatcher calls it instead of ``impl`` when this path takes a whole batch with
      no probe (it then skips allocating and loading ``H``).
    - ``prefers(spec) -> None | str`` (optional): where the path is measured to win, for the
      automatic plan only: a reason keeps the plan from choosing it for ``spec`` (shown in the
      log), while naming the path (``path=`` / ``ADAPTQR_PATH``) still takes it. ``supports``
      says what the path can do, ``prefers`` where it should be chosen.
    - ``panels(spec, device) -> (nb, kinds)`` (optional): the panel width and the kernel
      each panel runs, in column order, for ``explain`` and the decisions log (a panel at
      or past a matrix's ``n_active`` is counted as skipped there). A kind ``"base+try"``
      is tried first and may fall back to ``base`` matrix by matrix: the path then gets
      ``MatrixInfo.panel_out`` to say which, and the log counts each under what it took.
    """

    name: str
    impl: Callable[..., None]
    supports: Callable[[InputSpec], str | None] = _always
    classes: frozenset = frozenset({ALL_CLASSES})
    priority: int = 0
    capturable: bool = False
    routed: bool = False
    description: str = ""
    reads_routes: Callable[[InputSpec], bool] | None = None
    panels: Callable[..., tuple] | None = None
    direct: Callable[..., tuple] | None = None
    prefers: Callable[[InputSpec], str | None] | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"path name must be a non-empty Python identifier, got {self.name!r}")
        if not callable(self.impl):
            raise TypeError(f"path {self.name!r}: impl must be callable, got {type(self.impl).__name__}")
        if not callable(self.supports):
            raise TypeError(f"path {self.name!r}: supports must be callable, got {type(self.supports).__name__}")
        object.__setattr__(self, "classes", _normalize_classes(self.name, self.classes))
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            raise TypeError(f"path {self.name!r}: priority must be an int, got {self.priority!r}")
        for flag in ("capturable", "routed"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"path {self.name!r}: {flag} must be a bool, got {getattr(self, flag)!r}")
        if not isinstance(self.description, str):
            raise TypeError(f"path {self.name!r}: description must be a str")
        for name in ("reads_routes", "panels", "direct", "prefers"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise TypeError(f"path {self.name!r}: {name} must be callable or None")

    def uses_routes(self, spec: InputSpec) -> bool:
        """Whether this routed path's kernels would read per-matrix routes for ``spec``."""
        return self.routed and (self.reads_routes is None or bool(self.reads_routes(spec)))

    def accepts(self, class_name: str) -> bool:
        """Whether this path takes matrices of route class ``class_name``."""
        return ALL_CLASSES in self.classes or class_name in self.classes

    @property
    def takes_all_classes(self) -> bool:
        return all(self.accepts(c) for c in ROUTE_CLASSES)

    def check(self, spec: InputSpec) -> str | None:
        """``supports(spec)``, with a clear error when the predicate itself misbehaves."""
        return self._ask("supports", self.supports, spec)

    def check_preferred(self, spec: InputSpec) -> str | None:
        """``prefers(spec)`` (None without one), checked as :meth:`check`."""
        return None if self.prefers is None else self._ask("prefers", self.prefers, spec)

    def _ask(self, what: str, predicate, spec: InputSpec) -> str | None:
        try:
            reason = predicate(spec)
        except Exception as exc:
            raise RuntimeError(f"path {self.name!r}: {what}() raised on {spec.describe()}: {exc!r}") from exc
        if reason is not None and not isinstance(reason, str):
            raise TypeError(
                f"path {self.name!r}: {what}() must return None or a reason string, got {type(reason).__name__}"
            )
        return reason


def _normalize_classes(name: str, classes) -> frozenset:
    if isinstance(classes, str):
        classes = {classes}
    try:
        out = frozenset(classes)
    except TypeError:
        raise TypeError(f"path {name!r}: classes must be a set of class names or '*', got {classes!r}") from None
    if not out:
        raise ValueError(f"path {name!r}: classes is empty; give class names from {list(ROUTE_CLASSES)} or '*'")
    unknown = sorted(c for c in out if c != ALL_CLASSES and c not in _CODE_OF)
    if unknown:
        raise ValueError(f"path {name!r}: unknown route classes {unknown}; known: {list(ROUTE_CLASSES)} or '*'")
    return out


# ---------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------


class Registry:
    """Ordered name -> :class:`Path`; ``version`` changes on every edit (it keys plan caches)."""

    def __init__(self):
        self._paths: dict[str, Path] = {}
        self._lock = threading.RLock()
        self.version = 0
        self.builtins_loaded = False
        self._loading = False

    def ensure_builtins(self) -> None:
        """Register the built-in paths once (lazily, so ``import adaptqr`` does not import triton).

        ``builtins_loaded`` turns True only once every built-in is registered, so a thread that
        sees it True (read without the lock on the hot path) never plans against a partial
        registry; other threads wait on the lock meanwhile. ``_loading`` stops the recursion of
        the loading thread itself (``register_path`` calls back here).
        """
        if self.builtins_loaded:
            return
        with self._lock:
            if self.builtins_loaded or self._loading:
                return
            self._loading = True
            try:
                from adaptqr import builtin_paths

                builtin_paths.register_all(self)
            finally:
                self._loading = False
            self.builtins_loaded = True

    def add(self, path: Path) -> Path:
        with self._lock:
            if path.name in self._paths:
                raise ValueError(f"a path named {path.name!r} is already registered; unregister_path it first")
            self._paths[path.name] = path
            self.version += 1
        return path

    def remove(self, name: str) -> Path:
        with self._lock:
            try:
                path = self._paths.pop(name)
            except KeyError:
                raise KeyError(f"no path named {name!r}; registered: {list(self._paths)}") from None
            self.version += 1
        return path

    def get(self, name: str) -> Path | None:
        return self._paths.get(name)

    def names(self) -> list[str]:
        return list(self._paths)

    def paths(self) -> list[Path]:
        return list(self._paths.values())


REGISTRY = Registry()


def register_path(
    impl: Callable | None = None,
    *,
    name: str,
    supports: Callable[[InputSpec], str | None] | None = None,
    classes: Iterable[str] | str = ALL_CLASSES,
    priority: int = 0,
    capturable: bool = False,
    routed: bool = False,
    description: str = "",
    reads_routes: Callable[[InputSpec], bool] | None = None,
    panels: Callable[..., tuple] | None = None,
    prefers: Callable[[InputSpec], str | None] | None = None,
    registry: Registry | None = None,
):
    """Register a path; usable as a decorator on the impl or called with ``impl=``.

    Returns the impl unchanged when used as a decorator, else the :class:`Path`. Raises
    ``ValueError`` if ``name`` is already registered (built-ins included).

    >>> import torch, adaptqr
    >>> def fallback(H, tau, info):
    ...     a, t = torch.geqrf(H); H.copy_(a); tau.copy_(t)
    >>> p = adaptqr.register_path(fallback, name="mine", priority=-5)
    >>> p.name, p.classes
    ('mine', frozenset({'*'}))
    >>> adaptqr.unregister_path("mine")
    """
    fields = dict(locals())  # the keyword arguments: Path's fields, less impl
    reg = registry if fields.pop("registry") is not None else REGISTRY
    del fields["impl"]
    if supports is None:
        fields["supports"] = _always

    def build(fn: Callable) -> Path:
        if reg is REGISTRY:
            reg.ensure_builtins()
        return reg.add(Path(impl=fn, **fields))

    if impl is not None:
        return build(impl)

    def decorator(fn: Callable) -> Callable:
        build(fn)
        return fn

    return decorator


def unregister_path(name: str) -> None:
    """Remove a path by name (``KeyError`` listing the registered names if there is none)."""
    REGISTRY.ensure_builtins()
    REGISTRY.remove(name)


def paths_registered() -> dict[str, Path]:
    """Name -> :class:`Path`, in registration order, built-ins included."""
    REGISTRY.ensure_builtins()
    return {p.name: p for p in REGISTRY.paths()}


def get_path(name: str) -> Path | None:
    REGISTRY.ensure_builtins()
    return REGISTRY.get(name)
