"""Every ``ADAPTQR_*`` environment variable, read in one place.

Variables (read at each call through :func:`get`, so tests and users may change them at
run time; the dispatcher's hot path reads single variables through :func:`forced_path`,
:func:`log_target` and :func:`detect_enabled` instead of building a whole Config):

``ADAPTQR_PATH``
    Force one path by name for every call (as ``adaptqr.geqrf(A, path=...)``). Unknown
    names, or a path that cannot take the input, raise; there is no silent fallback.
``ADAPTQR_LOG``
    The dispatch decisions log. Unset/``0``: records are kept only in the in-memory ring
    buffer when it is enabled by :func:`adaptqr.log.enable`; ``1``: also mirror each record
    to ``logging.getLogger("adaptqr.dispatch")``; any other value: a path to a JSON-lines
    file that records are appended to.
``ADAPTQR_LOG_SIZE``
    Ring buffer length of the decisions log (default 256).
``ADAPTQR_GRAPHS``
    ``0`` turns CUDA-graph capture and replay off (default on).
``ADAPTQR_GRAPH_ENTRIES`` / ``ADAPTQR_GRAPH_BYTES``
    Bounds of the graph cache: entries (default 16) and bytes of static buffers
    (default 4 GiB); least recently used entries are evicted first.
``ADAPTQR_GRAPH_MAX_INPUT``
    Inputs larger than this many bytes (default 128 MiB) run eagerly instead of through a
    graph: their kernels run long enough to hide the launches, and a graph would add a copy
    in, a clone out and a retained pool of twice the input (see ``GRAPH_MAX_INPUT``).
``ADAPTQR_SPLIT_MIN_ROWS``
    Experiment knob of the householder path: overrides ``schedules.SPLIT_MIN_ROWS`` (fewest
    panel rows a program of the row-split panel takes, i.e. how many programs share one tall
    panel of a small batch), so ``adaptqr bench --env`` can compare settings in one run.
``ADAPTQR_TAIL_PREC``
    Experiment knob of the householder path: the product precision (``tf32x3``, ``tf32`` or
    ``ieee``) of trailing column tiles wholly past a matrix's ``n_active`` (overrides
    ``schedules.TAIL_PREC``), so ``adaptqr bench --env`` can compare them in one run.
``ADAPTQR_FP16``
    ``0`` keeps every matrix on the FP32 trailing update (default on: the route probe sends
    a dense matrix whose estimated error fits the budget to the float16-resident trailing
    matrix, docs/NUMERICS.md); read when the probe launches, so a captured graph keeps the
    setting it was captured with. ``adaptqr bench --env`` compares the two in one run.
``ADAPTQR_FP16_MAX_N``
    Experiment knob of the route probe: overrides ``detectors.classify.FP16_MAX_N`` (largest
    n offered the FP16 route), so ``adaptqr bench --env`` can compare it in one run; part of
    the graph cache's key.
``ADAPTQR_CHOLQR``
    ``1`` lets the cholqr path (issue 9: float64 CholeskyQR rebuilt into geqrf's form, per
    matrix fallback to householder) take square float32 CUDA batches with ``n >=
    paths.cholqr.CHOLQR_MIN_N`` automatically, and lets ``path="cholqr"`` force it. Default
    off: on the H200 it is slower than householder so far (docs/EXPERIMENTS.md C6, C8). Read
    when a plan is chosen (part of the plan cache's key).
``ADAPTQR_DETECT``
    ``0`` skips the per-matrix probes: every matrix gets the default route.
``ADAPTQR_COMMIT``
    The git commit that ``adaptqr bench`` records for a working tree copied to a GPU machine;
    when set it wins over what ``git`` says there (a copied ``.git`` may be stale).
``ADAPTQR_BASELINE_CACHE``
    Folder of the cached torch.geqrf baseline timings used by ``adaptqr bench``
    (default ``bench/baseline_cache`` under the current directory).

Example::

    >>> import os
    >>> from adaptqr import config
    >>> os.environ["ADAPTQR_GRAPHS"] = "0"
    >>> config.get().graphs
    False
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple


# Largest input (bytes) replayed through a CUDA graph. Below it sit the launch-bound shapes
# of qr_v2 (20x32: 80 KiB, 40x176: 5 MiB, 40x352: 20 MiB: one to ~20 launches of tens of
# microseconds of GPU work each) and, since session 9, 8x2048 and 2x4096 (128 MiB each);
# above it 60x1024 (240 MiB) and 640x512 (640 MiB), whose launches overlap milliseconds of
# GPU work. Measured on the H200 (docs/EXPERIMENTS.md G1, G3), eager against graphs: G1
# (session 1) 640x512 14.45 vs 14.97 ms, 60x1024 9.97 vs 10.08, 8x2048 13.37 vs 13.07,
# 2x4096 26.22 vs 25.74; G3 (run 2019) 8x2048 11.49 vs 11.16, 2x4096 22.12 vs 21.36 (3 %,
# more launches since), and with the FP16 route at 2048 eager 9.59 vs graph 9.22. The graph
# keeps twice the input (256 MiB for these two shapes) in its pool while it is cached.
GRAPH_MAX_INPUT = 128 << 20


@dataclass(frozen=True)
class Config:
    path: str | None
    log: str | None
    log_size: int
    graphs: bool
    graph_entries: int
    graph_bytes: int
    graph_max_input: int
    detect: bool
    baseline_cache: str


# os.environ.get costs ~1.5 us (it encodes the key and decodes the value); a 20x32 call reads
# eight variables on a ~30 us host path. On POSIX os.environ keeps its bytes in `_data`,
# which os.environ[...] = / del / putenv-through-os.environ update, so a raw lookup there
# sees every change made through os.environ (and none made by C code calling setenv, which
# os.environ.get does not see either).
_ENV_DATA = getattr(os.environ, "_data", None) if os.name == "posix" else None
_KEYS: dict[str, bytes] = {}


def _env(name: str) -> str | None:
    """``os.environ.get(name)``, faster on POSIX (see ``_ENV_DATA``)."""
    if _ENV_DATA is None or not isinstance(_ENV_DATA, dict):
        return os.environ.get(name)
    key = _KEYS.get(name)
    if key is None:
        key = _KEYS[name] = os.fsencode(name)
    raw = _ENV_DATA.get(key)
    return None if raw is None else os.fsdecode(raw)


def _flag(name: str, default: bool) -> bool:
    raw = _env(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() not in ("0", "false", "off", "no")


def _int(name: str, default: int) -> int:
    raw = _env(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


def forced_path() -> str | None:
    """``ADAPTQR_PATH`` alone (the dispatcher reads it on every call, so no Config is built)."""
    return _env("ADAPTQR_PATH") or None


def log_target() -> str | None:
    """``ADAPTQR_LOG`` alone: None when unset or ``0``, else ``"1"`` or a file path."""
    log = _env("ADAPTQR_LOG") or None
    if log is not None and log.strip() == "0":
        return None
    return log


def detect_enabled() -> bool:
    """``ADAPTQR_DETECT`` alone (read per call by plans that run the probes)."""
    return _flag("ADAPTQR_DETECT", True)


def fp16() -> bool:
    """``ADAPTQR_FP16`` alone (read by the route probe at each launch; default on)."""
    return _flag("ADAPTQR_FP16", True)


def fp16_max_n() -> int | None:
    """``ADAPTQR_FP16_MAX_N`` alone (None when unset); read when the route probe launches."""
    raw = _env("ADAPTQR_FP16_MAX_N")
    if not raw:
        return None
    value = _int("ADAPTQR_FP16_MAX_N", 0)
    if value < 1:
        raise ValueError(f"ADAPTQR_FP16_MAX_N must be a positive integer, got {raw!r}")
    return value


def cholqr() -> bool:
    """``ADAPTQR_CHOLQR`` alone (default off; read with every plan lookup)."""
    return _flag("ADAPTQR_CHOLQR", False)


def commit_hint() -> str | None:
    """``ADAPTQR_COMMIT`` alone (read by the bench when git cannot say)."""
    return os.environ.get("ADAPTQR_COMMIT") or None


class GraphSettings(NamedTuple):
    """The four variables the graph cache reads on every call (see :func:`graph_settings`)."""

    graphs: bool
    graph_entries: int
    graph_bytes: int
    graph_max_input: int


def graph_settings() -> GraphSettings:
    """What ``adaptqr.graphs`` needs, read per call: 4 variables instead of :func:`get`'s 9
    (get() costs ~10 us on the CPU here, graph_settings() ~4 us; a 20x32 call's host time
    is ~70 us)."""
    return GraphSettings(
        graphs=_flag("ADAPTQR_GRAPHS", True),
        graph_entries=_int("ADAPTQR_GRAPH_ENTRIES", 16),
        graph_bytes=_int("ADAPTQR_GRAPH_BYTES", 4 << 30),
        graph_max_input=_int("ADAPTQR_GRAPH_MAX_INPUT", GRAPH_MAX_INPUT),
    )


def split_min_rows() -> int | None:
    """``ADAPTQR_SPLIT_MIN_ROWS`` alone (None when unset); read per panel launch."""
    raw = _env("ADAPTQR_SPLIT_MIN_ROWS")
    if not raw:
        return None
    value = _int("ADAPTQR_SPLIT_MIN_ROWS", 0)
    if value < 16 or value & (value - 1):
        raise ValueError(f"ADAPTQR_SPLIT_MIN_ROWS must be a power of two >= 16, got {raw!r}")
    return value


#: Values ADAPTQR_TAIL_PREC takes (the trailing kernels' ``input_precision`` values).
TAIL_PRECS = ("tf32x3", "tf32", "ieee")


def tail_prec() -> str | None:
    """``ADAPTQR_TAIL_PREC``, or None when unset; read once per factorization."""
    raw = _env("ADAPTQR_TAIL_PREC")
    if not raw:
        return None
    if raw not in TAIL_PRECS:
        raise ValueError(f"ADAPTQR_TAIL_PREC must be one of {', '.join(TAIL_PRECS)}, got {raw!r}")
    return raw


def get() -> Config:
    """The configuration as the environment says now."""
    g = graph_settings()
    return Config(
        path=forced_path(),
        log=log_target(),
        log_size=_int("ADAPTQR_LOG_SIZE", 256),
        graphs=g.graphs,
        graph_entries=g.graph_entries,
        graph_bytes=g.graph_bytes,
        graph_max_input=g.graph_max_input,
        detect=detect_enabled(),
        baseline_cache=os.environ.get("ADAPTQR_BASELINE_CACHE") or os.path.join("bench", "baseline_cache"),
    )
