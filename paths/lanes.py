"""Two streams for one factorization's look-ahead (EXPERIMENTS.md L2).

:class:`Lanes` holds the caller's stream (``main``) and this thread's high-priority stream
(``hi``) on the device. :meth:`Lanes.fork` makes ``hi`` wait for what ``main`` has queued,
:meth:`Lanes.join` makes ``main`` wait for ``hi``; in between, work goes to ``hi`` inside
``with lanes.on_hi():`` and the two order each other through events
(:meth:`Lanes.record`, :meth:`Lanes.wait`). During a CUDA graph capture on ``main`` the fork
joins ``hi`` to the capture, so the graph records both. :class:`OneLane` issues everything
in the same order on the current stream (off the GPU, where the interpreter's tests check
the look-ahead's order of work).

Example::

    >>> lanes = OneLane()
    >>> lanes.fork(); lanes.wait(lanes.main, lanes.record(lanes.hi)); lanes.join()
"""

from __future__ import annotations

import contextlib
import threading

import torch

__all__ = ["Lanes", "OneLane"]


class Lanes:
    """The caller's stream (``main``) and a high-priority stream (``hi``) on ``device``."""

    def __init__(self, device: torch.device):
        self.main = torch.cuda.current_stream(device)
        self.hi = _hi_stream(device.index if device.index is not None
                             else torch.cuda.current_device())

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


_HI_STREAMS = threading.local()


def _hi_stream(device_index: int):
    """This thread's high-priority stream on the device. One a thread: a stream that one
    thread's CUDA graph capture has joined must not take another thread's launches."""
    streams = getattr(_HI_STREAMS, "by_device", None)
    if streams is None:
        streams = _HI_STREAMS.by_device = {}
    if device_index not in streams:
        # The most negative priority torch maps to the device's highest.
        streams[device_index] = torch.cuda.Stream(device=device_index, priority=-100)
    return streams[device_index]
