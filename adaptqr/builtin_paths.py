"""The built-in paths, registered through the same :func:`register_path` users call.

Each path declares itself in its own module (``PATH``, its ``PRIORITY``); this module only
lists them.

=============  ========  ====================================================================
name           priority  when it is chosen
=============  ========  ====================================================================
small          110       CUDA float32 of at most 64 x 64, one CUDA C launch on the caller's
                         tensor; by itself (its ``prefers``) for at most 64 matrices of at
                         most 32 columns, where a call is bound by the host (EXPERIMENTS.md
                         H37); named, for any input it supports.
householder    100       what its module's ``capable`` accepts (CUDA float32,
                         ``m >= n >= 2``); routed: it reads the per-matrix routes itself.
wide           90        CUDA float32 ``m < n``: householder on the leading block, Q^T on
                         the rest.
torch          0         everything else: torch.geqrf (CPU, float64, complex, other shapes).
reference      -10       never automatically: it is the oracle of the tests (blocked
                         Householder in torch ops). Force it with ``path="reference"``.
=============  ========  ====================================================================

Why reference is below torch: on the CPU the default must stay torch.geqrf (LAPACK is both
faster and the contract), and on CUDA a torch-ops blocked QR is launch bound (docs/DESIGN.md:
about 200 ms for 640x512), so it is never the better automatic choice; its job is to be an
independent oracle that runs anywhere.

Example::

    >>> import adaptqr
    >>> sorted(n for n in adaptqr.paths_registered() if n in ("torch", "reference"))
    ['reference', 'torch']
"""

from __future__ import annotations

import importlib

from adaptqr.registry import Registry

#: The built-in path modules, in registration order (ties of priority go to the earlier).
#: Each declares its own ``PATH`` (an :class:`adaptqr.registry.Path`) beside its kernel and
#: launcher; an import error of one of them is raised, never skipped.
MODULES = (
    "adaptqr.paths.torch_fallback",
    "adaptqr.paths.reference",
    "adaptqr.paths.householder",
    "adaptqr.paths.wide",
    "adaptqr.paths.small",
)


def register_all(registry: Registry) -> None:
    """Register every built-in module's ``PATH`` into ``registry``."""
    for name in MODULES:
        registry.add(importlib.import_module(name).PATH)
