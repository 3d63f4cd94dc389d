"""Issue 25's small case: where one eager ``householder_product`` call's host time goes,
beside ``geqrf``'s (graph-replayed) and ``linalg.qr``'s on the same shape.

Per op: 5 warm-up calls, then 20 calls timed as host enqueue time (perf_counter until the
op returns, GPU idle before) and whole-call time (until synchronized), medians; then 200
calls back to back (host time a call, and with the GPU's tail); then 50
calls under cProfile (top functions by own time). Run there:
``python3 bench/devscripts/hp_host.py [--shape 20x32] [--knobs qform_small_cuda=1]`` (with
``--knobs``, the Q ops again under those knobs). Where the small path's kernel is there,
``geqrf`` by it too (H37); last, each geqrf's GPU time a call, without the host.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time

import torch

import adaptqr
from adaptqr import config
from adaptqr.testing.generators import generate


def _times(fn, n=20):
    enq, whole = [], []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        enq.append(t1 - t0)
        whole.append(time.perf_counter() - t0)
    return statistics.median(enq) * 1e6, statistics.median(whole) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="20x32")
    ap.add_argument("--knobs", default="", help="integer experiment knobs, name=value,...")
    args = ap.parse_args()
    b, n = (int(x) for x in args.shape.split("x"))
    A = generate(b, n, 1, 5, "dense")
    H, tau = adaptqr.geqrf(A)
    ops = {"geqrf": lambda: adaptqr.geqrf(A),
           "householder_product": lambda: adaptqr.householder_product(H, tau),
           "linalg.qr": lambda: adaptqr.linalg.qr(A)}
    from adaptqr.paths.kernels import geqrf_small_cuda

    if geqrf_small_cuda.available() and geqrf_small_cuda.takes(n, n):
        # H37: the small path, one cupy launch on the caller's tensor (named: not a default).
        ops["geqrf small"] = lambda: adaptqr.geqrf(A, path="small")
        _small_parts(A)
    _measure(args.shape, ops)
    if args.knobs:
        # The Q ops again with experiment knobs set around the whole measurement ("name=value,
        # ..."; QF24: qform_small_cuda=1), so that no call pays for setting them.
        knobs = {k: int(v) for k, v in (kv.split("=") for kv in args.knobs.split(","))}
        with config.experiment(**knobs):
            _measure(args.shape, {f"{name} {args.knobs}": fn for name, fn in ops.items()
                                  if not name.startswith("geqrf")})
    _gpu_times(args.shape, {k: v for k, v in ops.items() if k.startswith("geqrf")})


def _small_parts(A: torch.Tensor) -> None:
    """The small path's host time in parts, back to back (H37): the outputs' allocation, the
    launcher on preallocated outputs, and the bare cupy launch on torch's stream."""
    from adaptqr.layout import geqrf_outputs
    from adaptqr.paths.kernels import geqrf_small_cuda, panel_cuda

    H, tau = geqrf_outputs(A)
    mr, nw, args = geqrf_small_cuda.launch_args(A, H, tau)
    kern, dev = geqrf_small_cuda._kernel(mr, A.device.index), A.device.index
    parts = {"outputs (geqrf_outputs)": lambda: geqrf_outputs(A),
             "launcher, outputs given": lambda: geqrf_small_cuda.launch(A, H, tau),
             "cupy launch on torch's stream": lambda: panel_cuda.run_on_torch_stream(
                 kern, (A.shape[0],), (32 * nw,), args, A.device, dev)}
    for name, fn in parts.items():
        for _ in range(20):
            fn()
        host, _ = _back_to_back(fn, 1000)
        print(f"small path part, {name}: {host:.1f} us a call (host)")


def _back_to_back(fn, calls: int) -> tuple[float, float]:
    """``calls`` calls back to back, as the bench's repeats: the host's microseconds a call
    when nothing waits, and with the GPU's tail."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6, (time.perf_counter() - t0) / calls * 1e6


def capture(fn, calls: int) -> torch.cuda.CUDAGraph:
    """``calls`` calls of ``fn`` in one CUDA graph, after one on a side stream (the
    capture's warm-up: compiles and allocations outside it)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return g


def replay_ms(g: torch.cuda.CUDAGraph) -> float:
    """One replay of ``g``, timed by events (ms)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    g.replay()
    e.record()
    e.synchronize()
    return s.elapsed_time(e)


def alternate(graphs: dict, rounds: int = 15, calls: int = 1) -> dict:
    """The median ms a call of each graph of ``calls`` calls, their replays alternating
    round by round, so that the GPU's clock drifts alike for every one."""
    times = {name: [] for name in graphs}
    for _ in range(rounds):
        for name, g in graphs.items():
            times[name].append(replay_ms(g) / calls)
    return {name: statistics.median(t) for name, t in times.items()}


def _gpu_times(shape: str, ops: dict, calls: int = 20) -> None:
    """The GPU's time a call, without the host: ``calls`` calls captured in one CUDA graph
    (inside a capture the dispatcher launches its kernels there, no graph of its own), its
    replays timed by events."""
    for name, fn in ops.items():
        try:
            g = capture(fn, calls)
        except Exception as exc:  # the figures above stand; say why this one is missing
            print(f"{shape} {name}: GPU time not measured ({type(exc).__name__}: {exc})")
            continue
        g.replay()
        out = [replay_ms(g) * 1e3 / calls for _ in range(10)]
        print(f"{shape} {name}: GPU {statistics.median(out):.1f} us a call ({calls} calls a graph)")


def _measure(shape: str, ops: dict) -> None:
    for name, fn in ops.items():
        for _ in range(5):
            fn()
        enq, whole = _times(fn)
        print(f"{shape} {name}: host enqueue {enq:.1f} us, whole call {whole:.1f} us")
    for name, fn in ops.items():
        host, tail = _back_to_back(fn, 200)
        print(f"{shape} {name}: back to back {host:.1f} us a call (host), "
              f"{tail:.1f} us with the GPU's tail")
    for name, fn in ops.items():
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(50):
            fn()
        pr.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(30)
        print(f"== cProfile, 50 calls of {name}\n" + s.getvalue())

if __name__ == "__main__":
    main()
