"""``adaptqr.foreach_geqrf`` and ``adaptqr.linalg.foreach_qr``: one call for a list of matrices
of mixed shapes, as optimizers hold them (one statistic per parameter), after PyTorch's
``_foreach_*`` convention (issue 28).

The tensors are grouped by ``(shape, dtype, device)``; each group of two or more is stacked
and factored in one batched call through the dispatcher; the results come back in input
order. A group is checked once, on its first member (all members share its shape, dtype and
device), by the checks of the per-tensor op, before anything is stacked, so a bad member
gets the error the per-tensor op gives. The callers' tensors are only read. The results of a
stacked group are views of its batched output.

Example::

    >>> import torch, adaptqr
    >>> xs = [torch.randn(6, 4), torch.randn(3, 3), torch.randn(6, 4)]
    >>> outs = adaptqr.foreach_geqrf(xs)
    >>> [tuple(o.a.shape) for o in outs]
    [(6, 4), (3, 3), (6, 4)]
    >>> torch.allclose(outs[2].tau, torch.geqrf(xs[2]).tau)
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch


def groups(tensors: Sequence[torch.Tensor], name: str) -> dict[tuple, list[int]]:
    """Input positions by ``(shape, dtype, device)``, in first-seen order; TypeError naming
    the first member that is not a tensor."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}: expected a list or tuple of tensors, got {type(tensors).__name__}")
    out: dict[tuple, list[int]] = {}
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: element {i} is a {type(t).__name__}, not a Tensor")
        out.setdefault((tuple(t.shape), t.dtype, t.device), []).append(i)
    return out


def apply_grouped(tensors: Sequence[torch.Tensor], name: str, check: Callable, call: Callable,
                  unstack: Callable) -> list:
    """``call`` once a group (on the one member, or on the group stacked along a new first
    dim), after ``check(member)``; ``unstack(out, j, member)``: member ``j``'s result."""
    results: list = [None] * len(tensors)
    for idx in groups(tensors, name).values():
        first = tensors[idx[0]]
        check(first)
        if len(idx) == 1:
            results[idx[0]] = call(first)
            continue
        out = call(torch.stack([tensors[i] for i in idx]))
        for j, i in enumerate(idx):
            results[i] = unstack(out, j, tensors[i])
    return results


def foreach_geqrf(tensors: Sequence[torch.Tensor]) -> list:
    """``[adaptqr.geqrf(t) for t in tensors]``, one batched call a shape: a list of
    ``torch.return_types.geqrf``.

    >>> import adaptqr
    >>> adaptqr.foreach_geqrf([])
    []
    """
    from adaptqr import validate
    from adaptqr.api import geqrf

    return apply_grouped(
        tensors, "foreach_geqrf", validate.check_input, geqrf,
        lambda out, j, t: torch.return_types.geqrf((out.a[j], out.tau[j])))
