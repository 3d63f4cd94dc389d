"""Summary statistics of repeat times: mean, median, relative standard error, geomean.

Plain Python on lists of floats (milliseconds), so they are testable without a device.

Example::

    >>> from adaptqr.bench.stats import geomean, rel_stderr
    >>> round(geomean([1.0, 100.0]), 6)
    10.0
    >>> rel_stderr([1.0, 1.0, 1.0])
    0.0
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def mean(xs: Sequence[float]) -> float:
    return statistics.fmean(xs)


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def rel_stderr(xs: Sequence[float]) -> float:
    """Standard error of the mean over the mean (sample std, ddof=1); inf below 2 samples."""
    if len(xs) < 2:
        return math.inf
    m = statistics.fmean(xs)
    if m <= 0:
        return math.inf
    return statistics.stdev(xs) / math.sqrt(len(xs)) / m


def geomean(xs: Sequence[float]) -> float:
    """Geometric mean of positive numbers; raises ValueError on an empty or non-positive input."""
    if len(xs) == 0:
        raise ValueError("geomean of an empty sequence")
    if any(not (x > 0) for x in xs):
        raise ValueError(f"geomean needs positive numbers, got {list(xs)}")
    return math.exp(math.fsum(math.log(x) for x in xs) / len(xs))
