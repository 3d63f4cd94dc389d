"""Extra device memory of one call: peak allocated during it, less what was there before, less the outputs.

Example (CUDA only; on other devices the figure is None)::

    >>> import torch
    >>> from adaptqr.bench.memory import extra_memory_bytes
    >>> extra_memory_bytes(torch.geqrf, torch.randn(2, 8, 8)) is None
    True
"""

from __future__ import annotations

from collections.abc import Callable

import torch

MIB = float(1 << 20)


def _nbytes(obj) -> int:
    if isinstance(obj, torch.Tensor):
        return obj.untyped_storage().nbytes()
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(o) for o in obj)
    return 0


def extra_memory_bytes(fn: Callable, a: torch.Tensor) -> int | None:
    """Bytes ``fn(a)`` needed beyond its outputs (workspaces, caches it grew), or None off CUDA.

    Uses torch's caching-allocator counters, so memory allocated outside torch (cuSOLVER
    workspaces, Triton scratch) is not seen. Memory a cache keeps after the call (e.g.
    CUDA-graph static buffers) counts here on the first call and is in "before" afterwards.
    """
    if a.device.type != "cuda":
        return None
    dev = a.device
    torch.cuda.synchronize(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    before = torch.cuda.memory_allocated(dev)
    out = fn(a)
    torch.cuda.synchronize(dev)
    peak = torch.cuda.max_memory_allocated(dev)
    extra = peak - before - _nbytes(out)
    del out
    return max(0, extra)


def allocated_bytes(device: torch.device) -> int | None:
    """Bytes torch's allocator holds for live tensors on ``device`` now, or None off CUDA.

    The runner reads it before the first (warm-up) calls and after their outputs are
    dropped: the difference is what the library keeps between calls (graph buffers, caches).
    """
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    return torch.cuda.memory_allocated(device)
