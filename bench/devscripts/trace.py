"""Kernel timeline of one call (device script): where a large case's milliseconds go.

For each shape, one eager ``adaptqr.geqrf`` call (public) and one call of the Householder
path alone (input already in geqrf's layout) under torch.profiler, L2 flushed before each.
Printed per call: wall span (first kernel start to last kernel end), the sum of kernel
times, the GPU's idle time between kernels (host-bound stretches show up here), per-kernel
name totals and counts, and the per-panel split of panel / trailing time in eight slices
of the factorization. The ordered kernel list goes to ``$OUT/trace.json``.

``--cprofile``: also the host's profile of one public call per shape (after warm-up; the
GPU runs behind, so this is Python and launch time only), the 25 costliest entries.
``--cond C``: column scaling ``logspace(0, -C, n)`` (qr_v2's ``colscale``; 0: none).
``--case NAME [--seed S]``: the input from qr_v2's generator instead (``adaptqr.testing.generate``
with ``--cond``), as the bench draws it; ``--no-path``: the public call only.
``--fp16-compare``: the public call twice, with the FP16 route (issue 8) and with
``ADAPTQR_FP16=0``; ``--fp16-max-n N`` offers the route up to n = N (``classify.FP16_MAX_N``,
for the sizes it is not offered at yet).
``--knobs NAME:KNOB=VALUE[,KNOB=VALUE]`` (repeatable, as ``adaptqr bench``'s): also the
public call with these experiment knobs set, after the default one.
``--replay``: the public call is profiled as the bench times it, a CUDA graph replay (its
fourth call; eager for inputs above ``ADAPTQR_GRAPH_MAX_INPUT``). The profiler slows a
replay (2x4096: 16.4 ms against the bench's 10.3, run 1622) and reports a graph's kernels
on streams of its own, not the capture's, so the figures to read are the kernels' times
and the idle gaps (each summary ends with the largest three).

A shape ``BxMxN`` (wide, ``M < N``) gets the public call only. ``--op qr`` or
``--op householder_product``: the public call is that op's (``adaptqr.linalg.qr(A)``, or
``householder_product`` of ``A``'s factors), and the path alone is skipped.

Run there: ``python3 bench/devscripts/trace.py --shapes 2x4096,8x2048``.
"""

from __future__ import annotations

import argparse
import json
import os

import torch


def _profiled(fn, flush, warm: int):
    """The profile of one call of ``fn`` after ``warm`` calls and an L2 flush."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    flush.zero_()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return prof


def _kernels(fn, flush):
    evs = [e for e in _profiled(fn, flush, 1).events() if e.device_type.name == "CUDA"]
    rows = sorted(((e.time_range.start, e.time_range.end, e.name) for e in evs), key=lambda r: r[0])
    return [(s, t, name) for s, t, name in rows if t > s]


def _replay_kernels(fn, flush):
    """``[(start_us, end_us, name)]`` of one graph-replayed call of ``fn`` (calls 1-3 warm up
    and capture, as ``adaptqr bench``'s), from the profiler's exported trace."""
    import tempfile

    prof = _profiled(fn, flush, 3)
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        evs = json.load(open(f.name))["traceEvents"]
    rows = [(e["ts"], e["ts"] + e["dur"], e["name"])
            for e in evs if e.get("cat") == "kernel" and e.get("dur", 0) > 0]
    return sorted(rows)


def _summary(label, rows):
    span = rows[-1][1] - rows[0][0]
    busy = sum(t - s for s, t, _ in rows)
    idle, last = 0.0, rows[0][0]
    gaps, named = [], []
    for s, t, name in rows:
        if s > last:
            idle += s - last
            gaps.append(s - last)
            named.append((s - last, s - rows[0][0], name[:32]))
        last = max(last, t)
    per = {}
    for s, t, name in rows:
        c = per.setdefault(name[:48], [0.0, 0])
        c[0] += t - s
        c[1] += 1
    print(f"{label}: span {span / 1e3:.3f} ms, kernels {busy / 1e3:.3f} ms, idle {idle / 1e3:.3f} ms "
          f"({len(rows)} kernels, gaps > 5 us: {sum(g > 5 for g in gaps)})")
    for name, (us, cnt) in sorted(per.items(), key=lambda kv: -kv[1][0])[:10]:
        print(f"    {us / 1e3:8.3f} ms x{cnt:4d}  {name}")
    # Eight slices of the call in kernel order: panel vs the rest, idle.
    n = len(rows)
    for i in range(8):
        part = rows[i * n // 8:(i + 1) * n // 8]
        if not part:
            continue
        pan = sum(t - s for s, t, nm in part if "panel" in nm)
        rest = sum(t - s for s, t, nm in part if "panel" not in nm)
        sp = part[-1][1] - part[0][0]
        print(f"    slice {i}: span {sp / 1e3:7.3f} ms  panel {pan / 1e3:7.3f}  other {rest / 1e3:7.3f}  "
              f"idle {(sp - pan - rest) / 1e3:7.3f}")
    print("    largest idle gaps (us, at us, the kernel after): "
          + "; ".join(f"{g:.1f} at {at:.1f} {nm}" for g, at, nm in sorted(named, reverse=True)[:3]))
    return {"label": label, "span_us": span, "busy_us": busy, "idle_us": idle,
            "per_kernel": per, "kernels": [(round(s - rows[0][0], 2), round(t - s, 2), nm[:40]) for s, t, nm in rows]}


def _host_profile(fn):
    import cProfile
    import io
    import pstats
    import time

    fn()
    torch.cuda.synchronize()
    pr = cProfile.Profile()
    t = time.perf_counter()
    pr.enable()
    fn()
    pr.disable()
    host = time.perf_counter() - t
    torch.cuda.synchronize()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(25)
    print(f"host time of one call {host * 1e3:.3f} ms (profiled)")
    print(buf.getvalue()[-6000:])


def _public(op: str, A: torch.Tensor):
    """The public call of ``op`` on ``A`` (``householder_product``: of ``A``'s factors)."""
    import adaptqr

    if op == "qr":
        return lambda: adaptqr.linalg.qr(A)
    if op == "householder_product":
        h, tau = adaptqr.geqrf(A)
        return lambda: adaptqr.householder_product(h, tau)
    return lambda: adaptqr.geqrf(A)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="2x4096,8x2048")
    ap.add_argument("--cprofile", action="store_true")
    ap.add_argument("--cond", type=float, default=0.0)
    ap.add_argument("--fp16-compare", action="store_true")
    ap.add_argument("--fp16-max-n", type=int, default=0)
    ap.add_argument("--knobs", action="append")
    ap.add_argument("--replay", action="store_true")
    ap.add_argument("--op", choices=("geqrf", "qr", "householder_product"), default="geqrf")
    ap.add_argument("--case", default="")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-path", action="store_true")
    args = ap.parse_args()
    import importlib

    from adaptqr import config
    from adaptqr.cli import _parse_knob_variants
    from adaptqr.paths import householder

    if args.fp16_max_n:
        importlib.import_module("adaptqr.detectors.classify").FP16_MAX_N = args.fp16_max_n

    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    out = []
    for shape in args.shapes.split(","):
        dims = [int(x) for x in shape.split("x")]
        B, m, n = dims if len(dims) == 3 else (dims[0], dims[1], dims[1])
        if args.case:
            from adaptqr.testing import generate

            A = generate(B, n, args.cond, args.seed, args.case, "cuda")
        else:
            A = torch.randn(B, m, n, device="cuda")
            if args.cond:
                A *= torch.logspace(0, -args.cond, n, device="cuda")
        call = _public(args.op, A)
        if args.replay:
            out.append(_summary(f"{shape} replay", _replay_kernels(call, flush)))
            for name, knobs in _parse_knob_variants(args.knobs):
                with config.experiment(**knobs):
                    out.append(_summary(f"{shape} replay [{name}]", _replay_kernels(call, flush)))
            continue
        out.append(_summary(f"{shape} public", _kernels(call, flush)))
        for name, knobs in _parse_knob_variants(args.knobs):
            with config.experiment(**knobs):
                out.append(_summary(f"{shape} public [{name}]", _kernels(call, flush)))
        if args.fp16_compare:
            os.environ["ADAPTQR_FP16"] = "0"
            out.append(_summary(f"{shape} public fp32 route", _kernels(call, flush)))
            del os.environ["ADAPTQR_FP16"]
        if args.cprofile:
            _host_profile(call)
        if m != n or args.op != "geqrf" or args.no_path:
            continue  # the path alone is the square householder's
        H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
        tau = torch.empty(B, n, device="cuda")

        def path():
            H.copy_(A)
            householder.factor_householder(H, tau, None)
        out.append(_summary(f"{shape} path", _kernels(path, flush)))
    dest = os.environ.get("OUT", "/tmp")
    with open(os.path.join(dest, "trace.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
