"""The ``wide`` path: geqrf of wide ``m < n`` CUDA float32 matrices (issue 26).

LAPACK's order for a wide matrix: the leading ``m x m`` block is factored (the householder
path's kernels, :func:`~adaptqr.paths.householder.factor_householder`), and its ``Q^T`` is
applied to the other ``n - m`` columns (:func:`adaptqr.qform.apply_qt`, blocked compact WY
in a Triton kernel). Same ``(a, tau)`` layout as torch.geqrf: R is ``m x n``, ``tau`` has
``m`` entries. torch.geqrf on CUDA loops on the host over the batch (64x256x1024: 366 ms).

Without the detectors' features for the leading block (they describe the whole matrix),
the block takes the default route: no low-rank skipping, no FP16 trailing matrix. A matrix
of extreme scale is prescaled as a whole (:func:`~adaptqr.paths.prescale.own_exponents`),
so that the block and the other columns keep one scale.

Example::

    >>> import torch, adaptqr
    >>> if torch.cuda.is_available():
    ...     a, tau = adaptqr.geqrf(torch.randn(8, 64, 256, device="cuda"))
"""

from __future__ import annotations

import torch

from adaptqr.paths.prescale import Given, own_exponents, prescale, unscale
from adaptqr.qform import apply_qt
from adaptqr.registry import Path

NAME = "wide"
#: Above torch's (0), below householder's (100), which declines m < n.
PRIORITY = 90


def capable(spec) -> str | None:
    from adaptqr.paths.householder import capable as square_capable

    if spec.m >= spec.n:
        return f"wide: needs m < n, got {spec.m}x{spec.n}"
    return square_capable(spec.batch, spec.m, spec.m, spec.dtype, spec.device_type)


def factor_wide(H: torch.Tensor, tau: torch.Tensor, info=None) -> None:
    """Factor wide ``H`` ``(B, m, n)`` (column-major, ``m < n``) in place; ``tau``: ``(B, m)``."""
    from adaptqr import config
    from adaptqr.paths.householder import factor_householder

    settings = getattr(info, "settings", None) or config.snapshot()
    B, m, _ = H.shape
    e = own_exponents(H)
    prescale(H, e)
    # The kernels take whole column-major batches: the leading block gets its own buffer.
    lead = torch.empty((B, m, m), dtype=H.dtype, device=H.device).mT  # strides (m*m, 1, m)
    lead.copy_(H[..., :m])
    # Prescaled already: exponents 0 for the block.
    factor_householder(lead, tau, Given(torch.zeros(B, dtype=torch.int32, device=H.device), settings))
    apply_qt(lead, tau, H[..., m:])
    H[..., :m] = lead
    unscale(H, e)



PATH = Path(
    name=NAME,
    impl=factor_wide,
    supports=capable,
    priority=PRIORITY,
    capturable=True,
    description="wide m < n: householder on the leading m x m block, then Q^T on the rest (CUDA float32)",
)
