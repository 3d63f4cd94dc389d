"""H42: the CUDA C panel's builds side by side through whole ``adaptqr.geqrf`` calls.

The panel source is compiled twice, whatever the library's default: ``TW_ONCE 1`` (the
update's multipliers ``tau * w`` formed once a step) and ``TW_ONCE 0`` (formed by every
thread, the build before H42). For each case, each build factors the bench's input of that
case (eagerly, graphs off: its outputs must pass the half gate; whether the two builds gave
the same bits is printed, which says little, since a whole call is not deterministic outside
the deterministic mode), then ``calls`` calls are captured in one CUDA graph (inside a
capture the dispatcher launches its kernels there). The graphs' replays alternate between
the builds, timed by events (median of 15, ms a call). Run there:
``python3 bench/devscripts/panel_ab.py [--cases 640x512:dense:2:1029] [--out results.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import torch

os.environ["ADAPTQR_GRAPHS"] = "0"  # the captures below are the only graphs

from hp_host import capture, replay_ms  # noqa: E402  (this script's folder is on the path when it is run)

import adaptqr  # noqa: E402
from adaptqr.paths.kernels import panel_cuda, panel_cuda_src  # noqa: E402
from adaptqr.testing import check_geqrf  # noqa: E402
from adaptqr.testing.generators import generate  # noqa: E402

#: Each build's prefix to the panel's source.
BUILDS = {"before": "#define TW_ONCE 0\n", "once": "#define TW_ONCE 1\n"}
CASES = ("640x512:dense:2:1029,640x512:rankdef:0:770003,640x512:clustered:0:770004,"
         "640x512:mixed:2:770001,60x1024:dense:2:75342,60x1024:nearrank:0:770005,"
         "640x512:dense:2:5151,60x1024:mixed:2:5152")
_RAW_KERNEL = panel_cuda._kernel.__wrapped__


def _use(build: str, kept: dict) -> None:
    """Route every panel build through ``build``'s source; its functions are kept in
    ``kept`` (a graph holding a kernel whose module was collected replays freed code)."""
    src = BUILDS[build] + panel_cuda_src.SRC

    def kernel(*args):
        key = (build,) + args
        if key not in kept:
            saved, panel_cuda.SRC = panel_cuda.SRC, src
            try:
                kept[key] = _RAW_KERNEL(*args)
            finally:
                panel_cuda.SRC = saved
        return kept[key]

    panel_cuda._kernel = kernel


def _alternate(graphs: dict, rounds: int, calls: int) -> dict:
    """The median ms a call of each graph, their replays alternating round by round."""
    times = {name: [] for name in graphs}
    for _ in range(rounds):
        for name, g in graphs.items():
            times[name].append(replay_ms(g) / calls)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=CASES, help="BxN:case:cond:seed,...")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    rows, kept = [], {}
    for spec in args.cases.split(","):
        shape, case, cond, seed = spec.split(":")
        b, n = (int(x) for x in shape.split("x"))
        A = generate(b, n, float(cond), int(seed), case)
        calls = max(1, min(10, (64 << 20) // (b * n * n * 4)))
        graphs, outs = {}, {}
        for build in BUILDS:
            _use(build, kept)
            H, tau = adaptqr.geqrf(A)
            r = check_geqrf(A, H, tau)
            assert r.passes_bar, f"{spec} {build}: {r.summary}"
            outs[build] = (H, tau)
            graphs[build] = capture(lambda: adaptqr.geqrf(A), calls)
        same = all(torch.equal(x, y) for x, y in zip(outs["before"], outs["once"]))
        row = {"case": spec, "same_bits": same, **_alternate(graphs, 15, calls)}
        rows.append(row)
        print(spec, "  ".join(f"{k} {row[k]:.4f} ms" for k in BUILDS),
              f"  ratio {row['once'] / row['before']:.3f}  same bits {same}", flush=True)
        del graphs, outs
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
