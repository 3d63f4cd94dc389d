"""The built-in paths, registered through the same :func:`register_path` users call.

=============  ========  ====================================================================
name           priority  when it is chosen
=============  ========  ====================================================================
cholqr         110       opt-in (``ADAPTQR_CHOLQR=1``): square CUDA float32, ``n >= 2048``;
                         hands the matrices it cannot take to householder (one host sync).
householder    100       what its module's ``capable`` accepts (CUDA float32,
                         ``m >= n >= 2``); routed: it reads the per-matrix routes itself.
                         (an import error of its module is raised).
torch          0         everything else: torch.geqrf (CPU, float64, complex, other shapes).
reference      -10       never automatically: it is the oracle of the tests (blocked
                         Householder in torch ops). Force it with ``path="reference"``.
=============  ========  ====================================================================

Why reference is below torch: on the CPU the default must stay torch.geqrf (LAPACK is both
faster and the contract), and on CUDA a torch-ops blocked QR is launch bound (DESIGN.md: about
200 ms for 640x512), so it is never the better automatic choice; its job is to be an
independent oracle that runs anywhere.

Example::

    >>> import adaptqr
    >>> sorted(n for n in adaptqr.paths_registered() if n in ("torch", "reference"))
    ['reference', 'torch']
"""

from __future__ import annotations

import importlib

import torch

from adaptqr.registry import ALL_CLASSES, InputSpec, Registry, register_path

PRIORITY_CHOLQR = 110  # above householder: where it takes an input (opt-in, n >= 2048) it wins
PRIORITY_HOUSEHOLDER = 100
PRIORITY_TORCH = 0
PRIORITY_REFERENCE = -10  # below torch: never chosen automatically (see module docstring)

_REAL = (torch.float32, torch.float64)


def _supports_torch(spec: InputSpec) -> str | None:
    return None


def _supports_reference(spec: InputSpec) -> str | None:
    if spec.dtype not in _REAL:
        return f"reference handles float32/float64 only, not {spec.dtype}"
    return None


def _spec_args(fn):
    """A path module's ``fn(batch, m, n, dtype, device_type)`` as ``fn(spec)``."""
    return lambda spec: fn(spec.batch, spec.m, spec.n, spec.dtype, spec.device_type)


def register_all(registry: Registry) -> None:
    """Register torch, reference, householder and cholqr into ``registry``."""
    from adaptqr.paths.torch_fallback import factor_torch

    register_path(
        factor_torch,
        name="torch",
        supports=_supports_torch,
        classes=ALL_CLASSES,
        priority=PRIORITY_TORCH,
        # Capturable would be wrong: torch.geqrf on CUDA loops on the host and may sync.
        capturable=False,
        routed=False,
        description="torch.geqrf (LAPACK / cuSOLVER); takes every input, lowest automatic priority",
        registry=registry,
    )

    # The package's own path modules: an import error is raised, never skipped.
    ref = importlib.import_module("adaptqr.paths.reference")
    register_path(
        ref.factor_reference,
        name="reference",
        supports=_supports_reference,
        classes=ALL_CLASSES,
        priority=PRIORITY_REFERENCE,
        capturable=False,
        routed=False,  # ignores info: factors every matrix in full
        description="blocked Householder in torch ops, runs anywhere; the test oracle (force it by name)",
        registry=registry,
    )

    hh = importlib.import_module("adaptqr.paths.householder")
    register_path(
        hh.factor_householder,
        name="householder",
        supports=_spec_args(hh.capable),
        classes=ALL_CLASSES,
        priority=PRIORITY_HOUSEHOLDER,
        capturable=True,
        routed=True,  # reads features["n_active"] and skips the negligible tail itself
        reads_routes=_spec_args(hh.uses_routes),
        description="Triton blocked Householder (compact WY), CUDA float32; routes per matrix on the device",
        registry=registry,
    )

    cq = importlib.import_module("adaptqr.paths.cholqr")
    register_path(
        cq.factor_cholqr,
        name="cholqr",
        supports=_spec_args(cq.supports),
        classes=ALL_CLASSES,
        priority=PRIORITY_CHOLQR,
        # One host sync counts the matrices that fall back to householder.
        capturable=False,
        routed=False,  # takes every matrix; hands the ones it cannot take to householder
        description="float64 CholeskyQR rebuilt into Householder form, square CUDA float32, n >= 2048; "
                    "opt-in (ADAPTQR_CHOLQR=1); per-matrix fallback to householder",
        registry=registry,
    )
