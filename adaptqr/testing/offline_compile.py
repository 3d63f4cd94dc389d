"""Triton kernels compiled for a GPU without one: the code generator, which the interpreter
never runs (EXPERIMENTS.md CI2: a kernel the interpreter ran compiled on no GPU).

:func:`compile_kernel` builds one configuration of a ``@triton.jit`` kernel for sm_90 (an
H100/H200) through the installed triton's NVIDIA backend, with the argument
specialization the device's launches get: pointers and integer arguments 16-divisible
(``constexprs`` may also fix a scalar, as a launch of constant value would). The kernels'
pointer arguments are named by :data:`POINTERS`; every other argument is an ``i32``
scalar.

Example (where triton's NVIDIA backend is installed)::

    >>> from adaptqr.testing import offline_compile
    >>> from adaptqr.paths.kernels.transpose import column_major_copy_kernel
    >>> if offline_compile.available():
    ...     k = offline_compile.compile_kernel(column_major_copy_kernel, {"BM": 32, "BN": 32})
    ...     ok = "cubin" in k.asm
    ... else:
    ...     ok = True
    >>> ok
    True
"""

from __future__ import annotations

import inspect

#: Pointer arguments by name, and their element types.
POINTERS = {"Ht": "*fp32", "TAU": "*fp32", "TW": "*fp32", "TB": "*fp32", "W": "*fp32", "WZ": "*fp32",
            "SC": "*fp32", "WS": "*fp32", "SP": "*fp32", "S": "*fp32", "Y": "*fp32", "C": "*fp32",
            "TG": "*fp32", "Qt": "*fp32", "src": "*fp32", "dst": "*fp32",
            "NA": "*i32", "NZ": "*i32", "CNT": "*i32", "EXP": "*i32", "OK": "*i32", "C16": "*fp16", "V16": "*fp16",
            "Y16": "*fp16", "YS": "*fp32", "VLO": "*fp16", "YLO": "*fp16"}


def available() -> bool:
    """Whether the installed triton has its NVIDIA backend (its code generator and ptxas)."""
    try:
        from triton.backends.nvidia.compiler import CUDABackend  # noqa: F401
    except Exception:
        return False
    return True


def compile_kernel(kernel, constexprs: dict, warps: int = 4, stages: int = 3, arch: int = 90):
    """``kernel`` (a ``triton.jit`` function) compiled for ``sm_{arch}`` with ``constexprs``
    (its ``tl.constexpr`` arguments by name; those it lacks are dropped; a ``tl.constexpr``
    argument with a default takes its default where ``constexprs`` leaves it out, as a
    launch that does not name it), ``warps`` and ``stages``: triton's compiled kernel
    (``.asm["cubin"]``, ``.asm["ptx"]``)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    params = list(inspect.signature(kernel.fn).parameters)
    defaults = {p.name: p.default for p in kernel.params if p.is_constexpr and p.has_default}
    cx = {**defaults, **{k: v for k, v in constexprs.items() if k in params}}
    sig = {p: "constexpr" if p in cx else POINTERS.get(p, "i32") for p in params}
    attrs = {(params.index(p),): [["tt.divisibility", 16]] for p, t in sig.items() if t != "constexpr"}
    return triton.compile(ASTSource(fn=kernel, signature=sig, constexprs=cx, attrs=attrs),
                          target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": warps, "num_stages": stages})
