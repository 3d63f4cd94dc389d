"""Issue 26 (EXPERIMENTS K4): where a compiled small call's time goes, on the GPU.

For one shape (default 20x32, k rotating inputs as the bench uses), each variant is timed as
host time a call (perf_counter around ``fn(x)``, GPU idle before) and whole-call time (until
synchronized), medians of 200 calls; then the library's graph-cache counters of those calls,
the CUDA kernels a call launches (torch.profiler), the top CPU ops by self time, and a
cProfile of 50 calls. Variants: ``eager`` (adaptqr.geqrf), ``op`` (torch.ops.adaptqr.geqrf
called directly), ``compile:default``, ``compile:reduce-overhead``, ``torch`` (torch.geqrf)
and ``compile:torch`` (torch.geqrf compiled, the floor of a compiled call).

Run there: ``python3 bench/devscripts/compile_diag.py [--shape 20x32] [--variants ...]``.
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
from adaptqr import graphs
from adaptqr.testing.generators import generate


def _variants():
    def comp(f, mode):
        kw = {} if mode == "default" else {"mode": mode}
        return torch.compile(lambda x: f(x), fullgraph=True, **kw)

    return {
        "eager": adaptqr.geqrf,
        "op": torch.ops.adaptqr.geqrf,
        "compile:default": comp(adaptqr.geqrf, "default"),
        "compile:reduce-overhead": comp(adaptqr.geqrf, "reduce-overhead"),
        "torch": torch.geqrf,
        "compile:torch": comp(torch.geqrf, "default"),
    }


def _time(fn, xs, calls):
    host, whole = [], []
    for i in range(calls):
        x = xs[i % len(xs)]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(x)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) * 1e6)
        whole.append((t2 - t0) * 1e6)
    return statistics.median(host), statistics.median(whole)


def _profile(fn, xs, calls=20):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            fn(xs[i % len(xs)])
        torch.cuda.synchronize()
    cuda = [e for e in prof.events() if e.device_type.name == "CUDA"]
    names = {}
    for e in cuda:
        names[e.name[:60]] = names.get(e.name[:60], 0) + 1
    print(f"    CUDA kernels a call: {len(cuda) / calls:.1f}")
    for nm, c in sorted(names.items(), key=lambda kv: -kv[1])[:12]:
        print(f"      {c / calls:5.1f}  {nm}")
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18)
    print("\n".join("    " + ln for ln in table.splitlines()))


def _cprofile(fn, xs, calls=50):
    pr = cProfile.Profile()
    pr.enable()
    for i in range(calls):
        fn(xs[i % len(xs)])
    pr.disable()
    torch.cuda.synchronize()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(22)
    print("\n".join("    " + ln for ln in buf.getvalue().splitlines()[-34:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="20x32")
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--variants", default="")
    ap.add_argument("--no-cprofile", action="store_true")
    args = ap.parse_args()
    B, n = (int(v) for v in args.shape.split("x"))
    xs = [generate(B, n, 1, 1000 + 42 * i).cuda() for i in range(args.k)]
    vs = _variants()
    pick = [v for v in args.variants.split(",") if v] or list(vs)
    for name in pick:
        fn = vs[name]
        for i in range(10):  # compile, capture, warm up
            fn(xs[i % len(xs)])
        torch.cuda.synchronize()
        graphs.reset_stats()
        h, w = _time(fn, xs, 200)
        st = graphs.stats()
        print(f"== {name}: host {h:.1f} us, whole call {w:.1f} us; graph cache hits {st['hits']} "
              f"misses {st['misses']} eager {st['eager_reasons']}")
        _profile(fn, xs)
        if not args.no_cprofile and (name.startswith("compile") or name == "eager"):
            _cprofile(fn, xs)


if __name__ == "__main__":
    main()
