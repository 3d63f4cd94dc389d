"""Offline (no GPU): compile the trailing kernels' default configurations for sm_90 and print
a hash of each one's PTX code (debug sections dropped), to show that a refactoring left the
instructions as they were. Run before and after a change with the same triton (3.6 is the
H200's) and compare the hashes.

Usage: python3 bench/devscripts/ptx_hash.py [OUTDIR]   (writes OUTDIR/<config>.ptx too)
"""

import hashlib
import inspect
import os
import re
import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from adaptqr.paths.kernels.trailing import trailing_kernel, trailing_u_kernel, trailing_w_kernel

POINTERS = {"Ht": "*fp32", "TW": "*fp32", "NA": "*i32", "NZ": "*i32", "C16": "*fp16", "SC": "*fp32",
            "k0": "i32", "npan": "i32", "m": "i32", "n": "i32", "c_start": "i32", "c_end": "i32",
            "n_tw": "i32", "W": "*fp32", "k": "i32", "rows_per_prog": "i32", "rows_per_split": "i32",
            "V16": "*fp16", "WZ": "*fp32", "z_start": "i32"}
COMMON = dict(HAS_NA=True, PREC="tf32x3", PREC_TAIL="tf32", BM16=64)
#: The launches householder._trailing makes at 640x512 / 60x1024 (streamed FP32, the FP32
#: launch next to the FP16 route, the FP16 pair update) and at n <= 384 (resident).
CONFIGS = {
    "stream_fp32": dict(NB=32, BN=64, BM=64, RESIDENT=False, F16=0, PAIR16=False),
    "stream_skip": dict(NB=32, BN=64, BM=64, RESIDENT=False, F16=1, PAIR16=False),
    "stream_only_pair": dict(NB=32, BN=128, BM=64, RESIDENT=False, F16=2, PAIR16=True, USE_V16=True),
    "resident": dict(NB=16, BN=32, BM=64, RESIDENT=True, F16=0, PAIR16=False),
}
#: The row-split update's two kernels (few column tiles: 8x2048, 2x4096), FP32 and beside
#: the FP16 route.
SPLIT_CONFIGS = {
    f"{kernel.__name__}_{mode}": (kernel, dict(NB=32, BN=64, BM=64, F16=f16))
    for kernel in (trailing_w_kernel, trailing_u_kernel) for mode, f16 in (("fp32", 0), ("only", 2))
}


def code(ptx: str) -> str:
    ptx = ptx.split(".section\t.debug")[0].split(".section .debug")[0]
    ptx = re.sub(r"//.*|\.file.*|\.loc.*", "", ptx)
    return "\n".join(line for line in ptx.splitlines() if line.strip())


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else None
    configs = {name: (trailing_kernel, cfg) for name, cfg in CONFIGS.items()}
    for name, (kernel, cfg) in dict(configs, **SPLIT_CONFIGS).items():
        params = inspect.signature(kernel.fn).parameters
        cx = {k: v for k, v in dict(COMMON, **cfg).items() if k in params}
        sig = {k: "constexpr" if k in cx else POINTERS[k] for k in params if k in cx or k in POINTERS}
        c = triton.compile(ASTSource(fn=kernel, signature=sig, constexprs=cx),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 3})
        text = code(c.asm["ptx"])
        if out:
            os.makedirs(out, exist_ok=True)
            open(os.path.join(out, f"{name}.ptx"), "w").write(text)
        print(f"{name:24s} {hashlib.sha1(text.encode()).hexdigest()[:12]} {len(text.splitlines())} lines")


if __name__ == "__main__":
    main()
