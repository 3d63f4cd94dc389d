"""The CUDA C panel's builds side by side through whole ``adaptqr.geqrf`` calls (EXPERIMENTS.md
H39, H41, H42, H43).

Each build is the panel's source under a prefix of macro definitions (``--builds``,
``name=MACRO=VALUE,MACRO=VALUE;name=...``, the first the reference), whatever the library's
default. For each case, each build factors the bench's input of that case (eagerly, graphs
off: its outputs must pass the half gate; whether a build gave the reference's bits is
printed, which says little, since a whole call is not deterministic outside the
deterministic mode), then ``calls`` calls are captured in one CUDA graph (inside a capture
the dispatcher launches its kernels there). The graphs' replays alternate between the
builds, timed by events (median of 15, ms a call). Run there, e.g. for H42 (whose macro is
gone since; a new build takes its own):
``python3 bench/devscripts/panel_ab.py --builds "old=TW_ONCE=0;new=TW_ONCE=1"``.
"""

from __future__ import annotations

import argparse
import json
import os

import torch

os.environ["ADAPTQR_GRAPHS"] = "0"  # the captures below are the only graphs

from hp_host import alternate, capture  # noqa: E402  (this script's folder is on the path when it is run)
from panel_builds import use  # noqa: E402

import adaptqr  # noqa: E402
from adaptqr.testing import check_geqrf  # noqa: E402
from adaptqr.testing.generators import generate  # noqa: E402

CASES = ("640x512:dense:2:1029,640x512:rankdef:0:770003,640x512:clustered:0:770004,"
         "640x512:mixed:2:770001,60x1024:dense:2:75342,60x1024:nearrank:0:770005,"
         "640x512:dense:2:5151,60x1024:mixed:2:5152")


def _builds(spec: str) -> dict[str, str]:
    """``{name: prefix}`` from ``name=M=V,M=V;name=...`` (a build without macros: ``name=``)."""
    out = {}
    for part in spec.split(";"):
        name, _, defs = part.partition("=")
        pairs = [d.split("=") for d in defs.split(",") if d]
        out[name] = "".join(f"#define {k} {v}\n" for k, v in pairs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=CASES, help="BxN:case:cond:seed,...")
    ap.add_argument("--builds", required=True, help="name=MACRO=VALUE,...;name=...")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    builds, kept, rows = _builds(args.builds), {}, []
    ref = next(iter(builds))
    for spec in args.cases.split(","):
        shape, case, cond, seed = spec.split(":")
        b, n = (int(x) for x in shape.split("x"))
        A = generate(b, n, float(cond), int(seed), case)
        calls = max(1, min(10, (64 << 20) // (b * n * n * 4)))
        graphs, outs = {}, {}
        for build, prefix in builds.items():
            use(build, prefix, kept)
            H, tau = adaptqr.geqrf(A)
            r = check_geqrf(A, H, tau)
            assert r.passes_bar, f"{spec} {build}: {r.summary}"
            outs[build] = (H, tau)
            graphs[build] = capture(lambda: adaptqr.geqrf(A), calls)
        same = {name: all(torch.equal(x, y) for x, y in zip(outs[ref], outs[name])) for name in builds}
        row = {"case": spec, "same_bits": same, **alternate(graphs, 15, calls)}
        rows.append(row)
        print(spec, "  ".join(f"{name} {row[name]:.4f} ms ({row[name] / row[ref]:.3f})" for name in builds),
              f"  same bits {same}", flush=True)
        del graphs, outs
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
