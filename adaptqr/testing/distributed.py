"""Test support for :mod:`adaptqr.distributed`: a gloo group of a few processes on this host,
each running the same scenarios and saving what it got, for the parent to compare.

Example::

    >>> from adaptqr.testing.distributed import run_world
    >>> ranks = run_world(2)  # doctest: +SKIP
    >>> sorted(ranks[0])[:2]  # doctest: +SKIP
    ['bad_input', 'dst_1']
"""

from __future__ import annotations

import os
import socket
import tempfile
import traceback

import torch


def free_port() -> int:
    """A TCP port free on this host now (for a test group's rendezvous)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _inputs(seed: int = 27):
    g = torch.Generator().manual_seed(seed)
    single = {f"b{b}": torch.randn(b, 9, 7, generator=g) for b in (1, 3, 5, 8)}
    shapes = [(12, 12), (6, 4), (12, 12), (2, 5, 5), (6, 4), (12, 12), (30, 30), (3, 3)]
    mixed = [torch.randn(*s, generator=g, dtype=torch.float64 if i == 7 else torch.float32)
             for i, s in enumerate(shapes)]
    return single, mixed


def _scenarios(rank: int, world: int):
    from adaptqr import distributed as D

    single, mixed = _inputs()
    out = {}

    def record(name, fn):
        try:
            out[name] = fn()
        except Exception as e:  # saved for the parent: the same error on every rank
            out[name] = ("error", type(e).__name__, str(e))

    forced = D.split_pays
    D.split_pays = lambda *a, **k: True  # small test batches: split anyway
    try:
        for name, A in single.items():
            record(f"split_{name}", lambda A=A: tuple(D.geqrf(A)))
        record("dst_1", lambda: D.geqrf(single["b5"], dst=1 % world))
        record("list", lambda: [tuple(r) for r in D.geqrf_list(mixed)])
        record("empty_list", lambda: D.geqrf_list([]))
    finally:
        D.split_pays = forced
    record("replicated", lambda: tuple(D.geqrf(single["b3"])))
    bad = single["b3"] if rank == 0 else single["b3"][:, :, :5]
    record("shape_mismatch", lambda: D.geqrf(bad))
    record("dtype_mismatch", lambda: D.geqrf(single["b3"] if rank else single["b3"].double()))
    record("length_mismatch", lambda: D.geqrf_list(mixed if rank else mixed[:-1]))
    record("bad_input", lambda: D.geqrf(torch.randn(5)))
    return out


def _worker(rank: int, world: int, port: int, folder: str) -> None:
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        got = _scenarios(rank, world)
    except Exception:
        got = {"crash": traceback.format_exc()}
    finally:
        dist.destroy_process_group()
    torch.save(got, os.path.join(folder, f"rank{rank}.pt"))


def run_world(world: int) -> list[dict]:
    """Every scenario on ``world`` gloo processes: one dict of results a rank."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as folder:
        mp.spawn(_worker, args=(world, free_port(), folder), nprocs=world, join=True)
        return [torch.load(os.path.join(folder, f"rank{r}.pt"), weights_only=False) for r in range(world)]


def expected():
    """What one process gets from adaptqr.geqrf for the same inputs."""
    import adaptqr

    single, mixed = _inputs()
    return ({k: tuple(adaptqr.geqrf(A)) for k, A in single.items()},
            [tuple(adaptqr.geqrf(t)) for t in mixed])
