"""The CUDA side of the graph cache: warm-up, capture, replay, release with torch.cuda graphs.

``CudaGraphBackend`` implements the backend interface that ``adaptqr.graphs.cache``
documents. It knows nothing about keys or bounds.

Streams: each thread gets its own side stream per device, used for the warm-up run and for
the capture (torch requires warm-up on a side stream; using the same stream for both means
every per-stream lazy initialisation, e.g. cuBLAS workspaces, happened before capture).
A per-thread stream also keeps one thread's warm-up from being recorded into another
thread's capture.

Example (needs a GPU)::

    >>> import torch
    >>> from adaptqr.graphs.capture import CudaGraphBackend
    >>> def demo():
    ...     be = CudaGraphBackend()
    ...     fn = lambda A: (A @ A, A.sum(-1))
    ...     A = torch.randn(4, 8, 8, device="cuda")
    ...     _ = be.warmup(fn, A)
    ...     x = A.clone()
    ...     h, (P, s), pool_bytes = be.capture(lambda: fn(x), x.device)
    ...     x.copy_(torch.randn_like(A)); be.begin(h); be.replay(h); be.end(h)
    ...     return torch.allclose(P, x @ x)
    >>> demo() if torch.cuda.is_available() else True
    True
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Callable

import torch

# Other threads may keep running eager CUDA work while one thread captures: "global" mode
# would make their cudaMalloc/synchronize calls fail that capture.
CAPTURE_ERROR_MODE = "thread_local"


@dataclass
class GraphHandle:
    """A captured graph and what is needed to order and free it."""

    graph: torch.cuda.CUDAGraph
    device: torch.device
    # The stream the static buffers allocated outside the pool (static input, an in-place
    # plan's outputs) were allocated on; it waits for the last use on release so the
    # caching allocator cannot hand that memory out while a replay still uses it.
    alloc_stream: torch.cuda.Stream
    # The stream of the last use, as ``torch._C._cuda_getCurrentStream`` says it (a cheap
    # tuple) and as a Stream object (built only when the stream changes). A use on another
    # stream first waits for everything queued on that stream so far (which includes the
    # last use): no event per call on the common one-stream path.
    last_key: tuple | None = None
    last_stream: torch.cuda.Stream | None = None


class DeviceGuard:
    """``torch.cuda.device(index)`` that costs one C call when the device is already current."""

    __slots__ = ("index", "ctx")

    def __init__(self, device: torch.device):
        self.index = device.index if device.index is not None else torch._C._cuda_getDevice()
        self.ctx = None

    def __enter__(self):
        if self.index != torch._C._cuda_getDevice():
            self.ctx = torch.cuda.device(self.index)
            self.ctx.__enter__()

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.__exit__(*exc)


def on_device(device: torch.device):
    """A :class:`DeviceGuard` for a CUDA device (Triton launches on the current device, not
    the tensors'), else a context that does nothing."""
    return DeviceGuard(device) if device.type == "cuda" else contextlib.nullcontext()


def _wait_for(stream: torch.cuda.Stream, waiter: torch.cuda.Stream) -> None:
    """Make ``waiter`` wait for the work queued on ``stream`` so far."""
    ev = torch.cuda.Event()
    ev.record(stream)
    waiter.wait_event(ev)


class CudaGraphBackend:
    """Capture/replay of a plan with ``torch.cuda.CUDAGraph``, one private pool per graph."""

    def __init__(self, capture_error_mode: str = CAPTURE_ERROR_MODE):
        self.capture_error_mode = capture_error_mode
        self._local = threading.local()
        self._failed_graphs: list = []  # never freed on purpose: see capture()

    def _side_stream(self, device: torch.device) -> torch.cuda.Stream:
        streams = getattr(self._local, "streams", None)
        if streams is None:
            streams = self._local.streams = {}
        s = streams.get(device.index)
        if s is None:
            s = streams[device.index] = torch.cuda.Stream(device=device)
        return s

    # -------------------------------------------------------------- interface
    def accepts(self, A: torch.Tensor) -> bool:
        return isinstance(A, torch.Tensor) and A.is_cuda

    def is_capturing(self, A: torch.Tensor) -> bool:
        with DeviceGuard(A.device):
            return torch.cuda.is_current_stream_capturing()

    def warmup(self, fn: Callable, A: torch.Tensor) -> tuple:
        """Run ``fn(A)`` eagerly on this thread's side stream, ordered with the caller's."""
        with DeviceGuard(A.device):
            cur = torch.cuda.current_stream()
            side = self._side_stream(A.device)
            side.wait_stream(cur)
            with torch.cuda.stream(side):
                outs = tuple(fn(A))
            cur.wait_stream(side)
            # Outputs were allocated on the side stream but the caller uses them on its own.
            for t in outs:
                if isinstance(t, torch.Tensor) and t.is_cuda:
                    t.record_stream(cur)
            A.record_stream(side)
        return outs

    def capture(self, thunk: Callable[[], tuple], dev: torch.device):
        """Capture ``thunk()`` on ``dev``; returns (handle, static outputs, pool bytes).

        The buffers thunk reads must be allocated, and filled, before the call (the
        capture synchronizes the device first, so work queued on any stream is done).
        """
        with DeviceGuard(dev):
            alloc_stream = torch.cuda.current_stream()
            side = self._side_stream(dev)
            g = torch.cuda.CUDAGraph()
            # The outer stream context restores the caller's stream even when capture_end
            # raises inside torch.cuda.graph.__exit__ (which then skips its own restore).
            try:
                with torch.cuda.stream(side):
                    with torch.cuda.graph(g, stream=side, capture_error_mode=self.capture_error_mode):
                        outs = tuple(thunk())
            except BaseException:
                # When capture_end fails, torch may leave the allocator's "allocate to this
                # pool" filter registered, and that filter points at g: keep g alive.
                self._failed_graphs.append(g)
                raise
            for i, t in enumerate(outs):
                if not isinstance(t, torch.Tensor) or t.device != dev:
                    raise TypeError(f"adaptqr.graphs: plan output {i} is {type(t).__name__} "
                                    f"on {getattr(t, 'device', None)}, expected a tensor on {dev}")
        if dev.index is None:
            dev = torch.device(dev.type, torch._C._cuda_getDevice())
        return GraphHandle(g, dev, alloc_stream), outs, _pool_bytes(g, dev)

    def begin(self, h: GraphHandle) -> None:
        if h.last_key is None:
            return
        with DeviceGuard(h.device):
            if torch._C._cuda_getCurrentStream(h.device.index) != h.last_key:
                _wait_for(h.last_stream, torch.cuda.current_stream())

    def replay(self, h: GraphHandle) -> None:
        with DeviceGuard(h.device):
            h.graph.replay()

    def end(self, h: GraphHandle) -> None:
        with DeviceGuard(h.device):
            cur = torch._C._cuda_getCurrentStream(h.device.index)
            if cur != h.last_key:
                h.last_key, h.last_stream = cur, torch.cuda.current_stream()

    def release(self, h: GraphHandle) -> None:
        """Free the graph; its private pool goes back to torch's allocator (no sync)."""
        with DeviceGuard(h.device):
            if h.last_stream is not None and h.last_stream != h.alloc_stream:
                _wait_for(h.last_stream, h.alloc_stream)
            # An executable graph destroyed while in flight is freed when it completes.
            h.graph.reset()


def _pool_bytes(g: torch.cuda.CUDAGraph, device: torch.device) -> int:
    """Bytes of the segments in ``g``'s private pool, 0 when the allocator cannot say."""
    try:
        pool = tuple(g.pool())
        total = 0
        for seg in torch.cuda.memory_snapshot():
            if tuple(seg.get("segment_pool_id", ())) == pool and seg.get("device") == device.index:
                total += int(seg.get("total_size", 0))
        return total
    except Exception:  # allocator introspection is best effort; the caller has a floor
        return 0

