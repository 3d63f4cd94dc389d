"""``torch.use_deterministic_algorithms`` for the length of a block (docs/NUMERICS.md
"Determinism"): the library then splits no update over rows, so a call gives the same bits
on the same input every time.

Example::

    >>> import torch
    >>> from adaptqr.testing import deterministic
    >>> with deterministic():
    ...     torch.are_deterministic_algorithms_enabled()
    True
    >>> torch.are_deterministic_algorithms_enabled()
    False
"""

from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def deterministic():
    """Deterministic algorithms on inside the block, the previous setting back after it."""
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before)
