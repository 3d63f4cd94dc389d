"""torch's own QR functions, as they were when adaptqr was imported.

:func:`adaptqr.patch` replaces ``torch.geqrf``, ``torch.linalg.qr`` and
``torch.linalg.householder_product`` with adaptqr's. Everything inside the library that
means torch's function (the ``torch`` path, the fallbacks of the drop-ins, the float64
check, the bench's baseline) calls it through this module, so that a patched torch never
calls itself back.

Example::

    >>> import torch
    >>> from adaptqr import originals
    >>> a, tau = originals.geqrf(torch.eye(2))
    >>> tau.tolist()
    [0.0, 0.0]
    >>> originals.check(originals.linalg_qr, torch.eye(2), mode="full")
    Traceback (most recent call last):
    ...
    RuntimeError: qr received unrecognized mode 'full' but expected one of 'reduced' (default), 'r', or 'complete'
"""

from __future__ import annotations

import torch

geqrf = torch.geqrf
linalg_qr = torch.linalg.qr
householder_product = torch.linalg.householder_product


def check(fn, *args, **kwargs) -> None:
    """Raise what torch's ``fn`` raises for these arguments, without computing: ``fn`` runs on
    meta copies of the tensors, and only if that raises, on the arguments themselves, for
    torch's exact message (the meta kernels word some of theirs differently)."""
    meta = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
    try:
        fn(*meta, **kwargs)
    except Exception as meta_error:
        fn(*args, **kwargs)
        raise meta_error
