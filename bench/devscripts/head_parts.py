"""The host's cost of each piece of an eager call's head, before its first panel launch
(device script; EXPERIMENTS.md OC23, family 1): what the GPU waits for at 640x512.

Each piece is called ``--reps`` times after a warm-up, the GPU synchronized before each
call, and its host time (``perf_counter`` until it returns) is the median:
``torch.empty`` of the output, the route probe (its two launches), the prescale launch, a
Triton launch of a one-element kernel, a torch launch (``add_``), ``Lanes`` and its fork,
and the whole public call's enqueue time. Run there:
``python3 bench/devscripts/head_parts.py [--shape 640x512]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import triton
import triton.language as tl

import adaptqr
from adaptqr.detectors import route
from adaptqr.paths.lanes import Lanes
from adaptqr.paths.prescale import prescale
from adaptqr.testing.generators import generate


@triton.jit
def _one(X):
    tl.store(X, tl.load(X) + 1.0)


def _host_ms(fn, reps: int) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="640x512")
    ap.add_argument("--reps", type=int, default=21)
    args = ap.parse_args()
    B, n = map(int, args.shape.split("x"))
    A = generate(B, n, 2, 1029, "dense")
    H = torch.empty((B, n, n), device="cuda").mT
    x = torch.zeros(1, device="cuda")
    e = torch.zeros(B, dtype=torch.int32, device="cuda")
    parts = {
        "public call (enqueue)": lambda: adaptqr.geqrf(A),
        "torch.empty (output)": lambda: torch.empty((B, n, n), device="cuda"),
        "route probe (2 launches)": lambda: route(H, src=A),
        "prescale (1 launch)": lambda: prescale(H, e),
        "triton launch (1 element)": lambda: _one[(1,)](x),
        "torch launch (add_)": lambda: x.add_(1.0),
        "Lanes + fork": lambda: Lanes(A.device).fork(),
    }
    for name, fn in parts.items():
        print(f"{args.shape} {name:28s} {_host_ms(fn, args.reps):8.3f} ms host")


if __name__ == "__main__":
    main()
