"""``adaptqr.distributed``: one batch of factorizations spread over the ranks of a
``torch.distributed`` group that all hold it (issue 27).

In data-parallel training every rank holds the same optimizer statistics; left alone, every
rank computes the same QRs. Here each rank factors a share and the results are exchanged
with torch.distributed's own collectives (NCCL on GPUs, gloo on CPUs):

- :func:`geqrf` ``(A, group=None, dst=None)``: ``A`` ``(*, m, n)``, the same on every rank.
  Shares of the batch by the cost model below; the factors are gathered with
  ``all_gather_into_tensor`` (every rank gets them), or with ``gather`` to rank ``dst`` only
  (the others get None).
- :func:`geqrf_list` ``(tensors, group=None)``: a list of matrices of mixed shapes (one per
  parameter): grouped by shape, each group one batched call; groups assigned whole to the
  least loaded rank (largest first), a group costing more than a rank's fair share split
  over every rank. Results in input order, on every rank.

Before any data moves, one fixed-size exchange compares what every rank holds (shapes,
dtypes, list lengths): a mismatch raises the same error on every rank, so nothing hangs. A
rank with no share is fine.

The cost model (:func:`split_pays`): a matrix costs about ``m n^2`` flops at
``MATRIX_FLOPS`` a second, a call ``CALL_SECONDS``, moving a result ``LINK_BYTES`` a second
with ``COLLECTIVE_SECONDS`` a collective. When splitting does not pay (small batches) every
rank factors the whole batch itself, with no communication. The constants are first
guesses: they need a multi-GPU machine to be measured (issue 27).

On the CPU (LAPACK factors each matrix of a batch on its own) the result equals
``adaptqr.geqrf`` on one process bit for bit. On the GPU a share may take another schedule
than the whole batch would (schedules depend on the batch size), so there the factors pass
the same check but may differ in the last bits.

Example (a one-rank gloo group)::

    >>> import os, torch, torch.distributed as dist
    >>> from adaptqr import distributed
    >>> from adaptqr.testing.distributed import free_port
    >>> os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(free_port())
    >>> dist.init_process_group("gloo", rank=0, world_size=1)
    >>> a, tau = distributed.geqrf(torch.eye(3).expand(4, 3, 3))
    >>> tau.shape
    torch.Size([4, 3])
    >>> dist.destroy_process_group()
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

#: Cost model (not measured yet: issue 27 needs 2+ GPUs). A matrix of m x n costs m n^2
#: flops at this rate (an H200's blocked QR runs at a few TFLOP/s of FP32 work) ...
MATRIX_FLOPS = 4e12
#: ... a batched call this long at least (launches, probes) ...
CALL_SECONDS = 50e-6
#: ... and moving results this fast (NVLink-class), plus this much a collective.
LINK_BYTES = 100e9
COLLECTIVE_SECONDS = 30e-6
#: Longest shape a descriptor carries (batch dims and m, n).
MAX_DIMS = 8

_DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128, torch.float16,
           torch.bfloat16)


def _dist():
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(
            "adaptqr.distributed: torch.distributed has no default process group. Call "
            "torch.distributed.init_process_group(backend='nccl' (GPUs) or 'gloo' (CPU), "
            "rank=..., world_size=...) on every rank first, or use adaptqr.geqrf for one "
            "process.")
    return dist


def _all_gather_single(dist):
    # torch 2.13 renames all_gather_into_tensor (deprecated there) to all_gather_single.
    return getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def _comm_device(dist, group, t: torch.Tensor) -> torch.device:
    # NCCL moves CUDA tensors only; gloo takes CPU ones.
    return t.device if dist.get_backend(group) == "nccl" else torch.device("cpu")


def _describe(t) -> list[int]:
    """A fixed-length description of one tensor: ndim, dtype code, device type, the shape."""
    if not isinstance(t, torch.Tensor):
        return [-1] * (MAX_DIMS + 3)
    code = _DTYPES.index(t.dtype) if t.dtype in _DTYPES else len(_DTYPES)
    shape = list(t.shape)[:MAX_DIMS]
    dev = 1 if t.is_cuda else 0
    return [t.dim(), code, dev] + shape + [-1] * (MAX_DIMS - len(shape))


def _same_everywhere(dist, group, rows: list[list[int]], device, what: str) -> None:
    """All-gather ``rows`` (equal count on every rank, checked first) and raise the same error
    on every rank where any rank's rows differ from rank 0's."""
    world = dist.get_world_size(group)
    n = torch.tensor([len(rows)], dtype=torch.int64, device=device)
    counts = [torch.zeros_like(n) for _ in range(world)]
    dist.all_gather(counts, n, group=group)
    counts = [int(c) for c in counts]
    if len(set(counts)) != 1:
        raise ValueError(f"adaptqr.distributed.{what}: the ranks hold lists of different lengths "
                         f"{counts} (by rank); every rank must pass the same batch")
    if not rows:
        return
    mine = torch.tensor(rows, dtype=torch.int64, device=device)
    alls = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(alls, mine, group=group)
    for r, rr in enumerate(alls):
        diff = (rr != alls[0]).any(dim=1).nonzero()
        if diff.numel():
            i = int(diff[0])
            raise ValueError(f"adaptqr.distributed.{what}: rank {r} holds {_say(rr[i])} where rank 0 "
                             f"holds {_say(alls[0][i])}" + (f" (member {i})" if len(rows) > 1 else "")
                             + "; every rank must pass the same shapes, dtypes and devices")


def _say(row: torch.Tensor) -> str:
    ndim, code, dev = (int(x) for x in row[:3])
    if ndim < 0:
        return "a non-tensor"
    dtype = _DTYPES[code] if code < len(_DTYPES) else "another dtype"
    return f"a {'cuda' if dev else 'cpu'} {dtype} tensor of shape {tuple(int(x) for x in row[3:3 + ndim])}"


def matrix_seconds(m: int, n: int) -> float:
    return m * n * min(m, n) / MATRIX_FLOPS


def split_pays(batch: int, m: int, n: int, world: int, itemsize: int) -> bool:
    """Whether factoring shares of ``batch`` matrices on ``world`` ranks and gathering them
    beats every rank factoring all of them (the cost model above)."""
    if world < 2 or batch < 2:
        return False
    alone = CALL_SECONDS + batch * matrix_seconds(m, n)
    share = math.ceil(batch / world)
    moved = batch * (m * n + min(m, n)) * itemsize
    split = CALL_SECONDS + share * matrix_seconds(m, n) + 2 * COLLECTIVE_SECONDS + moved / LINK_BYTES
    return split < alone


def _shares(batch: int, world: int) -> list[tuple[int, int]]:
    per, extra = divmod(batch, world)
    out, s = [], 0
    for r in range(world):
        e = s + per + (1 if r < extra else 0)
        out.append((s, e))
        s = e
    return out


def _factor_share(A3: torch.Tensor, s: int, e: int, P: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``[s, e)`` of the batch factored, padded to ``P`` matrices: ``(a^T, tau)``
    contiguous, as the collectives want them."""
    from adaptqr.api import geqrf

    B, m, n = A3.shape
    at = A3.new_zeros((P, n, m))
    tau = A3.new_zeros((P, min(m, n)))
    if e > s:
        a, t = geqrf(A3[s:e])
        at[: e - s] = a.mT
        tau[: e - s] = t
    return at, tau


def _gathered(dist, group, parts: tuple[torch.Tensor, torch.Tensor], world: int, B: int,
              shares, dst: int | None, device):
    """Every rank's padded ``(a^T, tau)`` share, unpadded into the batch order, or None (on a
    rank other than ``dst``)."""
    outs = []
    for x in parts:
        x = x.to(device)
        if dst is None:
            full = x.new_empty((world * x.shape[0], *x.shape[1:]))
            _all_gather_single(dist)(full, x, group=group)
            outs.append(full.view(world, *x.shape))
        else:
            lst = [torch.empty_like(x) for _ in range(world)] if dist.get_rank(group) == dst else None
            dist.gather(x, lst, dst=dst, group=group)
            outs.append(torch.stack(lst) if lst is not None else None)
    if outs[0] is None:
        return None
    at = torch.cat([outs[0][r, : e - s] for r, (s, e) in enumerate(shares)])
    tau = torch.cat([outs[1][r, : e - s] for r, (s, e) in enumerate(shares)])
    return at, tau


def geqrf(A: torch.Tensor, group=None, dst: int | None = None):
    """``adaptqr.geqrf(A)`` with the batch spread over the ranks of ``group`` (``A`` the same on
    every rank). Returns ``torch.return_types.geqrf`` on every rank, or (``dst`` given) on
    rank ``dst`` only, None elsewhere."""
    dist = _dist()
    world = dist.get_world_size(group)
    device = _comm_device(dist, group, A) if isinstance(A, torch.Tensor) else torch.device("cpu")
    _same_everywhere(dist, group, [_describe(A)], device, "geqrf")
    from adaptqr import validate
    from adaptqr.api import geqrf as local

    validate.check_input(A)  # the same verdict on every rank: they hold the same shape and dtype
    *batch, m, n = A.shape
    B = math.prod(batch)
    if not split_pays(B, m, n, world, A.element_size()):
        out = local(A)
        return out if dst is None or dist.get_rank(group) == dst else None
    A3 = A.reshape(B, m, n)
    shares = _shares(B, world)
    P = max(e - s for s, e in shares)
    s, e = shares[dist.get_rank(group)]
    got = _gathered(dist, group, _factor_share(A3, s, e, P), world, B, shares, dst, device)
    if got is None:
        return None
    at, tau = (x.to(A.device) for x in got)
    return torch.return_types.geqrf((at.mT.reshape(*batch, m, n), tau.reshape(*batch, min(m, n))))


def geqrf_list(tensors: Sequence[torch.Tensor], group=None) -> list:
    """``[adaptqr.geqrf(t) for t in tensors]`` (the same list on every rank), the shape
    groups spread over the ranks of ``group``; results on every rank, in input order."""
    from adaptqr import validate
    from adaptqr.foreach import groups

    dist = _dist()
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"adaptqr.distributed.geqrf_list: expected a list or tuple of tensors, got "
                        f"{type(tensors).__name__}")
    first = next((t for t in tensors if isinstance(t, torch.Tensor)), torch.empty(0))
    device = _comm_device(dist, group, first)
    _same_everywhere(dist, group, [_describe(t) for t in tensors], device, "geqrf_list")
    plan = groups(tensors, "adaptqr.distributed.geqrf_list")
    for idx in plan.values():
        validate.check_input(tensors[idx[0]])
    # Groups by cost, largest first: split over every rank when above a fair share, else
    # whole to the least loaded rank.
    cost = {key: len(idx) * matrix_seconds(key[0][-2], key[0][-1]) + CALL_SECONDS
            for key, idx in plan.items()}
    fair = sum(cost.values()) / world
    load = [0.0] * world
    owner: dict[tuple, int | None] = {}
    for key in sorted(plan, key=lambda k: -cost[k]):
        if world > 1 and cost[key] > fair and len(plan[key]) > 1:
            owner[key] = None
            for r in range(world):
                load[r] += cost[key] / world
        else:
            r = min(range(world), key=lambda i: load[i])
            owner[key] = r
            load[r] += cost[key]
    results: list = [None] * len(tensors)
    for key, idx in plan.items():  # the same order on every rank: the collectives match
        stack = torch.stack([tensors[i] for i in idx])
        if owner[key] is None:
            a, tau = geqrf(stack, group)
        else:
            a, tau = _owned(dist, group, stack, owner[key], rank, device)
        for j, i in enumerate(idx):
            results[i] = torch.return_types.geqrf((a[j], tau[j]))
    return results


def _owned(dist, group, stack: torch.Tensor, owner: int, rank: int, device):
    """The group factored on rank ``owner`` and broadcast from it."""
    G, *rest = stack.shape
    *batch, m, n = rest
    A3 = stack.reshape(-1, m, n)
    at, tau = _factor_share(A3, 0, A3.shape[0] if rank == owner else 0, A3.shape[0])
    at, tau = at.to(device), tau.to(device)
    src = dist.get_global_rank(group, owner) if group is not None else owner
    dist.broadcast(at, src=src, group=group)
    dist.broadcast(tau, src=src, group=group)
    at, tau = at.to(stack.device), tau.to(stack.device)
    return at.mT.reshape(G, *batch, m, n), tau.reshape(G, *batch, min(m, n))
