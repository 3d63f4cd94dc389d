"""Device script: householder_product variants side by side, with adaptqr.geqrf's time on the
same matrices (issue 25's bar: Q formation at most the factorization's time).

Variants: ``geqrf`` (adaptqr.geqrf on the generated matrices), ``public``
(``adaptqr.householder_product``, every route as the library picks it), ``torch_blocked``
(the batched-torch compact WY), ``public[NAME]`` the public call under the knobs of each
``--knobs NAME:KNOB=VALUE[,...]`` (set around its timing, not inside each timed call: run
0746 set them inside, ~50 us of host time a call, which voided its 20x32 figures), with
``--triton`` the Triton route forced (the default
tiles), and the tiles in ``--tiles``
(``bn:bm:resident:warps[:nb]``, comma separated). Each checked on every input (half-gate bar),
then timed by the bench's rule (L2 flushed, inputs rotated, device events).

Run there::

    python3 bench/devscripts/qform_bench.py --cases bench+optimizer --json $OUT/qform.json
Here (interpreter, tiny)::

    TRITON_INTERPRET=1 python3 bench/devscripts/qform_bench.py --cases cpu --device cpu
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import adaptqr
from adaptqr import config, qform
from adaptqr.cli import _parse_knob_variants
from adaptqr.bench import cases as bcases
from adaptqr.bench.ops import get_op
from adaptqr.bench.runner import make_inputs, run_variant
from adaptqr.bench.timing import StopRule


def _tiles(spec: str) -> dict:
    out = {}
    for item in filter(None, spec.split(",")):
        bn, bm, res, w, *nb = item.split(":")
        out[f"t{item}"] = qform.QFormTiles(int(bn), int(bm), res in ("1", "r", "True"), int(w),
                                           *(int(x) for x in nb))
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--cases", default="bench+optimizer")
    p.add_argument("--tiles", default="")
    p.add_argument("--device", default="cuda")
    p.add_argument("--budget", type=float, default=0.6, help="seconds of repeats a variant")
    p.add_argument("--no-blocked", action="store_true")
    p.add_argument("--triton", action="store_true", help="also the Triton route forced")
    p.add_argument("--knobs", action="append",
                   help="NAME:KNOB=VALUE[,...]: also the public call under these knobs")
    p.add_argument("--json")
    a = p.parse_args()
    dev = torch.device(a.device)
    rule = StopRule(max_repeats=40, budget_s=a.budget, min_repeats=3)
    hp, geq = get_op("householder_product"), get_op("geqrf")
    tiles = _tiles(a.tiles)
    knob_variants = _parse_knob_variants(a.knobs)
    rows = []
    for case in bcases.resolve(a.cases):
        k = bcases.inputs_per_case(case["batch"], case["n"], case.get("m"))
        mats = make_inputs(case, k, dev)
        fac = hp.prepare(mats)
        res = {"geqrf": run_variant(adaptqr.geqrf, None, mats, rule, geq)}
        variants = {"public": lambda x: adaptqr.householder_product(x[0], x[1])}
        if a.triton:
            variants["triton"] = lambda x: qform.triton_householder_product(x[0], x[1])
        if not a.no_blocked:
            variants["torch_blocked"] = lambda x: qform.blocked_householder_product(x[0], x[1])
        for name, t in tiles.items():
            m = fac[0][0].shape[-2]
            if t.resident and t.bm < m:
                continue
            variants[name] = lambda x, t=t: qform.triton_householder_product(x[0], x[1], t)
        for name, fn in variants.items():
            res[name] = run_variant(fn, None, fac, rule, hp)
        for name, knobs in knob_variants:  # set outside the timed calls
            with config.experiment(**knobs):
                res[f"public[{name}]"] = run_variant(variants["public"], None, fac, rule, hp)
        line = {name: (round(r["median_ms"], 4) if r["status"] == "ok" else r["status"])
                for name, r in res.items()}
        orth = {name: r["worst_orth"] for name, r in res.items()}
        print(bcases.case_name(case), "default", qform.qform_tiles(fac[0][0].shape[0], *fac[0][0].shape[-2:], qform._sm_count(dev)), line,
              "orth", {k_: (round(v, 3) if v is not None else None) for k_, v in orth.items()},
              flush=True)
        rows.append({"case": bcases.case_key(case), "name": bcases.case_name(case),
                     "ms": line, "orth": orth, "factor": {n_: r["worst_factor"] for n_, r in res.items()}})
        del mats, fac
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"when": time.strftime("%Y-%m-%d %H:%M"), "device": str(dev),
                       "name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
