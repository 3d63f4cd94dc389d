"""Offline (no GPU): registers and spill of one Triton kernel configuration for sm_90, with
the argument specialization the device's launches get (pointers and integer arguments
16-divisible, ``npan`` 1 as a constant), read from the cubin with triton's cuobjdump.

With the H200's triton (3.6) it reproduces the counts measured there by ncu (the FP32
streamed update 230 registers and no spill, N8; the FP16 pair update 255 and a little
spill, N10). Triton 3.6 from PyPI, beside the CI's 3.9::

    pip download --no-deps triton==3.6.0 -d /tmp/tr36
    pip install --no-deps --target /tmp/tr36site /tmp/tr36/triton-3.6.0-*.whl
    PYTHONPATH=/tmp/tr36site TRITON_DEFAULT_FP_FUSION=1 python3 bench/devscripts/regs_offline.py \\
        trailing.trailing_kernel NB=128 BN=32 BM=64 RESIDENT=0 F16=0 PAIR16=0 HAS_NA=1 \\
        PREC=tf32x3 PREC_TAIL=tf32 BM16=64 --warps 8

The first argument is ``module.kernel`` under ``adaptqr.paths.kernels``; ``NAME=VALUE`` are
its constexprs (0 / 1 for booleans where the kernel tests them as such, numbers, strings).
Used for EXPERIMENTS.md B1 and H14.
"""

import argparse
import importlib
import os
import subprocess
import tempfile

import triton

from adaptqr.testing.offline_compile import compile_kernel


def value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernel", help="module.kernel under adaptqr.paths.kernels, e.g. trailing.trailing_kernel")
    ap.add_argument("constexprs", nargs="*", help="NAME=VALUE")
    ap.add_argument("--warps", type=int, default=4)
    ap.add_argument("--stages", type=int, default=3)
    args = ap.parse_intermixed_args()
    mod, name = args.kernel.rsplit(".", 1)
    kernel = getattr(importlib.import_module(f"adaptqr.paths.kernels.{mod}"), name)
    # npan: 1 as the device's launches pass it (a constant there).
    cx = dict(npan=1, **{k: value(v) for k, v in (a.split("=", 1) for a in args.constexprs)})
    c = compile_kernel(kernel, cx, args.warps, args.stages)
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(c.asm["cubin"])
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    out = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    os.unlink(f.name)
    usage = next((line.strip() for line in out.splitlines() if "REG:" in line), out.strip())
    print(f"triton {triton.__version__} {args.kernel} {args.constexprs} warps {args.warps}: {usage}")


if __name__ == "__main__":
    main()
