"""Device micro-measurements behind EXPERIMENTS.md entries (not a benchmark: ``adaptqr bench`` is).

Sections (``--sections``, comma-separated; JSON to ``$OUT/micro.json``):

* ``host``: host time a call of ``adaptqr.geqrf`` on the launch-bound shapes, with graphs
  and without (no synchronization inside the loop), and a cProfile of the graph replay path.
* ``probe``: the route probe's column kernel against the full probe's column kernel
  (``ROWS=False``), CUDA-graph replay, L2 flushed.
* ``tbuild``: one register-panel launch (640x512, first panel) and one row-split panel launch
  (2x4096, first panel) with and without the compact-WY ``T`` (what building T costs).
* ``load``: the input's load into geqrf's layout (``copy_``, Triton transpose, fused into
  the route probe) on the large shapes, ms.
* ``kernels``: device time per kernel name of ``adaptqr.geqrf`` on ``KERNEL_CASES`` with the detectors on and off (``ADAPTQR_DETECT``), from
  torch.profiler over 3 calls, L2 flushed: where the probe's cost goes (issue 6's 3 %).
* ``chol``: library building blocks of a Cholesky-QR for n = 2048 / 4096 (Gram, Cholesky,
  triangular solve, unpivoted LU), to bound what issue 9's path could reach.

Run there: ``python3 bench/devscripts/micro.py --sections host,probe,chol``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import time

import torch

RES: dict = {}


def gpu_ms(fn, reps=5, graph=False, warm=1):
    """Median ms of fn() (L2 flushed before each) after ``warm`` untimed calls, optionally
    as a CUDA-graph replay."""
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    if graph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        run = g.replay
    else:
        run = fn
    out = []
    for _ in range(reps):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        run()
        e.record()
        torch.cuda.synchronize()
        out.append(s.elapsed_time(e))
    return statistics.median(out)


def host(calls=300):
    import adaptqr

    rows = []
    for B, n in [(20, 32), (40, 176)]:
        xs = [torch.randn(B, n, n, device="cuda") for _ in range(8)]
        for mode in ("graph", "eager"):
            os.environ["ADAPTQR_GRAPHS"] = "1" if mode == "graph" else "0"
            for i in range(6):
                adaptqr.geqrf(xs[i % 8])
            torch.cuda.synchronize()
            t = time.perf_counter()
            for i in range(calls):
                adaptqr.geqrf(xs[i % 8])
            host_us = (time.perf_counter() - t) / calls * 1e6
            torch.cuda.synchronize()
            wall_us = (time.perf_counter() - t) / calls * 1e6
            rows.append({"shape": f"{B}x{n}", "mode": mode, "host_us": host_us, "wall_us": wall_us})
            print(f"host {B}x{n} {mode:5s} host {host_us:7.1f} us/call  wall {wall_us:7.1f} us/call")
            if mode == "graph":
                pr = cProfile.Profile()
                pr.enable()
                for i in range(calls):
                    adaptqr.geqrf(xs[i % 8])
                pr.disable()
                torch.cuda.synchronize()
                buf = io.StringIO()
                pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(22)
                print(buf.getvalue()[-4000:])
    os.environ.pop("ADAPTQR_GRAPHS", None)
    # What the pieces cost on the host, for scale.
    a = torch.randn(20, 32, 32, device="cuda")
    pieces = {
        "empty_strided": lambda: torch.empty_strided((20, 32, 32), (1024, 1, 32), device="cuda"),
        "copy_": lambda: a.copy_(a),
        "clone": lambda: a.clone(),
        "is_current_stream_capturing": torch.cuda.is_current_stream_capturing,
    }
    for name, f in pieces.items():
        f()
        t = time.perf_counter()
        for _ in range(calls):
            f()
        us = (time.perf_counter() - t) / calls * 1e6
        torch.cuda.synchronize()
        rows.append({"piece": name, "host_us": us})
        print(f"piece {name:28s} {us:6.2f} us")
    RES["host"] = rows


def probe():
    import triton

    import importlib
    route_mod = importlib.import_module("adaptqr.detectors.route")
    from adaptqr.detectors.kernels.probe_kernel import probe_columns_kernel
    from adaptqr.detectors.kernels.route_kernel import route_columns_kernel
    from adaptqr.testing import bench_cases, case_name, make_inputs

    rows = []
    for c in bench_cases():
        if c["batch"] * c["n"] * c["n"] < 8 * 2048 * 2048:
            continue
        A = make_inputs(c, k=1)[0]
        H = A.mT.contiguous().mT
        B, m, n = H.shape
        f = torch.empty((5, B, n), dtype=torch.float32, device="cuda")
        li = torch.empty((B, n), dtype=torch.int32, device="cuda")
        fl = torch.empty((2, B, n), dtype=torch.int8, device="cuda")
        bn = route_mod.BLOCK_N if B * triton.cdiv(n, route_mod.BLOCK_N) >= route_mod.MIN_PROGRAMS \
            else route_mod.BLOCK_N_SMALL
        T = triton.cdiv(n, bn)
        old = lambda: probe_columns_kernel[(B, T)](H, m, n, *H.stride(), f[0], f[1], f[2], li, fl[0],
                                                   f[3], f[4], T, BLOCK_N=bn, BLOCK_M=128, ROWS=False)
        row = {"case": case_name(c), "old_cols_ms": gpu_ms(old, graph=True)}
        for bm, w in [(32, 4), (64, 8), (64, 4)]:
            new = lambda: route_columns_kernel[(B, T)](H, m, n, H.stride(0), H.stride(2), f[0], f[1],
                                                       fl[0], fl[1], H, 0, 0, 0, BLOCK_N=bn, BLOCK_M=bm,
                                                       COPY=False, num_warps=w)
            row[f"new_cols_bm{bm}_w{w}_ms"] = gpu_ms(new, graph=True)
        row["route_ms"] = gpu_ms(lambda: route_mod.route(H), graph=True)
        row["floor_ms"] = A.numel() * 4 / 4.2e9
        rows.append(row)
        print("probe", row)
        del A, H
    RES["probe"] = rows


def tbuild():
    import triton

    from adaptqr.paths import householder as hh
    from adaptqr.paths.kernels.panel import panel_reg_kernel, panel_split_kernel

    rows = []
    A = torch.randn(640, 512, 512, device="cuda")
    Ht = A.mT.contiguous()  # (B, n, m): the kernels' column-major view
    tau = torch.empty(640, 512, device="cuda")
    TW = torch.empty(640, 16, 32, 32, device="cuda")
    for wt in (True, False):
        f = lambda: panel_reg_kernel[(640,)](Ht, tau, TW, tau, 0, 512, 512, 32, 0, 16, NB=32, MB=512,
                                             HAS_NA=False, WRITE_T=wt, num_warps=8)
        rows.append({"kernel": "reg 640x512 k=0", "write_t": wt, "ms": gpu_ms(f, graph=True)})
    # The separate T kernel (schedule t_kernel, H9) on the same panel, alone.
    from adaptqr.paths import schedules
    from adaptqr.paths.kernels.panel import panel_t_kernel

    f = lambda: panel_t_kernel[(640,)](Ht, tau, TW, tau, 0, 512, 512, 32, 0, 16, NB=32,
                                       CH=schedules.T_KERNEL_ROWS, HAS_NA=False,
                                       num_warps=schedules.T_KERNEL_WARPS)
    rows.append({"kernel": "t_kernel 640x512 k=0", "write_t": True, "ms": gpu_ms(f, graph=True)})
    B, n = 2, 4096
    A = torch.randn(B, n, n, device="cuda")
    Ht = A.mT.contiguous()
    tau = torch.empty(B, n, device="cuda")
    TW = torch.empty(B, n // 32, 32, 32, device="cuda")
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    rb, p = hh.split_rows(B, n, 32, sm)
    pmax = triton.next_power_of_2(p)
    WS = torch.empty(B, 3, pmax, 6 * 32, device="cuda")  # SPLIT_WSTR_NB * NB
    SP = torch.empty(B, pmax, 32, 32, device="cuda")
    for wt in (True, False):
        CNT = torch.zeros(B, 3 * n, dtype=torch.int32, device="cuda")

        def f(wt=wt, CNT=CNT):
            CNT.zero_()
            panel_split_kernel[(B, p)](Ht, tau, TW, tau, WS, SP, CNT, 0, n, n, 32, 0, n // 32, p, NB=32,
                                       RB=rb, PMAX=pmax, HAS_NA=False, WRITE_T=wt, num_warps=hh._warps(32 * rb))
        rows.append({"kernel": f"split 2x4096 k=0 P={p}", "write_t": wt, "ms": gpu_ms(f, graph=True)})
    for r in rows:
        print("tbuild", r)
    RES["tbuild"] = rows


def chol():
    rows = []
    for n in (2048, 4096):
        A = torch.randn(n, n, device="cuda")
        A64 = A.double()
        G64 = A64.mT @ A64
        R64 = torch.linalg.cholesky(G64, upper=True)
        G = G64.float()
        R = R64.float()
        torch.backends.cuda.matmul.allow_tf32 = False
        t = {
            "gram_fp32": gpu_ms(lambda: A.mT @ A),
            "gram_fp64": gpu_ms(lambda: A64.mT @ A64),
            "to_fp64": gpu_ms(lambda: A.double()),
            "chol_fp64": gpu_ms(lambda: torch.linalg.cholesky(G64, upper=True)),
            "chol_fp32": gpu_ms(lambda: torch.linalg.cholesky(G + n * torch.eye(n, device="cuda"), upper=True)),
            "trsm_fp32": gpu_ms(lambda: torch.linalg.solve_triangular(R, A, upper=True, left=False)),
            "trsm_fp64": gpu_ms(lambda: torch.linalg.solve_triangular(R64, A64, upper=True, left=False)),
            "lu_nopiv_fp32": gpu_ms(lambda: torch.linalg.lu_factor(A + n * torch.eye(n, device="cuda"), pivot=False)),
            "trmm_fp32": gpu_ms(lambda: R @ R),
            "geqrf_fp32": gpu_ms(lambda: torch.geqrf(A), reps=3),
        }
        torch.backends.cuda.matmul.allow_tf32 = True
        t["gram_tf32"] = gpu_ms(lambda: A.mT @ A)
        torch.backends.cuda.matmul.allow_tf32 = False
        rows.append({"n": n, **t})
        print("chol", n, {k: round(v, 3) for k, v in t.items()})
    RES["chol"] = rows


#: Cases of the ``kernels`` section: (batch, n, profile).
KERNEL_CASES = [(640, 512, "dense"), (60, 1024, "dense"), (640, 512, "clustered")]


def load():
    """The input's load into geqrf's layout, per large shape: ``Tensor.copy_``, the Triton
    transpose (X1), the route probe alone, and the route probe loading the input (X2)."""
    from adaptqr.detectors import route
    from adaptqr.layout import load_column_major

    rows = []
    for B, n in [(640, 512), (60, 1024), (2, 4096)]:
        A = torch.randn(B, n, n, device="cuda")
        a = torch.empty(B, n, n, device="cuda").mT
        H = a.as_strided((B, n, n), (n * n, 1, n))
        load_column_major(A, a)
        t = {"copy_": gpu_ms(lambda: a.copy_(A), reps=10),
             "triton_copy": gpu_ms(lambda: load_column_major(A, a), reps=10),
             "route": gpu_ms(lambda: route(H), reps=10),
             "route_src": gpu_ms(lambda: route(H, src=A), reps=10)}
        rows.append({"shape": f"{B}x{n}", **t})
        print("load", f"{B}x{n}", {k: round(v, 4) for k, v in t.items()})
    RES["load"] = rows


def kernels(calls=3):
    import adaptqr
    from adaptqr.testing import make_inputs
    from torch.profiler import ProfilerActivity, profile

    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for B, n, case in KERNEL_CASES:
        A = make_inputs({"batch": B, "n": n, "cond": 2 if case == "dense" else 0,
                         "seed": 4242, "case": case}, k=1)[0]
        case = f"{B}x{n} {case}"
        for detect in ("1", "0"):
            os.environ["ADAPTQR_DETECT"] = detect
            adaptqr.geqrf(A)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(calls):
                    flush.zero_()
                    adaptqr.geqrf(A)
                torch.cuda.synchronize()
            per = {}
            for ev in prof.key_averages():
                if ev.device_type.name == "CUDA" or getattr(ev, "device_time_total", 0):
                    us = getattr(ev, "device_time_total", None) or ev.cuda_time_total
                    if us and "zero" not in ev.key and "fill" not in ev.key.lower():
                        per[ev.key[:60]] = (us / calls, ev.count // calls)
            total = sum(v[0] for v in per.values())
            top = sorted(per.items(), key=lambda kv: -kv[1][0])[:14]
            print(f"kernels {case:9s} detect={detect} total {total / 1e3:.3f} ms a call")
            for k, (us, cnt) in top:
                print(f"    {us / 1e3:8.3f} ms  x{cnt:4d}  {k}")
            rows.append({"case": case, "detect": detect, "total_ms": total / 1e3,
                         "kernels": {k: [us / 1e3, cnt] for k, (us, cnt) in per.items()}})
    os.environ.pop("ADAPTQR_DETECT", None)
    RES["kernels"] = rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sections", default="host,probe,chol")
    args = ap.parse_args()
    RES["device"] = torch.cuda.get_device_name()
    for name in args.sections.split(","):
        t = time.time()
        try:
            globals()[name]()
        except Exception as e:  # one broken section must not cost the others
            print("section", name, "ERROR", repr(e)[:400])
        print(f"section {name} {time.time() - t:.1f}s")
        with open(os.path.join(os.environ.get("OUT", "/tmp"), "micro.json"), "w") as f:
            json.dump(RES, f, indent=1)


if __name__ == "__main__":
    main()


def dump(name, rows, **extra):
    """``$OUT/<name>.json``: device, torch, commit (ADAPTQR_COMMIT), ``rows`` and ``extra``."""
    with open(os.path.join(os.environ.get("OUT", "/tmp"), f"{name}.json"), "w") as fh:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "git": os.environ.get("ADAPTQR_COMMIT"), "rows": rows, **extra}, fh, indent=1)
