"""The qr_v2 timing loop: rotating inputs, L2 flush, CUDA events, standard-error stop rule.

One *repeat* calls the function once on each of the k inputs in turn; its figure is
elapsed / k. On CUDA each repeat is: synchronize, flush L2, record a start event, the k
calls, record an end event, synchronize (spec/qr_v2.md "Timing"). On the CPU the repeat is
timed with ``time.perf_counter`` and nothing is flushed.

Repeats stop at the first of: ``max_repeats`` reached; at least ``min_repeats`` done and
the standard error of the mean is under ``REL_STDERR_TARGET`` of the mean; at least
``min_repeats`` done and the wall-clock budget is spent.

Example (CPU)::

    >>> import torch
    >>> from adaptqr.bench.timing import StopRule, time_calls
    >>> xs = [torch.randn(4, 16, 16) for _ in range(3)]
    >>> t = time_calls(torch.geqrf, xs, StopRule(max_repeats=5, budget_s=1.0))
    >>> 1 <= len(t.times_ms) <= 5 and t.k == 3
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from adaptqr.bench import stats

# The public leaderboard's rule: stop once the standard error is under 0.1% of the mean.
REL_STDERR_TARGET = 1e-3
# A buffer well above any L2 we target (H100/H200: 50-60 MiB, B200: 126 MiB) so that
# zeroing it evicts the previous repeat's inputs and outputs.
L2_FLUSH_BYTES = 256 << 20
# Below 3 samples the standard error is itself too noisy to trust as a stop signal.
MIN_REPEATS = 3


@dataclass(frozen=True)
class StopRule:
    """When to stop repeating. ``budget_s`` is wall time across all repeats of one case."""

    max_repeats: int = 100
    budget_s: float = 10.0
    min_repeats: int = MIN_REPEATS
    rel_stderr: float = REL_STDERR_TARGET

    def done(self, times_ms: Sequence[float], elapsed_s: float) -> bool:
        n = len(times_ms)
        if n >= self.max_repeats:
            return True
        if n < min(self.min_repeats, self.max_repeats):
            return False
        if elapsed_s >= self.budget_s:
            return True
        return stats.rel_stderr(times_ms) < self.rel_stderr


@dataclass
class Timing:
    """Per-repeat figures in milliseconds per call (elapsed / k)."""

    k: int
    times_ms: list[float] = field(default_factory=list)

    @property
    def mean_ms(self) -> float:
        return stats.mean(self.times_ms)

    @property
    def median_ms(self) -> float:
        return stats.median(self.times_ms)

    @property
    def rel_stderr(self) -> float:
        return stats.rel_stderr(self.times_ms)


class _L2Flusher:
    """Owns one large device buffer; ``flush()`` overwrites it (one memset kernel)."""

    def __init__(self, device: torch.device, nbytes: int = L2_FLUSH_BYTES):
        self.buf = torch.empty(nbytes, dtype=torch.uint8, device=device)

    def flush(self) -> None:
        self.buf.zero_()


def time_calls(fn: Callable, inputs: Sequence[torch.Tensor], rule: StopRule) -> Timing:
    """Time ``fn`` over the rotating ``inputs`` until ``rule`` says stop.

    The inputs must all be on one device; a CUDA device selects the event-timed loop.
    ``fn`` is not warmed up here: the caller runs it once per input first (the check).
    """
    if len(inputs) == 0:
        raise ValueError("time_calls needs at least one input")
    device = inputs[0].device
    if device.type == "cuda":
        return _time_cuda(fn, inputs, rule, device)
    return _time_host(fn, inputs, rule)


def _time_cuda(fn, inputs, rule: StopRule, device: torch.device) -> Timing:
    k = len(inputs)
    out = Timing(k=k)
    flusher = _L2Flusher(device)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    with torch.cuda.device(device):
        while True:
            torch.cuda.synchronize(device)
            flusher.flush()
            start.record()
            for a in inputs:
                fn(a)
            end.record()
            torch.cuda.synchronize(device)
            out.times_ms.append(start.elapsed_time(end) / k)
            if rule.done(out.times_ms, time.perf_counter() - t0):
                return out


def _time_host(fn, inputs, rule: StopRule) -> Timing:
    k = len(inputs)
    out = Timing(k=k)
    t0 = time.perf_counter()
    while True:
        s = time.perf_counter()
        for a in inputs:
            fn(a)
        out.times_ms.append((time.perf_counter() - s) * 1e3 / k)
        if rule.done(out.times_ms, time.perf_counter() - t0):
            return out
