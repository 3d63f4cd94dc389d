"""CUDA-graph capture and replay of a whole plan (``adaptqr.graphs``).

The dispatcher calls ``run(key, fn, A)`` for CUDA inputs: ``fn(A) -> (H, tau)`` is the
eager plan and ``key`` a hashable plan key (shape, dtype, device, plan). The first call of
a key runs ``fn`` eagerly; the second warms up, captures ``fn`` on a static copy of ``A``
and returns the warm-up result; later calls copy ``A`` into the static input (or run an
in-place plan's ``load``), replay the graph of a free output slot and return its static
outputs, which no later call overwrites while they are held (or copy into ``out=``).
See docs/GRAPHS.md.

Example (eager on a CPU tensor; the reason is counted)::

    >>> import torch, adaptqr.graphs as graphs
    >>> H, tau = graphs.run(("cpu", 3), lambda A: torch.geqrf(A), torch.eye(3))
    >>> graphs.stats()["eager_reasons"]["input not on a CUDA device"] >= 1
    True
"""

from __future__ import annotations

import threading
from typing import Callable, Hashable, Sequence

import torch

from adaptqr.graphs.cache import CAPTURE_ON_CALL, GraphCache, InPlacePlan, is_inplace_plan
from adaptqr.graphs.capture import CudaGraphBackend, on_device

__all__ = ["run", "clear", "new_cache", "stats", "reset_stats", "default_cache", "GraphCache",
           "CudaGraphBackend", "CAPTURE_ON_CALL", "InPlacePlan", "is_inplace_plan", "on_device"]

_default: GraphCache | None = None
_default_lock = threading.Lock()
_own: list[GraphCache] = []  # the caches of new_cache(), cleared by clear() too


def default_cache() -> GraphCache:
    """The process-wide cache behind ``run`` (created on first use)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = GraphCache(backend=CudaGraphBackend())
    return _default


def run(key: Hashable, fn: Callable[[torch.Tensor], Sequence[torch.Tensor]], A: torch.Tensor,
        *, out: Sequence[torch.Tensor] | None = None, capturable: bool = True,
        fresh: bool = False) -> tuple:
    """``fn(A)`` as a tuple of fresh tensors, replayed from a CUDA graph when possible.

    ``fn`` is a callable ``fn(A) -> (H, tau)`` or an in-place plan (``InPlacePlan``:
    ``alloc``/``load``/``body``), whose replays skip the copy of ``A`` into a static input.
    ``out=(H, tau)`` copies the result into the caller's tensors and returns them.
    ``capturable=False`` runs ``fn`` eagerly (reason recorded in ``stats()``). ``fresh``: a
    replay returns copies of the static outputs (for a caller whose outputs must be
    allocated in its own call, such as a custom op under torch's CUDA graphs).
    """
    return default_cache().run(key, fn, A, out=out, capturable=capturable, fresh=fresh)


def new_cache(get_config: Callable, output_slots: int = 1) -> GraphCache:
    """A cache of its own on the CUDA backend, for graphs a path captures inside its call (a
    body that runs before a host decision, in a path registered ``capturable=False``): its
    own bounds (``get_config() -> config.GraphSettings``), and one output slot by default
    (for a caller that always passes ``out=``). ``clear()`` clears it too."""
    cache = GraphCache(backend=CudaGraphBackend(), get_config=get_config, output_slots=output_slots)
    with _default_lock:
        _own.append(cache)
    return cache


def clear() -> None:
    """Free every captured graph and its memory pool (the caches of :func:`new_cache`
    included); forget every key."""
    default_cache().clear()
    with _default_lock:
        own = list(_own)
    for cache in own:
        cache.clear()


def stats() -> dict:
    """entries, bytes, hits, misses, captures, evictions, eager_reasons (reason -> count)."""
    return default_cache().stats()


def reset_stats() -> None:
    """Zero the counters of the default cache."""
    default_cache().reset_stats()
