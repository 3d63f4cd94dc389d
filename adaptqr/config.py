"""Every ``ADAPTQR_*`` environment variable, read in one place.

Three kinds of setting, kept apart:

- the user's settings, the ``ADAPTQR_*`` variables below;
- the experiment knobs (:class:`Knobs`: the row-split panel's rows a program, the
  negligible tail's product precision, the largest n offered the FP16 route), which are no
  environment variables: a bench or a test sets them with :func:`experiment`
  (``adaptqr bench --knobs``);
- the bench's own (``ADAPTQR_COMMIT``, ``ADAPTQR_BASELINE_CACHE``), read by the bench alone.

The first two are read together, once a call, as one frozen :class:`Settings`
(:func:`snapshot`), which the dispatcher hashes whole into the graph cache's key. Tests and
users may change the variables at run time:

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
    Inputs larger than this many bytes (default 1 GiB) run eagerly instead of through a
    graph. A cached graph keeps its output slots and its pools, 3 to 6 times its input
    (within ``ADAPTQR_GRAPH_BYTES``); an eager call instead pays a few milliseconds of host
    time a call, which only long enough GPU work hides (see ``GRAPH_MAX_INPUT``).
``ADAPTQR_FP16``
    ``0`` keeps every matrix on the FP32 trailing update (default on: the route probe sends
    a dense matrix whose estimated error fits the budget to the float16-resident trailing
    matrix, docs/NUMERICS.md); read when the probe launches, so a captured graph keeps the
    setting it was captured with. ``adaptqr bench --env`` compares the two in one run.
``ADAPTQR_DETECT``
    ``0`` skips the per-matrix probes: every matrix gets the default route.
One setting comes from torch, not the environment: ``torch.use_deterministic_algorithms``
(:attr:`Settings.deterministic`). Under it a call gives the same bits on the same input
every time: a trailing update split over rows keeps each slice's sums of ``W`` and adds
them in slice order, where outside the mode it sums them with atomics, whose order varies
from run to run (4-11 % slower where updates split, 8x2048 to 2x4096; docs/NUMERICS.md
"Determinism").

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
    >>> config.snapshot().graphs
    False
    >>> del os.environ["ADAPTQR_GRAPHS"]
    >>> config.snapshot().graphs, config.snapshot() == config.snapshot()
    (True, True)
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from typing import NamedTuple

import torch

# Largest input (bytes) replayed through a CUDA graph. Below it sit the launch-bound shapes
# of qr_v2 (20x32: 80 KiB, 40x176: 5 MiB, 40x352: 20 MiB: one to ~20 launches of tens of
# microseconds of GPU work each) and, since session 9, 8x2048 and 2x4096 (128 MiB each);
# above it 60x1024 (240 MiB) and 640x512 (640 MiB), whose launches overlap milliseconds of
# GPU work. Measured on the H200 (docs/EXPERIMENTS.md G1, G3), eager against graphs: G1
# (session 1) 640x512 14.45 vs 14.97 ms, 60x1024 9.97 vs 10.08, 8x2048 13.37 vs 13.07,
# 2x4096 26.22 vs 25.74; G3 (run 2019) 8x2048 11.49 vs 11.16, 2x4096 22.12 vs 21.36 (3 %,
# more launches since), and with the FP16 route at 2048 eager 9.59 vs graph 9.22. The graph
# keeps twice the input (256 MiB for these two shapes) in its pool while it is cached.
# Since H13 (CUDA C panels of 1024 rows) 60x1024 (240 MiB) is host-bound eagerly: 256 MiB
# against 128, same run (EXPERIMENTS.md G4, run 0138): 60x1024 dense 5.59 -> 4.53 ms, mixed
# 6.49 -> 5.91, nearrank 7.43 -> 6.93; the rest unchanged. Its first call captures (~0.6 s)
# and the graph keeps ~480 MiB while cached. Since the look-ahead (two streams, events) an
# eager call enqueues for 3-5 ms on the host whatever the batch, so mid-size batches above
# 256 MiB waited for it (EXPERIMENTS.md G6, run 1200, eager / graph, ms): 320x512 4.23 /
# 3.08, 100x1024 6.12 / 4.55, 6x4096 42.5 / 17.6 (128 panels' launches), 640x512 5.23 /
# 5.10, 200x768 4.56 / 4.56. So 1 GiB; ADAPTQR_GRAPH_BYTES (4 GiB) still bounds what the
# cache keeps, and a graph that would not fit it runs eagerly.
GRAPH_MAX_INPUT = 1 << 30


@dataclass(frozen=True)
class Knobs:
    """The experiment knobs, set by :func:`experiment` (None: the library's constant):
    ``split_min_rows`` (``schedules.SPLIT_MIN_ROWS``), ``tail_prec``
    (``schedules.TAIL_PREC``), ``fp16_max_n`` (``classify.FP16_MAX_N``), ``cuda_panel``
    (``schedules.CUDA_PANEL``: 1 / 0, register panels in CUDA C or in Triton),
    ``cuda_panel_rows`` (``schedules.CUDA_PANEL_MAX_ROWS``: 256, 512 or 1024, the tallest
    panel the CUDA C kernel takes in one CTA), ``cuda_panel_fuse``
    (``schedules.CUDA_PANEL_FUSE``: 1 / 0, whether the CUDA C column steps take their
    scalars from the step before where they can),
    ``cuda_panel_cluster`` (``schedules.CUDA_PANEL_CLUSTER``: 0, or 128 / 256 / 512 / 1024,
    the rows of each CTA of the CUDA C clusters that take the panels above
    ``cuda_panel_rows``, up to 4096 rows), ``cluster_ctas``
    (``schedules.CLUSTER_SMALL_CTAS``: 0, 128, 192, 256 or 384, the most 128-row CTAs a
    batch's clusters for its panels of 257-1024 rows take), ``cluster_pair_ctas``
    (``schedules.CLUSTER_PAIR_CTAS``: 0, 64, 96, 128 or 192, the most CTAs of a batch's
    two-CTA clusters for its panels of 129-256 rows), ``lookahead``
    (``schedules.LOOKAHEAD``: 0 off, 1 where no panel is row-split: the panels and the next
    group's update on a high-priority stream beside the rest of each update),
    ``slice_min_rows``
    (``schedules.TRAILING_SLICE_MIN_ROWS``: 0, 64, 128 or 256, the fewest rows of a row-split
    update's slice; 0: ``schedules.TRAILING_SPLIT_MIN_ROWS``), ``fp16_group``
    (``schedules.FP16_GROUP``: 1 / 2 panels a group on the FP16 route, 0 by the batch),
    ``wide_chunk`` (``paths.wide.WIDE_CHUNK_PANELS``: 0, or 2 / 4 / 8 / 16 panels a ``Q^T``
    launch of the wide path beside its leading block's factorization), ``small_n_nb``
    (``schedules.SMALL_N_NB``: 0, or 32: the panel width where the schedule's table gives
    16 and n is a multiple of ``schedules.SMALL_N_NB_MULTIPLE``), ``qform_blas_nb``
    (``qform.QFORM_BLAS_NB``: 0, or 64 / 128 / 256 / 512 / 1024: Q formed by cuBLAS products
    in panels of that many columns instead of the Triton strip kernel), ``tile_split_rows``
    (``schedules.ONE_TILE_SPLIT_ROWS``: 128, 256 or 512, the fewest rows from which an
    update of one column tile is row-split), ``qr_augmented`` (``linalg.QR_AUGMENTED_MAX_BATCH``:
    0, or 1 to 64, the largest batch whose ``linalg.qr`` factors ``[s A | I]`` for Q),
    ``qr_augmented_max_k`` (``linalg.QR_AUGMENTED_MAX_K_ONE``: 1024 to 4096, the largest
    ``min(m, n)`` of one matrix that does), ``wide_probe`` (``paths.wide.WIDE_PROBE``: 0 /
    1, the wide path's leading block probed for its rank), ``qform_row_align``
    (``qform.QFORM_ROW_ALIGN``: 0 / 16, Q of reflectors whose rows are not a multiple of it
    formed from a copy padded with zero rows), ``qform_t_prec`` / ``qform_t_warps``
    (``qform.QFORM_T_PREC`` / ``QFORM_T_WARPS``: "ieee" / "tf32x3" and 1 / 2 / 4, the Q
    formation's T kernel's ``V^T V`` products and warps), ``qform_prec``
    (``qform.QFORM_PREC``: "tf32x3" / "f16x3", the Q strip kernel's products),
    ``trailing_prec`` (``schedules.DEFAULT_PREC``: "tf32x3" / "f16x3", the trailing
    updates' float32 products), ``route_lanes``
    (``schedules.ROUTE_LANES``: 0, 1 or 3, the FP32 route's update launches on a side
    stream in graph captures, or for row-split updates in captures), ``gram_panel``
    (``schedules.GRAM_PANEL``: 0 / 1, CUDA C panels tried as CholeskyQR2 rebuilt into
    Householder form first), ``gram_max_batch`` (``schedules.GRAM_PANEL_MAX_BATCH``: 1 to
    640, the most matrices whose panels are), ``gram_small_batch``
    (``schedules.GRAM_SMALL_PANEL_MAX_BATCH``: 0, 96, 128, 132, 264, 512 or 640, the most matrices
    whose panels of at most 256 rows are, past ``gram_max_batch``), ``gram_mma``
    (``schedules.GRAM_MMA``: 0 / 1, the Gram build's Grams on tensor cores), ``drop_tail``
    (``classify.DROP_TAIL``: 0 / 1, a square or tall matrix's negligible tail dropped whole
    instead of updated), ``w_pingpong``
    (``schedules.W_PINGPONG``: 0 / 1, the row-split updates' ``W`` zeroed by the update
    before on the same stream instead of by a launch of its own), ``fp16_fit``
    (``schedules.FP16_FIT``: 0 / 1, the FP16-only update's column tile no wider than its
    columns' next power of two), ``fp16_v16``
    (``schedules.FP16_V16``: 0 / 1, the FP16 route's rest updates read their reflectors
    from a float16 copy), ``pair_split`` (``schedules.PAIR_SPLIT_ROWS``: 0 / 32 / 64 / 128 /
    256, the FP16 pair rest update's second sweep in a launch of its own over row slices of
    that many rows), ``w_partials`` (``schedules.W_PARTIALS``: 0 / 1, the row-split updates'
    W as each slice's sums, added in slice order; unset: exactly in the deterministic
    mode), ``fp32_pair`` (``schedules.FP32_PAIR``: 0, or 16 / 32: the FP32 route's update of a
    group's two panels in one pass over each streamed tile, in row chunks of that many),
    ``cluster_max`` (``schedules.CUDA_PANEL_CLUSTER_MAX``: 8 / 16, the most CTAs a cluster
    panel takes; 16 is sm_90's non-portable size), ``qform_small_cuda``
    (0 / 1: Q of at most 64 rows by a CUDA C kernel in one cupy launch never, or whatever the
    batch and columns; unset: within ``qform.QFORM_SMALL_MAX_BATCH`` and ``_MAX_COLS``),
    ``qform_wide`` (``qform.QFORM_WIDE_NB``: 0, or 64 / 128: Q formed in panels of that many
    reflectors by GEMM-shaped launches, the cuBLAS route's shapes included), ``qform_group``
    (``qform.QFORM_GROUP``: 0, or 2 to 32: the Q strip kernel's programs in groups of that
    many matrices, each group's strips before the next group's), ``qform_wide_prec``
    (``qform.QFORM_WIDE_PREC``: "tf32x3" / "f16x3", the wide panels' two big products),
    ``qform_halves`` (``qform.QFORM_HALVES_MIN_N``: 0 / 1, the Q strip kernel's "f16x3"
    products from ``V``'s halves made once), ``fp32_halves`` (``schedules.FP32_HALVES``: 0 /
    1, the FP32 route's pair update the same way), ``qform_flag_block``
    (``qform.QFORM_FLAG_BLOCK``: 0 / 1, the Q launches' per-matrix flags read in one vector
    load)."""

    split_min_rows: int | None
    tail_prec: str | None
    fp16_max_n: int | None
    cuda_panel: int | None = None
    cuda_panel_rows: int | None = None
    cuda_panel_fuse: int | None = None
    cuda_panel_cluster: int | None = None
    cluster_ctas: int | None = None
    cluster_pair_ctas: int | None = None
    lookahead: int | None = None
    slice_min_rows: int | None = None
    fp16_group: int | None = None
    wide_chunk: int | None = None
    small_n_nb: int | None = None
    qform_blas_nb: int | None = None
    tile_split_rows: int | None = None
    qr_augmented: int | None = None
    qr_augmented_max_k: int | None = None
    wide_probe: int | None = None
    qform_row_align: int | None = None
    qform_t_prec: str | None = None
    qform_t_warps: int | None = None
    qform_prec: str | None = None
    trailing_prec: str | None = None
    route_lanes: int | None = None
    gram_panel: int | None = None
    gram_max_batch: int | None = None
    gram_small_batch: int | None = None
    gram_mma: int | None = None
    drop_tail: int | None = None
    w_pingpong: int | None = None
    fp16_fit: int | None = None
    fp16_v16: int | None = None
    pair_split: int | None = None
    w_partials: int | None = None
    fp32_pair: int | None = None
    cluster_max: int | None = None
    qform_small_cuda: int | None = None
    qform_wide: int | None = None
    qform_group: int | None = None
    qform_wide_prec: str | None = None
    qform_halves: int | None = None
    fp32_halves: int | None = None
    qform_flag_block: int | None = None

    def get(self, name: str, constant):
        """The knob ``name``, or ``constant`` (the library's value) where it is unset.

        >>> Knobs(None, None, None, wide_chunk=8).get("wide_chunk", 0)
        8
        """
        value = getattr(self, name)
        return constant if value is None else value


@dataclass(frozen=True)
class Settings:
    """Every setting one call reads, as one frozen (hashable) snapshot (:func:`snapshot`):
    the dispatcher takes it once at the start of a call and hashes it whole into the graph
    cache's key, so a replay never serves a graph captured under other settings."""

    path: str | None
    log: str | None
    log_size: int
    graphs: bool
    graph_entries: int
    graph_bytes: int
    graph_max_input: int
    detect: bool
    fp16: bool
    knobs: Knobs
    #: ``torch.are_deterministic_algorithms_enabled()`` when the snapshot was taken.
    deterministic: bool = False


#: Kept for callers of :func:`get` (same fields as :class:`Settings`, and the bench's cache).
Config = Settings


# os.environ.get costs ~1.5 us (it encodes the key and decodes the value); a 20x32 call's
# host path is ~30-70 us. On POSIX os.environ keeps its bytes in `_data`, which
# os.environ[...] = / del / putenv-through-os.environ update, so a raw lookup there sees every
# change made through os.environ (and none made by C code calling setenv, which
# os.environ.get does not see either). :func:`snapshot` compares the raw values of its
# variables with the last call's and rebuilds the Settings only when one changed.
_ENV_DATA = getattr(os.environ, "_data", None) if os.name == "posix" else None
if not isinstance(_ENV_DATA, dict):
    _ENV_DATA = None
_KEYS: dict[str, bytes] = {}

#: The variables of a :class:`Settings`, in the order :func:`_raw` reads them.
SETTING_VARS = ("ADAPTQR_PATH", "ADAPTQR_LOG", "ADAPTQR_LOG_SIZE", "ADAPTQR_GRAPHS",
                "ADAPTQR_GRAPH_ENTRIES", "ADAPTQR_GRAPH_BYTES", "ADAPTQR_GRAPH_MAX_INPUT",
                "ADAPTQR_DETECT", "ADAPTQR_FP16")
_RAW_KEYS = tuple(os.fsencode(k) for k in SETTING_VARS)


def _env(name: str) -> str | None:
    """``os.environ.get(name)``, faster on POSIX (see ``_ENV_DATA``)."""
    if _ENV_DATA is None:
        return os.environ.get(name)
    key = _KEYS.get(name)
    if key is None:
        key = _KEYS[name] = os.fsencode(name)
    raw = _ENV_DATA.get(key)
    return None if raw is None else os.fsdecode(raw)


def _raw() -> tuple:
    if _ENV_DATA is None:
        return tuple(os.environ.get(k) for k in SETTING_VARS)
    return tuple(map(_ENV_DATA.get, _RAW_KEYS))


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


def _log_target() -> str | None:
    log = _env("ADAPTQR_LOG") or None
    if log is not None and log.strip() == "0":
        return None
    return log


#: Values ``Knobs.tail_prec`` takes (the trailing kernels' ``input_precision`` values).
TAIL_PRECS = ("tf32x3", "tf32", "ieee")

_NO_KNOBS = Knobs(split_min_rows=None, tail_prec=None, fp16_max_n=None)
_knobs = _NO_KNOBS


#: The knobs that take one of a few values (the others are checked in :func:`experiment`).
KNOB_CHOICES = {
    "cuda_panel": (0, 1),
    "cuda_panel_rows": (256, 512, 1024),
    "cuda_panel_fuse": (0, 1),
    "cuda_panel_cluster": (0, 128, 256, 512, 1024),
    "cluster_ctas": (0, 128, 192, 256, 384),
    "cluster_pair_ctas": (0, 64, 96, 128, 192),
    "lookahead": (0, 1),
    "slice_min_rows": (0, 64, 128, 256),
    "fp16_group": (0, 1, 2),
    "wide_chunk": (0, 2, 4, 8, 16),
    "small_n_nb": (0, 32),
    "qform_blas_nb": (0, 64, 128, 256, 512, 1024),
    "tile_split_rows": (128, 256, 512),
    "qr_augmented": (0, 1, 2, 4, 8, 16, 64),
    "qr_augmented_max_k": (1024, 1536, 2048, 3072, 4096),
    "wide_probe": (0, 1),
    "qform_row_align": (0, 16),
    "qform_t_prec": ("ieee", "tf32x3"),
    "qform_t_warps": (1, 2, 4),
    "qform_prec": ("tf32x3", "f16x3"),
    "trailing_prec": ("tf32x3", "f16x3"),
    "route_lanes": (0, 1, 3),
    "gram_panel": (0, 1),
    "gram_max_batch": (1, 2, 4, 8, 16, 24, 32, 40, 64, 640),
    "gram_small_batch": (0, 96, 128, 132, 264, 512, 640),
    "gram_mma": (0, 1),
    "drop_tail": (0, 1),
    "w_pingpong": (0, 1),
    "fp16_fit": (0, 1),
    "fp16_v16": (0, 1),
    "pair_split": (0, 32, 64, 128, 256),
    "w_partials": (0, 1),
    "fp32_pair": (0, 16, 32),
    "cluster_max": (8, 16),
    "qform_small_cuda": (0, 1),
    "qform_wide": (0, 64, 128),
    "qform_group": (0, 2, 4, 8, 16, 32),
    "qform_wide_prec": ("tf32x3", "f16x3"),
    "qform_halves": (0, 1),
    "fp32_halves": (0, 1),
    "qform_flag_block": (0, 1),
}


@contextlib.contextmanager
def experiment(**fields):
    """Set experiment knobs (:class:`Knobs` fields) for the calls inside the block; the
    previous knobs come back after it. Not thread-local: for a bench or a test.

    >>> from adaptqr import config
    >>> with config.experiment(tail_prec="ieee"):
    ...     config.snapshot().knobs.tail_prec
    'ieee'
    >>> config.snapshot().knobs.tail_prec is None
    True
    """
    global _knobs
    unknown = sorted(set(fields) - set(Knobs.__dataclass_fields__))
    if unknown:
        raise ValueError(f"unknown experiment knobs {unknown}; known: {sorted(Knobs.__dataclass_fields__)}")
    rows, prec, max_n = (fields.get(k) for k in ("split_min_rows", "tail_prec", "fp16_max_n"))
    if rows is not None and (int(rows) < 16 or int(rows) & (int(rows) - 1)):
        raise ValueError(f"split_min_rows must be a power of two >= 16, got {rows!r}")
    if prec is not None and prec not in TAIL_PRECS:
        raise ValueError(f"tail_prec must be one of {', '.join(TAIL_PRECS)}, got {prec!r}")
    if max_n is not None and int(max_n) < 1:
        raise ValueError(f"fp16_max_n must be a positive integer, got {max_n!r}")
    for name, choices in KNOB_CHOICES.items():
        if fields.get(name) not in (None, *choices):
            raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}, "
                             f"got {fields[name]!r}")
    saved = _knobs
    _knobs = dataclasses.replace(saved, **{k: v for k, v in fields.items()})
    try:
        yield _knobs
    finally:
        _knobs = saved


def _build() -> Settings:
    return Settings(
        path=_env("ADAPTQR_PATH") or None,
        log=_log_target(),
        log_size=_int("ADAPTQR_LOG_SIZE", 256),
        graphs=_flag("ADAPTQR_GRAPHS", True),
        graph_entries=_int("ADAPTQR_GRAPH_ENTRIES", 16),
        graph_bytes=_int("ADAPTQR_GRAPH_BYTES", 4 << 30),
        graph_max_input=_int("ADAPTQR_GRAPH_MAX_INPUT", GRAPH_MAX_INPUT),
        detect=_flag("ADAPTQR_DETECT", True),
        fp16=_flag("ADAPTQR_FP16", True),
        knobs=_knobs,
        deterministic=torch.are_deterministic_algorithms_enabled(),
    )


_last: tuple = ((), None)


def snapshot() -> Settings:
    """The settings as the environment says now (rebuilt only when a variable changed)."""
    global _last
    raw = _raw()
    last_raw, settings = _last
    if settings is None or raw != last_raw or settings.knobs is not _knobs \
            or settings.deterministic != torch.are_deterministic_algorithms_enabled():
        settings = _build()  # raises on a malformed value, naming the variable
        _last = (raw, settings)
    return settings


def get() -> Settings:
    """:func:`snapshot` (the name older callers use)."""
    return snapshot()


def forced_path() -> str | None:
    """``ADAPTQR_PATH`` of the current snapshot."""
    return snapshot().path


def log_target() -> str | None:
    """``ADAPTQR_LOG`` of the current snapshot: None when unset or ``0``, else ``"1"`` or a
    file path."""
    return snapshot().log


def detect_enabled() -> bool:
    return snapshot().detect


def tail_prec() -> str | None:
    return snapshot().knobs.tail_prec


class GraphSettings(NamedTuple):
    """The graph cache's bounds (see :func:`graph_settings`)."""

    graphs: bool
    graph_entries: int
    graph_bytes: int
    graph_max_input: int


def graph_settings(settings: Settings | None = None) -> GraphSettings:
    """The graph cache's bounds of ``settings`` (default: the current snapshot)."""
    s = settings or snapshot()
    return GraphSettings(s.graphs, s.graph_entries, s.graph_bytes, s.graph_max_input)


# The bench's settings: not part of a call's snapshot.

def commit_hint() -> str | None:
    """``ADAPTQR_COMMIT`` (read by the bench when git cannot say)."""
    return os.environ.get("ADAPTQR_COMMIT") or None


def baseline_cache() -> str:
    """``ADAPTQR_BASELINE_CACHE``: the folder of the bench's cached torch.geqrf timings."""
    return os.environ.get("ADAPTQR_BASELINE_CACHE") or os.path.join("bench", "baseline_cache")
