"""The graph cache: which keys are captured, LRU bounds, statistics, locking.

This module holds the bookkeeping only. Everything that touches CUDA graphs goes through a
*backend* object (``adaptqr.graphs.capture.CudaGraphBackend`` in production, a fake in the
CPU tests), so the policy here can be tested without a GPU.

A backend provides::

    accepts(A) -> bool               # can this input be captured at all (CUDA tensor)?
    is_capturing(A) -> bool          # is the caller already capturing a graph?
    warmup(fn, A) -> tuple[Tensor]   # run fn(A) eagerly the way capture needs (side stream)
    capture(thunk, device) -> (handle, outputs, pool_bytes)
                                     # capture thunk() (returns the static outputs);
                                     # pool_bytes: its private pool, 0 if unknown
    begin(handle)                    # order this use after the previous one (any stream)
    replay(handle)                   # rerun the captured work
    end(handle)                      # mark the end of this use (after the hand-out)
    release(handle)                  # free the graph and its private memory pool

Two kinds of plan ``fn``:

* a callable ``fn(A) -> (H, tau)``: captured on a static copy of ``A``; a replay costs a
  copy of ``A`` into the static input and the graph;
* an *in-place plan* (see ``InPlacePlan``): an object with ``alloc(A) -> outs``,
  ``load(A, outs)`` and ``body(outs)`` (and ``__call__`` for eager runs). The cache owns
  the outputs (allocated once by ``alloc``), runs ``load`` (e.g. ``H.copy_(A)``) outside
  the graph and captures only ``body``. No static input and no copy of ``A`` into it: a
  replay moves one pass of data less than with a plain callable.

Outputs: each key is captured ``OUTPUT_SLOTS`` times, every capture with its own static
outputs (sharing the static input). A replay picks a slot whose outputs nobody outside the
cache references any more (the storages' use counts are back to what they were right after
capture, and their data pointers unchanged) and returns fresh aliases of them: no clone. A
caller who keeps results keeps their slots busy; when every slot is busy the call runs
eagerly ("every output slot is still held"). Without torch's storage use counts the cache
keeps one slot and clones the outputs (the behaviour before G2, EXPERIMENTS.md).

Capture policy: a key is captured on its ``capture_on_call``-th call (default 2, see
``CAPTURE_ON_CALL``); earlier calls run ``fn`` eagerly. The capturing call returns the
result of the warm-up run (an ordinary eager result of ``fn(A)``), so no call pays both a
capture and a replay.

Example (a fake backend that "replays" by calling fn again; the real one is
``CudaGraphBackend``)::

    >>> import torch
    >>> from adaptqr.graphs.cache import GraphCache
    >>> class Fake:
    ...     accepts = staticmethod(lambda A: True)
    ...     is_capturing = staticmethod(lambda A: False)
    ...     warmup = staticmethod(lambda fn, A: tuple(fn(A)))
    ...     def capture(self, thunk, device):
    ...         outs = tuple(thunk())
    ...         return (thunk, outs), outs, 0
    ...     def replay(self, h):
    ...         for o, n in zip(h[1], h[0]()): o.copy_(n)
    ...     begin = end = release = staticmethod(lambda h: None)
    >>> cache = GraphCache(backend=Fake())
    >>> fn = lambda A: (A * 2, A.sum(-1))
    >>> for _ in range(3):
    ...     H, s = cache.run(("k",), fn, torch.ones(2, 3))
    >>> cache.stats()["hits"], cache.stats()["captures"]
    (1, 1)
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

import torch

from adaptqr import config

logger = logging.getLogger("adaptqr.graphs")

# Capture on the 2nd call of a key, not the 1st: a one-off shape (a probe call, a shape
# seen once in a sweep) then costs one plain eager run instead of warm-up + synchronize +
# empty_cache + capture, and keeps no static buffers. A repeated shape (an optimizer's
# statistics every few steps, the benchmark's k inputs) reaches replay on its 3rd call.
CAPTURE_ON_CALL = 2

# How many not-yet-captured (or uncapturable) keys we remember. Only counters and short
# strings are kept per key; the bound keeps a sweep over many shapes from growing forever.
MAX_TRACKED_KEYS = 1024

# Reasons for running fn eagerly. They are the keys of stats()["eager_reasons"].
REASON_CALLER_OPT_OUT = "capturable=False"
REASON_GRAPHS_OFF = "ADAPTQR_GRAPHS=0"
REASON_NO_ROOM = "graph cache bounds are zero"
REASON_NOT_CUDA = "input not on a CUDA device"
REASON_REQUIRES_GRAD = "input requires grad"
REASON_CALLER_CAPTURING = "caller is capturing a graph"
REASON_WARMING = "key not seen often enough to capture"
REASON_CAPTURING_CALL = "capturing: this call returns the warm-up result"
REASON_CAPTURE_FAILED = "capture failed"
REASON_UNCAPTURABLE = "key marked uncapturable"
REASON_TOO_LARGE = "graph larger than ADAPTQR_GRAPH_BYTES"
REASON_LARGE_INPUT = "input larger than ADAPTQR_GRAPH_MAX_INPUT (its launches overlap the GPU work)"
REASON_BUSY = "another thread is capturing this key"
REASON_EVICTED = "evicted by another thread during lookup"
REASON_SLOTS_BUSY = "every output slot is still held by the caller"

# Captures (each with its own static outputs) per key. A replay returns the static outputs
# of a free slot instead of cloning them: the clone was two allocations and two copy kernels,
# ~25 us of the ~110 us host time of a 20x32 replay on the H200 (EXPERIMENTS.md G2). Two
# slots cover keeping the previous result while computing the next one.
OUTPUT_SLOTS = 2

# StorageImpl reference counts (torch's CUDA-graph trees use the same call to know when a
# static output is dead). Absent: one slot and clones.
_use_count = getattr(torch._C, "_storage_Use_Count", None)


class InPlacePlan:
    """Base of an in-place plan: ``alloc`` the outputs, ``load`` the input, ``body`` in place.

    Subclasses implement the three methods; ``__call__`` is the eager plan. ``load`` runs
    outside the graph on every call; ``body`` must not synchronize with the host.

    >>> import torch
    >>> class Double(InPlacePlan):
    ...     def alloc(self, A): return (torch.empty_like(A),)
    ...     def load(self, A, outs): outs[0].copy_(A)
    ...     def body(self, outs): outs[0].mul_(2)
    >>> Double()(torch.ones(2))[0]
    tensor([2., 2.])
    """

    def alloc(self, A: torch.Tensor) -> tuple:
        raise NotImplementedError

    def load(self, A: torch.Tensor, outs: tuple) -> None:
        raise NotImplementedError

    def body(self, outs: tuple) -> None:
        raise NotImplementedError

    def __call__(self, A: torch.Tensor) -> tuple:
        outs = tuple(self.alloc(A))
        self.load(A, outs)
        self.body(outs)
        return outs


def is_inplace_plan(fn: Any) -> bool:
    """Whether ``fn`` follows the in-place plan protocol (alloc, load, body)."""
    return all(callable(getattr(fn, name, None)) for name in ("alloc", "load", "body"))


@dataclass
class _Slot:
    """One capture of a key: its graph handle and static outputs."""

    handle: Any
    static_out: tuple
    # Per output: (StorageImpl pointer, data pointer, use count right after capture).
    marks: tuple = ()
    dead: bool = False  # an output's storage was resized away: never replayed again

    def free(self) -> bool:
        """Whether no one outside the cache holds these outputs (see module doc)."""
        if self.dead:
            return False
        for t, (cdata, ptr, base) in zip(self.static_out, self.marks):
            if t.data_ptr() != ptr:
                self.dead = True
                return False
            if _use_count(cdata) != base:
                return False
        return True


def _marks(outs: tuple) -> tuple:
    marks = []
    for t in outs:
        cdata = t.untyped_storage()._cdata  # the temporary storage object is gone after this
        marks.append((cdata, t.data_ptr(), _use_count(cdata)))
    return tuple(marks)


@dataclass
class _Entry:
    """One captured key: its slots and the buffers only it uses."""

    key: Hashable
    slots: list
    static_in: torch.Tensor | None  # None for an in-place plan
    nbytes: int
    in_meta: tuple  # (shape, dtype, device) of the input the graph was captured for
    load: Callable | None = None  # an in-place plan's load(A, outs); None: copy into static_in
    handout: bool = False  # replays return the slot's outputs (else clones of slot 0's)
    # Held from copy-in to hand-out so two callers of one key never interleave.
    lock: threading.Lock = field(default_factory=threading.Lock)
    released: bool = False


_BUSY = object()  # _replay's answer when every output slot is held


def _clone_like(t: torch.Tensor) -> torch.Tensor:
    """A fresh copy of ``t`` with the same strides (H stays column-major)."""
    out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
    return out.copy_(t)


def _meta(t: torch.Tensor) -> tuple:
    return (tuple(t.shape), t.dtype, t.device)


def _check_same(what: str, got: torch.Tensor, want: tuple) -> None:
    """Raise unless ``got`` has the (shape, dtype, device) ``want``."""
    shape, dtype, device = want
    if tuple(got.shape) != shape or got.dtype != dtype or got.device != device:
        raise ValueError(
            f"adaptqr.graphs: {what} has shape {tuple(got.shape)}, dtype {got.dtype}, device "
            f"{got.device}; expected shape {shape}, dtype {dtype}, device {device}"
        )


def _deliver(result: Sequence[torch.Tensor], out: Sequence[torch.Tensor] | None) -> tuple:
    """Return ``result`` as a tuple, or copy it into the caller's ``out`` tensors."""
    result = tuple(result)
    if out is None:
        return result
    out = tuple(out)
    if len(out) != len(result):
        raise ValueError(f"adaptqr.graphs: out has {len(out)} tensors, the plan returns {len(result)}")
    for i, (o, r) in enumerate(zip(out, result)):
        _check_same(f"out[{i}]", o, _meta(r))
        o.copy_(r)
    return out


class GraphCache:
    """Capture-and-replay cache keyed by plan key, bounded by entries and bytes (LRU).

    ``run(key, fn, A)`` returns what ``fn(A)`` returns (a tuple of tensors), either by
    running ``fn`` or by replaying a graph captured from it and handing out the static
    outputs of a slot nobody holds (same strides), so no later call overwrites a result
    the caller still holds.

    Locking: ``self._lock`` guards the dictionaries and counters. An entry's own lock is
    held from copy-in to hand-out. Order: an entry lock may be held while taking
    ``self._lock``, never the reverse (eviction pops under ``self._lock``, then releases
    the graph under the entry lock). ``self._capture_lock`` serialises captures (rare,
    and two concurrent captures would fight over the allocator's private pools).
    """

    def __init__(self, backend: Any, capture_on_call: int = CAPTURE_ON_CALL,
                 get_config: Callable[[], config.Config | config.GraphSettings] = config.graph_settings,
                 output_slots: int = OUTPUT_SLOTS):
        if capture_on_call < 1:
            raise ValueError(f"capture_on_call must be >= 1, got {capture_on_call}")
        if output_slots < 1:
            raise ValueError(f"output_slots must be >= 1, got {output_slots}")
        self.backend = backend
        self.capture_on_call = capture_on_call
        # 1 for a caller that always passes out= (its outputs never leave the cache): one
        # capture and one private pool a key instead of OUTPUT_SLOTS.
        self.output_slots = output_slots
        self._get_config = get_config
        self._lock = threading.Lock()
        self._capture_lock = threading.Lock()
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._seen: OrderedDict[Hashable, int] = OrderedDict()  # key -> eager calls so far
        self._failed: OrderedDict[Hashable, str] = OrderedDict()  # key -> why not capturable
        self._capturing: set = set()
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._captures = 0
        self._evictions = 0
        self._reasons: dict[str, int] = {}

    # ------------------------------------------------------------------ public
    def run(self, key: Hashable, fn: Callable[[torch.Tensor], Sequence[torch.Tensor]],
            A: torch.Tensor, *, out: Sequence[torch.Tensor] | None = None,
            capturable: bool = True, fresh: bool = False) -> tuple:
        """``fn(A)``, replayed from a captured graph when possible. See the module doc.
        ``fresh``: a replay returns copies of its outputs, never the slot's own (an eager
        run's are fresh already)."""
        cfg = self._get_config()
        reason = self._precheck(A, capturable, cfg)
        if reason is not None:
            return self._eager(key, fn, A, out, reason)

        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self._hits += 1
            else:
                self._misses += 1
                reason = self._miss_reason(key)
        if entry is not None:
            result = self._replay(entry, A, out, fresh)
            if result is _BUSY:  # a miss after all: nothing was replayed
                with self._lock:
                    self._hits -= 1
                    self._misses += 1
                return self._eager(key, fn, A, out, REASON_SLOTS_BUSY)
            if result is not None:
                return result
            # Evicted by another thread between lookup and replay: it was a miss after all.
            with self._lock:
                self._hits -= 1
                self._misses += 1
            return self._eager(key, fn, A, out, REASON_EVICTED)
        if reason is not None:
            return self._eager(key, fn, A, out, reason)
        return self._capture(key, fn, A, out, cfg)

    def clear(self) -> None:
        """Drop every graph (freeing its pool) and forget every key; counters are kept."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
            self._seen.clear()
            self._failed.clear()
            self._bytes = 0
        for e in entries:
            self._release(e)

    def reset_stats(self) -> None:
        """Zero the counters (hits, misses, captures, evictions, eager reasons)."""
        with self._lock:
            self._hits = self._misses = self._captures = self._evictions = 0
            self._reasons = {}

    def stats(self) -> dict:
        """A snapshot: entries, bytes, hits, misses, captures, evictions, eager_reasons."""
        with self._lock:
            return {
                "entries": len(self._entries),
                "bytes": self._bytes,
                "hits": self._hits,
                "misses": self._misses,
                "captures": self._captures,
                "evictions": self._evictions,
                "eager_reasons": dict(self._reasons),
                "uncapturable": {repr(k): v for k, v in self._failed.items()},
            }

    def keys(self) -> list:
        """Captured keys, least recently used first."""
        with self._lock:
            return list(self._entries)

    # ----------------------------------------------------------------- helpers
    def _precheck(self, A: torch.Tensor, capturable: bool, cfg: config.GraphSettings) -> str | None:
        """Why this call cannot use the cache at all, or None. Cheap host checks only."""
        if not capturable:
            return REASON_CALLER_OPT_OUT
        if not cfg.graphs:
            return REASON_GRAPHS_OFF
        if cfg.graph_entries <= 0 or cfg.graph_bytes <= 0:
            return REASON_NO_ROOM
        if not self.backend.accepts(A):
            return REASON_NOT_CUDA
        if self.backend.is_capturing(A):
            return REASON_CALLER_CAPTURING
        if A.numel() * A.element_size() > cfg.graph_max_input:
            return REASON_LARGE_INPUT
        if A.requires_grad and torch.is_grad_enabled():
            return REASON_REQUIRES_GRAD
        return None

    def _miss_reason(self, key: Hashable) -> str | None:
        """Under self._lock: why a missed key runs eagerly this time, or None to capture."""
        failed = self._failed.get(key)
        if failed is not None:
            self._failed.move_to_end(key)
            return REASON_UNCAPTURABLE
        if key in self._capturing:
            return REASON_BUSY
        calls = self._seen.pop(key, 0) + 1
        if calls < self.capture_on_call:
            self._seen[key] = calls
            while len(self._seen) > MAX_TRACKED_KEYS:
                self._seen.popitem(last=False)
            return REASON_WARMING
        self._capturing.add(key)
        return None

    def _note(self, key: Hashable, reason: str) -> None:
        with self._lock:
            self._reasons[reason] = self._reasons.get(reason, 0) + 1
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("eager run for key %r: %s", key, reason)

    def _eager(self, key, fn, A, out, reason: str) -> tuple:
        self._note(key, reason)
        return _deliver(fn(A), out)

    def _replay(self, entry: _Entry, A: torch.Tensor, out, fresh: bool = False):
        """The replayed result; None when the entry was released meanwhile; _BUSY when
        every slot's outputs are still held."""
        with entry.lock:
            if entry.released:
                return None
            _check_same("input", A, entry.in_meta)
            if entry.handout:
                slot = next((s for s in entry.slots if s.free()), None)
                if slot is None:
                    return _BUSY
            else:
                slot = entry.slots[0]
            # Slot 0's handle orders every use of the entry (the slots share static_in).
            order = entry.slots[0].handle
            self.backend.begin(order)
            if entry.load is not None:
                entry.load(A, slot.static_out)
            else:
                entry.static_in.copy_(A)
            self.backend.replay(slot.handle)
            if out is not None:
                result = _deliver(slot.static_out, out)
            elif entry.handout and not fresh:
                result = tuple(t.detach() for t in slot.static_out)
            else:
                result = tuple(_clone_like(t) for t in slot.static_out)
            self.backend.end(order)
            return result

    def _mark_failed(self, key: Hashable, why: str) -> None:
        with self._lock:
            self._failed[key] = why
            while len(self._failed) > MAX_TRACKED_KEYS:
                self._failed.popitem(last=False)

    def _capture(self, key, fn, A, out, cfg: config.GraphSettings) -> tuple:
        """Warm up (the result of this call), then capture fn on a static copy of A."""
        try:
            with torch.no_grad():
                result = tuple(self.backend.warmup(fn, A))  # errors of fn itself propagate
        except BaseException:
            with self._lock:
                self._capturing.discard(key)
            raise
        entry = None
        try:
            with self._capture_lock, torch.no_grad():
                entry = self._capture_entry(key, fn, A)
        except Exception as exc:  # a capture failure never reaches the caller
            logger.debug("capture failed for key %r: %r", key, exc)
            self._mark_failed(key, f"{type(exc).__name__}: {exc}")
            reason = REASON_CAPTURE_FAILED
        finally:
            with self._lock:
                self._capturing.discard(key)
        if entry is not None:
            if entry.nbytes > cfg.graph_bytes:
                self._release(entry)
                self._mark_failed(key, f"{entry.nbytes} bytes > ADAPTQR_GRAPH_BYTES={cfg.graph_bytes}")
                reason = REASON_TOO_LARGE
            else:
                self._insert(entry, cfg)
                reason = REASON_CAPTURING_CALL
        self._note(key, reason)
        return _deliver(result, out)

    def _capture_entry(self, key: Hashable, fn, A: torch.Tensor) -> _Entry:
        """Allocate the static buffers, capture every slot, and size the entry (may raise)."""
        handout = _use_count is not None
        n_slots = self.output_slots if handout else 1
        slots: list[_Slot] = []
        try:
            if is_inplace_plan(fn):
                nbytes = 0
                for _ in range(n_slots):
                    outs = tuple(fn.alloc(A))
                    fn.load(A, outs)

                    def thunk(outs=outs):
                        fn.body(outs)
                        return outs

                    handle, static_out, pool = self.backend.capture(thunk, A.device)
                    slots.append(_Slot(handle, tuple(static_out)))
                    nbytes += sum(t.nbytes for t in outs) + int(pool)  # outs: outside the pool
                static_in, load = None, fn.load
            else:
                # preserve_format keeps A's strides when A is dense, and falls back to a
                # contiguous buffer for an expanded (overlapping) A, which copy_ into an
                # overlapping empty_strided buffer would reject.
                static_in = torch.empty_like(A, memory_format=torch.preserve_format).copy_(A)
                nbytes = static_in.nbytes
                for _ in range(n_slots):
                    handle, static_out, pool = self.backend.capture(lambda: fn(static_in), A.device)
                    static_out = tuple(static_out)
                    slots.append(_Slot(handle, static_out))
                    # The outputs live in the pool; when it cannot be measured, count them.
                    nbytes += max(int(pool), sum(t.nbytes for t in static_out))
                load = None
        except BaseException:
            for sl in slots:
                self.backend.release(sl.handle)
            raise
        if handout:
            for sl in slots:
                sl.marks = _marks(sl.static_out)
        return _Entry(key, slots, static_in, nbytes, _meta(A), load, handout)

    def _insert(self, entry: _Entry, cfg: config.GraphSettings) -> None:
        evicted = []
        with self._lock:
            old = self._entries.pop(entry.key, None)
            if old is not None:  # cannot happen through run(); keep the books right anyway
                self._bytes -= old.nbytes
                evicted.append(old)
            self._entries[entry.key] = entry
            self._bytes += entry.nbytes
            self._captures += 1
            while len(self._entries) > 1 and (len(self._entries) > cfg.graph_entries
                                              or self._bytes > cfg.graph_bytes):
                _, victim = self._entries.popitem(last=False)
                self._bytes -= victim.nbytes
                self._evictions += 1
                evicted.append(victim)
        for victim in evicted:
            self._release(victim)

    def _release(self, entry: _Entry) -> None:
        with entry.lock:  # waits for a replay of this entry in flight on another thread
            if entry.released:
                return
            entry.released = True
            # Release first: the backend orders the static buffers' streams after their
            # last use before the buffers go back to the allocator below. Slot 0's handle
            # carries the ordering of every use, so it goes last.
            for sl in reversed(entry.slots):
                self.backend.release(sl.handle)
            entry.slots = []
            entry.static_in = None
            entry.load = None
