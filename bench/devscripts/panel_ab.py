"""H39: the CUDA C panel's builds side by side through whole ``adaptqr.geqrf`` calls.

The panel source is compiled twice: as the library has it (the direct norm of H38/H39
where a column is in float32's middle range) and with ``DIRECT_NORM 0`` (every column step
by the scaled chain). For each case, each build factors the bench's input of that case
(eagerly, graphs off: its outputs must pass the half gate), then ``calls`` calls are
captured in one CUDA graph (inside a capture the dispatcher launches its kernels there).
The graphs' replays alternate between the builds, timed by events (median of 15, ms a
call). Run there: ``python3 bench/devscripts/panel_ab.py [--cases 640x512:dense:2:1029]
[--out results.json]``.
"""

from __future__ import annotations

import argparse
import json
import os

import torch

os.environ["ADAPTQR_GRAPHS"] = "0"  # the captures below are the only graphs

from hp_host import alternate, capture  # noqa: E402  (this script's folder is on the path when it is run)

import adaptqr  # noqa: E402
from adaptqr.paths.kernels import panel_cuda, panel_cuda_src  # noqa: E402
from adaptqr.testing import check_geqrf  # noqa: E402
from adaptqr.testing.generators import generate  # noqa: E402

#: Each build's prefix to the panel's source.
BUILDS = {"scaled": "#define DIRECT_NORM 0\n", "direct": ""}
CASES = ("640x512:dense:2:1029,640x512:rankdef:0:770003,640x512:clustered:0:770004,"
         "60x1024:dense:2:75342,60x1024:nearrank:0:770005,8x2048:dense:1:224466,"
         "2x4096:dense:1:32412,40x352:dense:1:123456")
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
        graphs = {}
        for build in BUILDS:
            _use(build, kept)
            H, tau = adaptqr.geqrf(A)
            r = check_geqrf(A, H, tau)
            assert r.passes_bar, f"{spec} {build}: {r.summary}"
            graphs[build] = capture(lambda: adaptqr.geqrf(A), calls)
        row = {"case": spec, **alternate(graphs, 15, calls)}
        rows.append(row)
        print(spec, "  ".join(f"{k} {row[k]:.4f} ms" for k in BUILDS),
              f"  ratio {row['direct'] / row['scaled']:.3f}", flush=True)
        del graphs
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
