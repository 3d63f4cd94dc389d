"""Offline (no GPU): registers and spill of a CUDA C kernel (the panel, paths/kernels/
panel_cuda_src.py, or another module's ``SRC`` by ``--source``) for sm_90, one line a
configuration, and whether the PTX of two sources is the same.

With ``--nvcc`` (CUDA 13.0's, ``/usr/local/cuda-13.0/bin/nvcc`` on the development machine,
the device's CUDA version) nvcc compiles and assembles it (``-Xptxas -v``); no NVRTC needed::

    python3 bench/devscripts/regs_cuda_offline.py --nvcc /usr/local/cuda-13.0/bin/nvcc \
        NT=256,R=1,FUSE=1,GRAM=1,CL=8 NT=256,R=2,FUSE=1
    ... --same OLD_panel_cuda_src.py NT=256,R=2     # registers of OLD's SRC beside today's
    ... --sass CUOBJDUMP /tmp/panel_ NT=256,R=2,CL=8,FUSE=1,GRAM=1   # and its SASS

``cuobjdump`` from PyPI: ``pip download --no-deps nvidia-cuda-cuobjdump`` (unzip it; the
binary is ``nvidia/cu13/bin/cuobjdump``).

NVRTC from PyPI compiles the source to PTX; ptxas from the triton wheel (``triton/backends/
nvidia/bin/ptxas``) assembles it with ``-v``. The device's NVRTC (CUDA 13) gives fewer
registers than NVRTC 12.8 (103 against 127 at ``NT=256,R=2``): compare configurations with
each other, not with the device's figures.

Setup here (no GPU needed)::

    pip download --no-deps nvidia-cuda-nvrtc-cu12==12.8.93 -d /tmp/nvrtc   # then unzip it
    NVRTC=/tmp/nvrtc/x/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 PTXAS=.../triton/backends/nvidia/bin/ptxas \\
        python3 bench/devscripts/regs_cuda_offline.py NT=256,R=2 NT=256,R=2,MINB=3
    ... --same OLD_panel_cuda.py NT=256,R=2     # PTX of OLD's SRC against today's, per config
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import os
import subprocess
import tempfile


def _source(path: str) -> str:
    spec = importlib.util.spec_from_file_location("panel_cuda_src", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SRC


def ptx(lib, src: str, defines: list[str]) -> str:
    opts = ["-std=c++17", "--gpu-architecture=compute_90", *(f"-D{d}" for d in defines)]
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"panel.cu", 0, None, None):
        raise RuntimeError("nvrtcCreateProgram failed")
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    if rc:
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        raise RuntimeError(log.value.decode())
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    out = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetPTX(prog, out)
    return out.value.decode()


def nvcc_usage(nvcc: str, src: str, defines: list[str], sass: tuple | None = None) -> str:
    """nvcc's ``-Xptxas -v`` report of ``src`` for sm_90 under ``defines``: its registers,
    stack and spill, one line. ``sass``: ``(cuobjdump, path)``, the cubin's SASS written to
    ``path`` too (H32 read the Gram chains' steps there)."""
    with tempfile.TemporaryDirectory() as d:
        path, cubin = os.path.join(d, "kernel.cu"), os.path.join(d, "k.cubin")
        with open(path, "w") as f:
            f.write(src)
        res = subprocess.run([nvcc, "-std=c++17", "-arch=sm_90", "-cubin", "-Xptxas", "-v",
                              *(f"-D{x}" for x in defines), "-o", cubin, path],
                             capture_output=True, text=True, check=True)
        if sass is not None:
            dump = subprocess.run([sass[0], "-sass", cubin], capture_output=True, text=True,
                                  check=True).stdout
            with open(sass[1], "w") as f:
                f.write(dump)
    keep = [ln.split("info    : ")[-1].strip() for ln in res.stderr.splitlines()
            if "registers" in ln or "spill" in ln]
    return " / ".join(keep)


def usage(ptxas: str, code: str) -> str:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "panel.ptx")
        with open(src, "w") as f:
            f.write(code)
        res = subprocess.run([ptxas, "-arch=sm_90", "-v", src, "-o", os.path.join(d, "p.cubin")],
                             capture_output=True, text=True, check=True)
    keep = [ln.split("info    : ")[-1].strip() for ln in res.stderr.splitlines()
            if "registers" in ln or "spill" in ln]
    return " / ".join(keep)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("configs", nargs="+", help="NAME=VALUE,... compile definitions, e.g. NT=256,R=2,MINB=3")
    ap.add_argument("--same", help="another source file: is its PTX today's (NVRTC), or its "
                                   "registers (--nvcc), per configuration?")
    ap.add_argument("--source", help="the module whose SRC to compile (default: the panel's)")
    ap.add_argument("--nvcc", help="compile with this nvcc instead of NVRTC and ptxas")
    ap.add_argument("--sass", nargs=2, metavar=("CUOBJDUMP", "PREFIX"),
                    help="with --nvcc: each configuration's SASS into PREFIX<n>.sass")
    args = ap.parse_args()
    here = args.source or os.path.join(os.path.dirname(__file__), "..", "..", "paths", "kernels",
                                       "panel_cuda_src.py")
    src = _source(here)
    other = _source(args.same) if args.same else None
    if args.nvcc:
        for i, cfg in enumerate(args.configs):
            defines = cfg.split(",")
            then = "" if other is None else f"  (other: {nvcc_usage(args.nvcc, other, defines)})"
            sass = None if args.sass is None else (args.sass[0], f"{args.sass[1]}{i}.sass")
            print(f"{cfg}: {nvcc_usage(args.nvcc, src, defines, sass)}{then}")
        return
    lib = ctypes.CDLL(os.environ["NVRTC"])
    for cfg in args.configs:
        defines = cfg.split(",")
        code = ptx(lib, src, defines)
        same = "" if other is None else f"  same PTX as {args.same}: {ptx(lib, other, defines) == code}"
        print(f"{cfg}: {usage(os.environ['PTXAS'], code)}{same}")


if __name__ == "__main__":
    main()
