"""Two streams for one factorization's look-ahead (EXPERIMENTS.md L2), and for the wide
path's ``Q^T`` beside its leading block's factorization (paths/wide.py).

:class:`Lanes` holds the caller's stream (``main``) and a second stream of this thread on
the device (``hi``: of high priority for the look-ahead, of normal priority for the wide
path). :meth:`Lanes.fork` makes ``hi`` wait for what ``main`` has queued,
:meth:`Lanes.join` makes ``main`` wait for ``hi``; in between, work goes to ``hi`` inside
``with lanes.on_hi():`` and the two order each other through events
(:meth:`Lanes.record`, :meth:`Lanes.wait`). During a CUDA graph capture on ``main`` the fork
joins ``hi`` to the capture, so the graph records both. :class:`OneLane` issues everything
in the same order on the current stream (off the GPU, where the interpreter's tests check
the look-ahead's order of work). :func:`side_stream` gives a stream beside any one of
these, for launches that need no order with its own, and :class:`RouteLanes` puts one
trailing update's FP32-route launches there (EXPERIMENTS.md N19).

Example::

    >>> lanes = OneLane()
    >>> lanes.fork(); lanes.wait(lanes.main, lanes.record(lanes.hi)); lanes.join()
"""

from __future__ import annotations

import contextlib
import threading

import torch

from adaptqr.paths.kernels.fp16_storage import F16_SKIP

__all__ = ["HI_PRIORITY", "NORMAL_PRIORITY", "Lanes", "OneLane", "RouteLanes", "side_stream"]


class Lanes:
    """The caller's stream (``main``) and this thread's stream of ``priority`` (``hi``) on
    ``device``."""

    def __init__(self, device: torch.device, priority: int | None = None):
        self.main = torch.cuda.current_stream(device)
        self.hi = _thread_stream(device, HI_PRIORITY if priority is None else priority)

    def fork(self) -> None:
        self.hi.wait_stream(self.main)

    def on_hi(self):
        return torch.cuda.stream(self.hi)

    @staticmethod
    def record(stream):
        ev = torch.cuda.Event()
        ev.record(stream)
        return ev

    @staticmethod
    def wait(stream, ev) -> None:
        if ev is not None:
            stream.wait_event(ev)

    def join(self) -> None:
        self.main.wait_stream(self.hi)


class OneLane(Lanes):
    """Everything in issue order on the current stream: no fork, no events."""

    def __init__(self):
        self.main = self.hi = None

    def fork(self) -> None:
        pass

    def on_hi(self):
        return contextlib.nullcontext()

    @staticmethod
    def record(stream):
        return None

    def join(self) -> None:
        pass


#: The most negative priority torch maps to the device's highest.
HI_PRIORITY = -100
#: The default streams' priority (the device's lowest).
NORMAL_PRIORITY = 0

_STREAMS = threading.local()


def _thread_stream(device: torch.device, priority: int):
    """This thread's stream of ``priority`` on ``device``. One a thread: a stream that one
    thread's CUDA graph capture has joined must not take another thread's launches."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    streams = getattr(_STREAMS, "by_key", None)
    if streams is None:
        streams = _STREAMS.by_key = {}
    if (index, priority) not in streams:
        streams[index, priority] = torch.cuda.Stream(device=index, priority=priority)
    return streams[index, priority]


def side_stream(parent: torch.cuda.Stream) -> torch.cuda.Stream:
    """This thread's side stream of ``parent`` (same device and priority), for launches that
    run beside ``parent``'s own (the trailing update's two routes, EXPERIMENTS.md N19). One
    for each parent: the look-ahead's two lanes each get their own, so that neither waits
    on the other's side work."""
    streams = getattr(_STREAMS, "sides", None)
    if streams is None:
        streams = _STREAMS.sides = {}
    key = (parent.device.index, parent.cuda_stream)
    if key not in streams:
        streams[key] = torch.cuda.Stream(device=parent.device, priority=parent.priority)
    return streams[key]


class RouteLanes:
    """Where one trailing update's launches go (``Schedule.route_lanes`` as ``mode``,
    EXPERIMENTS.md N19): with the FP16 route's two launches a kernel (``two_routes``) and
    route lanes on (1: while a CUDA graph is being captured, 3: in a capture for a
    row-split update (``row_split``) only), the FP32 route's (``F16_SKIP``) on a side
    stream forked from the current one and joined by :meth:`join`; otherwise all in order
    on the current stream. The two launches update disjoint sets of
    matrices (each program takes its matrix's route), so they need no order between them.

    >>> lanes = RouteLanes(1, torch.zeros(1), True)  # CPU tensors: one stream
    >>> lanes.side is None
    True
    """

    def __init__(self, mode: int | None, H: torch.Tensor, two_routes: bool,
                 row_split: bool = False):
        self.side = None
        if not (two_routes and mode and H.is_cuda) or (mode == 3 and not row_split):
            return
        # Eager calls keep one stream: two event waits an update cost host time (N19's
        # mode 2, rejected).
        if not torch.cuda.is_current_stream_capturing():
            return
        self.cur = torch.cuda.current_stream(H.device)
        self.side = side_stream(self.cur)
        self.side.wait_stream(self.cur)

    def on(self, route: int):
        """The stream context for the launch of ``route`` (an ``fp16_storage.F16_*`` value)."""
        if self.side is None or route != F16_SKIP.value:
            return contextlib.nullcontext()
        return torch.cuda.stream(self.side)

    def join(self) -> None:
        if self.side is not None:
            self.cur.wait_stream(self.side)
