"""Session 7, issue 8 (EXPERIMENTS.md N3): the FP16-resident trailing matrix on the device.

1. ``calib``: every matrix of each case factored with the FP16 route forced (scales for all
   matrices with ``n_active == n_nonzero == n``, the budget ignored), its scaled factor
   residual against the estimate of :func:`adaptqr.detectors.classify.fp16_scales` without
   its coefficient: the ratio calibrates ``FP16_EST_COEF``. Also the worst residual among
   the matrices the budget would route, and the FP32 route's worst on the same input.
2. ``time``: path alone in a CUDA graph (input copied into geqrf's layout inside the
   timing, L2 flushed, median of 7): the FP32 route (schedule ``fp16=False``) against the
   routed FP16 one, with the routed count and the worst residual over the whole batch.

Run there: ``python3 bench/devscripts/fp16_diag.py [--sections calib,time] [--calib-cases
2:4096:1:dense:5,...]`` (JSON to ``$OUT/fp16_diag.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import json
import math
import os

import torch

_here = os.path.dirname(__file__)
_spec = importlib.util.spec_from_file_location("devmicro", os.path.join(_here, "micro.py"))
_micro = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_micro)


class Info:
    def __init__(self, features):
        self.features = features


CALIB = [  # (batch, n, cond, case, seed)
    (640, 512, 2, "dense", 1029), (64, 512, 0, "dense", 11), (64, 512, 1, "dense", 12),
    (64, 512, 4, "dense", 13), (16, 768, 2, "dense", 14), (60, 1024, 2, "dense", 75342),
    (16, 1024, 1, "dense", 15), (16, 1024, 0, "dense", 16), (4, 2048, 1, "dense", 17),
    (640, 512, 2, "mixed", 770001), (60, 1024, 2, "mixed", 770002),
    (32, 512, 0, "rowscale", 18), (32, 512, 0, "band", 19), (32, 512, 0, "clustered", 20),
    (32, 512, 0, "nearcollinear", 21), (32, 512, 4, "rowscale", 22),
]
#: Schedules compared by ``time`` (names: route, then the knob; EXPERIMENTS.md N3, N4, N9;
#: the row-chunk, warp and unfitted-tile variants of those runs were removed with their
#: Schedule fields in session 13, EXPERIMENTS.md Q3).
VARIANTS = {"fp32": {"fp16": False}, "fp16": {},
            "fp32_bn128": {"fp16": False, "bn": 128},
            "fp16_s4": {"fp16_stages": 4}, "fp16_s3": {"fp16_stages": 3},
            "fp16_bn32": {"fp16_bn": 32}, "fp16_bn64": {"fp16_bn": 64},
            # N9: two panels a pass (fp16_group 2, the default) against one
            "fp16_g1": {"fp16_group": 1},
            "fp32_g2": {"fp16": False, "group": 2}}
TIME = [(640, 512, 2, "dense", 1029), (60, 1024, 2, "dense", 75342), (640, 512, 2, "mixed", 770001),
        (8, 2048, 1, "dense", 224466)]


def _norms(A):
    a = A.double()
    return a.abs().sum(1).float(), a.norm(dim=1).float()


def _raw_est(A):
    """The estimate of classify.fp16_scales without FP16_EST_COEF, per matrix."""
    C = importlib.import_module("adaptqr.detectors.classify")
    B, m, n = A.shape
    n1, n2 = _norms(A)
    j = torch.arange(n, dtype=torch.float32, device=A.device)
    w = (torch.sqrt(j / C.FP16_EST_NB + 1.0) * n2).amax(-1)
    return w * 4096.0 * math.sqrt(m) / n / n1.amax(-1)


def _factor(A, feats, sched=None):
    from adaptqr.paths.householder import factor_householder
    from adaptqr.layout import load_column_major

    B, m, n = A.shape
    H = torch.empty_strided((B, m, n), (m * n, 1, m), device=A.device)
    tau = torch.empty(B, n, device=A.device)
    load_column_major(A, H)
    factor_householder(H, tau, Info(feats), schedule=sched)
    return H, tau


def calib(res):
    from adaptqr.detectors import route
    from adaptqr.paths import schedules
    from adaptqr.testing import check_geqrf
    from adaptqr.testing.generators import generate

    C = importlib.import_module("adaptqr.detectors.classify")  # the package exports classify()
    out = res.setdefault("calib", [])
    for B, n, cond, case, seed in CALIB:
        A = generate(B, n, cond, seed, case)
        H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
        routes, f = route(H, src=A)
        n1, n2 = _norms(A)
        saved = C.FP16_BUDGET
        C.FP16_BUDGET = float("inf")
        forced = C.fp16_scales(n1, n2, routes, f["n_active"], f["n_nonzero"], n)
        C.FP16_BUDGET = saved
        raw = _raw_est(A)
        f32 = check_geqrf(A, *_factor(A, f, dataclasses.replace(schedules.schedule_for(n, n), fp16=False)))
        r16 = check_geqrf(A, *_factor(A, dict(f, fp16_scale=forced)))
        on = forced > 0
        # No feature where the route is not offered (n above classify.FP16_MAX_N): none routed.
        routed = f["fp16_scale"] > 0 if "fp16_scale" in f else torch.zeros_like(on)
        ratio = (r16.factor.float().cuda() / raw)[on]
        row = {"case": f"{B}x{n} {case} cond={cond}", "forced": int(on.sum()),
               "routed": int(routed.sum()), "fp32_worst": f32.worst_factor,
               "f16_worst": r16.worst_factor, "f16_orth": r16.worst_orth,
               "raw_est_max": float(raw[on].max()) if on.any() else None,
               "raw_est_min": float(raw[on].min()) if on.any() else None,
               "ratio_max": float(ratio.max()) if on.any() else None,
               "ratio_median": float(ratio.median()) if on.any() else None,
               "routed_worst": float(r16.factor.float().cuda()[routed].max()) if routed.any() else None}
        out.append(row)
        print("calib", json.dumps(row))


def time_section(res):
    from adaptqr.detectors import route
    from adaptqr.paths import schedules
    from adaptqr.testing import check_geqrf
    from adaptqr.testing.generators import generate

    out = res.setdefault("time", [])
    for B, n, cond, case, seed in TIME:
        A = generate(B, n, cond, seed, case)
        H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
        _, f = route(H, src=A)
        base = schedules.schedule_for(n, n)
        row = {"case": f"{B}x{n} {case}", "routed": int((f["fp16_scale"] > 0).sum())}
        for name, kw in VARIANTS.items():
            sched = dataclasses.replace(base, **kw)
            Hs = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
            tau = torch.empty(B, n, device="cuda")

            def call(sched=sched, Hs=Hs, tau=tau):
                from adaptqr.paths.householder import factor_householder
                from adaptqr.layout import load_column_major

                load_column_major(A, Hs)
                factor_householder(Hs, tau, Info(f), schedule=sched)

            row[f"{name}_ms"] = _micro.gpu_ms(call, reps=7, graph=True)
            call()
            r = check_geqrf(A, Hs, tau)
            row[f"{name}_factor"], row[f"{name}_orth"] = r.worst_factor, r.worst_orth
        row["speedup"] = row["fp32_ms"] / row["fp16_ms"]
        if "fp32_bn128_ms" in row and "fp16_1l_bn128_ms" in row:
            row["speedup_bn128"] = row["fp32_bn128_ms"] / row["fp16_1l_bn128_ms"]
        out.append(row)
        print("time", json.dumps(row))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sections", default="time,calib")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--time-cases", type=int, default=len(TIME), help="first N of TIME")
    ap.add_argument("--calib-cases", default="",
                    help="B:n:cond:case:seed,... in place of CALIB (e.g. 2:4096:1:dense:5)")
    args = ap.parse_args()
    if args.calib_cases:
        CALIB[:] = [(int(b), int(n), float(c), case, int(seed)) for b, n, c, case, seed in
                    (spec.split(":") for spec in args.calib_cases.split(","))]
    for v in set(VARIANTS) - set(args.variants.split(",")):
        del VARIANTS[v]
    del TIME[args.time_cases:]
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "git": os.environ.get("ADAPTQR_COMMIT")}
    path = os.path.join(os.environ.get("OUT", "/tmp"), "fp16_diag.json")
    for sec in args.sections.split(","):
        {"calib": calib, "time": time_section}[sec](res)
        with open(path, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
