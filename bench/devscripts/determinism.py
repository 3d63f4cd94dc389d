"""Whether ``adaptqr.geqrf`` gives the same bits on the same input call after call (device
script, EXPERIMENTS.md N22): a batch of both routes (FP16-routed dense, one FP32-routed
rankdef) at tile-update shapes, factored five times a setting; per setting, the matrices
whose H or tau differ from the first call's, and by how much. Settings: the default,
look-ahead off, graphs off, FP16 route off.

Run there: ``python3 bench/devscripts/determinism.py [bisect]`` (``bisect``: 65x512 on the
FP32 route, graphs off, under knobs that turn parts off, and a call after another input).
"""

import os

import torch

import adaptqr
from adaptqr import config
from adaptqr.testing import generate


def _differs(A, calls=5):
    H0, t0 = adaptqr.geqrf(A)
    bad = {}
    for _ in range(calls - 1):
        H, t = adaptqr.geqrf(A)
        d = ((H - H0).abs().amax(dim=(-2, -1)) / H0.abs().amax(dim=(-2, -1))).cpu()
        dt = (t - t0).abs().amax(dim=-1).cpu()
        for b in torch.nonzero((d > 0) | (dt > 0)).flatten().tolist():
            bad[b] = max(bad.get(b, 0.0), float(d[b]), float(dt[b]))
    return bad


def main():
    import sys

    if len(sys.argv) > 1 and sys.argv[1] == "blocking":
        # Under CUDA_LAUNCH_BLOCKING=1 (set by the caller) every launch finishes before the
        # next starts: no two kernels overlap, whatever their streams.
        os.environ["ADAPTQR_FP16"] = "0"
        os.environ["ADAPTQR_GRAPHS"] = "0"
        A = generate(65, 512, 2, 586, "dense")
        H1, t1 = adaptqr.geqrf(A)
        H2, t2 = adaptqr.geqrf(A)
        print("blocking launches, look-ahead on: matrices differing call 1-2",
              int(((H1 != H2).flatten(1).any(1) | (t1 != t2).any(1)).sum()))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "bisect":
        # Which part: 65x512 on the FP32 route under each knob, and whether a call after
        # another input (stale buffers) differs more than two calls in a row.
        os.environ["ADAPTQR_FP16"] = "0"
        os.environ["ADAPTQR_GRAPHS"] = "0"
        A = generate(65, 512, 2, 586, "dense")
        other = generate(65, 512, 0, 587, "rankdef")
        for name, knobs in (("default", {}), ("cuda_panel 0", {"cuda_panel": 0}),
                            ("fuse 0", {"cuda_panel_fuse": 0}), ("lookahead 0", {"lookahead": 0}),
                            ("both 0", {"cuda_panel": 0, "lookahead": 0})):
            with config.experiment(**knobs):
                H1, t1 = adaptqr.geqrf(A)
                H2, t2 = adaptqr.geqrf(A)
                adaptqr.geqrf(other)
                H3, t3 = adaptqr.geqrf(A)
            same12 = int(((H1 != H2).flatten(1).any(1) | (t1 != t2).any(1)).sum())
            same23 = int(((H2 != H3).flatten(1).any(1) | (t2 != t3).any(1)).sum())
            print(f"{name:14s} matrices differing: call 1-2 {same12:3d}, call 2-3 (other input "
                  f"between) {same23:3d}")
        return
    for n, dense in ((512, 64), (768, 5), (1024, 8)):
        A = torch.cat([generate(dense, n, 2, 74 + n, "dense"), generate(1, n, 0, 75 + n, "rankdef")])
        for name, knobs, env in (("default", {}, {}), ("lookahead 0", {"lookahead": 0}, {}),
                                 ("graphs off", {}, {"ADAPTQR_GRAPHS": "0"}),
                                 ("fp16 off", {}, {"ADAPTQR_FP16": "0"})):
            os.environ.update(env)
            with config.experiment(**knobs):
                bad = _differs(A)
            for k in env:
                del os.environ[k]
            worst = sorted(bad.items(), key=lambda kv: -kv[1])[:4]
            print(f"{dense + 1}x{n} {name:12s} matrices differing: {len(bad):3d}  worst {worst}")


if __name__ == "__main__":
    main()
