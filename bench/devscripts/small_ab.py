"""H38: the small-QR kernel's builds side by side on the GPU, by their GPU time alone.

For each shape, each build of ``geqrf_small_cuda.SRC`` (the path's, and the A/B variants
named by their macros) factors the same input: its outputs must pass the half gate
(``check_geqrf``), then 20 launches are captured in one CUDA graph and its replays timed by
events (median of 20 replays, microseconds a launch). Builds alternate replay by replay, so
that the GPU's clock drifts alike for both. Run there:
``python3 bench/devscripts/small_ab.py [--shapes 20x32,640x32] [--out results.json]``.
"""

from __future__ import annotations

import argparse
import json

import torch
from hp_host import alternate, capture  # (this script's folder is on the path when it is run)

from adaptqr.paths.kernels import geqrf_small_cuda
from adaptqr.paths.kernels.panel_cuda import compile_function, run_on_torch_stream
from adaptqr.testing import check_geqrf

#: The builds: the path's, and each variant's extra macros.
BUILDS = {"default": ("-DDIRECT_NORM=0",), "direct_norm": ()}  # "default": the scaled chain
SHAPES = "20x32,32x32,64x16,40x48,40x64,640x32"


def _launcher(build: tuple, A: torch.Tensor, H: torch.Tensor, tau: torch.Tensor):
    mr, nw, args = geqrf_small_cuda.launch_args(A, H, tau)
    dev = A.device.index
    kern = compile_function(geqrf_small_cuda.SRC, "geqrf_small", dev, f"-DMR={mr}", *build)
    return lambda: run_on_torch_stream(kern, (A.shape[0],), (32 * nw,), args, A.device, dev)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=SHAPES, help="BxN,... (square matrices)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    calls, rows = 20, []
    for shape in args.shapes.split(","):
        b, n = (int(x) for x in shape.split("x"))
        A = torch.randn(b, n, n, device="cuda", generator=torch.Generator("cuda").manual_seed(b * n))
        # The launchers (their cupy modules) live as long as the graphs: a module collected
        # while a graph holds its kernel unloads the code under the replay (a segfault,
        # runs 1212 and 1217).
        # Their outputs too: a launch holds raw pointers, so a graph of a build whose outputs
        # were freed writes over other tensors' memory (the suspect of run 1410's illegal
        # address at 40x64).
        graphs, launchers = {}, []
        for name, build in BUILDS.items():
            H = torch.empty_strided((b, n, n), (n * n, 1, n), device="cuda")
            tau = torch.empty(b, n, device="cuda")
            fn = _launcher(build, A, H, tau)
            launchers.append((fn, H, tau))
            fn()
            r = check_geqrf(A, H, tau)
            assert r.passes_bar, f"{shape} {name}: {r.summary}"
            graphs[name] = capture(fn, calls)
        row = {"shape": shape, **{name: ms * 1e3 for name, ms in alternate(graphs, 20, calls).items()}}
        rows.append(row)
        print(shape, "  ".join(f"{k} {v:.2f} us" for k, v in row.items() if k != "shape"),
              f"  ratio {row['direct_norm'] / row['default']:.3f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
