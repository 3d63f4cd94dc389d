"""The CUDA C panel under a prefix of macro definitions, for the device scripts that compare
or instrument its builds (``panel_ab.py``, ``gram_phases.py``).

:func:`use` routes every panel kernel the library asks for (``panel_cuda._kernel``) through
``prefix + panel_cuda_src.SRC``; the compiled functions stay in the caller's ``kept`` (a
graph holding a kernel whose module was collected replays freed code), and with
``modules`` each build's cupy module is kept there too (its ``__device__`` globals).
"""

from __future__ import annotations

import cupy as cp

from adaptqr.paths.kernels import panel_cuda, panel_cuda_src

_RAW_KERNEL = panel_cuda._kernel.__wrapped__


def use(build: str, prefix: str, kept: dict, modules: list | None = None) -> None:
    """Every panel kernel from now on is build ``build``'s: ``prefix`` (e.g. ``"#define
    PHASE_MARKS 1\\n"``) before the source."""
    src = prefix + panel_cuda_src.SRC
    real = cp.RawModule

    class Kept(real):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            modules.append(self)

    def kernel(*args):
        key = (build,) + args
        if key not in kept:
            saved, panel_cuda.SRC = panel_cuda.SRC, src
            if modules is not None:
                cp.RawModule = Kept
            try:
                kept[key] = _RAW_KERNEL(*args)
            finally:
                panel_cuda.SRC, cp.RawModule = saved, real
        return kept[key]

    panel_cuda._kernel = kernel
