"""The ``torch`` path: ``torch.geqrf`` itself, writing into the dispatcher's ``H`` and ``tau``.

It takes every input torch.geqrf takes (any device, real or complex, rectangular) and every
route class, so a plan always has an owner for every class; it has the lowest priority, so it
runs only where no faster path applies (CPU, float64, complex, shapes no kernel covers).

``H`` is ``(B, m, n)`` column-major and ``tau`` ``(B, min(m, n))`` contiguous, exactly the
layout torch.geqrf produces, so ``torch.geqrf(H, out=(H, tau))`` factors in place with no
extra copy.

Example::

    >>> import torch
    >>> from adaptqr.paths.torch_fallback import factor_torch
    >>> A = torch.randn(2, 4, 3)
    >>> H = A.mT.contiguous().mT.clone(memory_format=torch.preserve_format)
    >>> tau = torch.empty(2, 3)
    >>> factor_torch(H, tau, None)
    >>> torch.allclose(H, torch.geqrf(A).a)
    True
"""

from __future__ import annotations

import torch

from adaptqr import originals
from adaptqr.registry import Path


def factor_torch(H: torch.Tensor, tau: torch.Tensor, info=None) -> None:
    """Factor ``H`` in place with torch.geqrf; ``info`` is ignored (every class is handled)."""
    if H.shape[0] == 0:
        return
    # Layout matches torch.geqrf's own output, so out= writes straight into H and tau; if a
    # caller handed a differently strided H, torch copies through a temporary (still correct).
    originals.geqrf(H, out=(H, tau))


#: The lowest automatic priority: torch.geqrf runs only where no faster path applies.
PRIORITY = 0

# Every class, neither capturable (torch.geqrf on CUDA loops on the host and may sync) nor
# routed (Path's defaults).
PATH = Path(
    name="torch",
    impl=factor_torch,
    priority=PRIORITY,
    direct=lambda A: tuple(originals.geqrf(A)),
    description="torch.geqrf (LAPACK / cuSOLVER); takes every input, lowest automatic priority",
)
