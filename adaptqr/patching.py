"""``adaptqr.patch()`` / ``unpatch()`` / ``patched()``: route torch's QR functions through
adaptqr, for code that cannot be edited (issue 25), as Liger-Kernel's
``apply_liger_kernel_to_*`` does for model code.

Replaced while patched: ``torch.geqrf`` (:func:`adaptqr.geqrf`), ``torch.linalg.qr``
(:func:`adaptqr.linalg.qr`) and ``torch.linalg.householder_product``
(:func:`adaptqr.householder_product`). Each keeps torch's contract, and hands what it does
not accelerate to torch's own function (:mod:`adaptqr.originals`).

Caveats:

- **Bindings made before the patch keep torch's function.** ``from torch.linalg import qr``
  or ``qr = torch.compiler.disable(torch.linalg.qr)`` at import time (HeavyBall binds its
  ``no_compile_qr`` so) hold the old object. Patch before importing such a module, or
  rebind its name (``module.name = adaptqr.linalg.qr``).
- Tensor methods (``A.geqrf()``) and ``torch.ops.aten`` calls are not patched.
- The patch is process-wide, not thread-local. ``patch()`` twice is one patch; ``unpatch()``
  restores torch's functions.

Example::

    >>> import torch, adaptqr
    >>> with adaptqr.patched():
    ...     torch.linalg.qr is adaptqr.linalg.qr
    True
    >>> torch.linalg.qr is adaptqr.originals.linalg_qr
    True
"""

from __future__ import annotations

import contextlib
import threading

import torch

from adaptqr import originals

_lock = threading.Lock()
_active = False


def _targets():
    from adaptqr import api, linalg, qform

    return ((torch, "geqrf", originals.geqrf, api.geqrf),
            (torch.linalg, "qr", originals.linalg_qr, linalg.qr),
            (torch.linalg, "householder_product", originals.householder_product,
             qform.householder_product))


def _install(ours: bool) -> None:
    global _active
    with _lock:
        for owner, name, theirs, mine in _targets():
            setattr(owner, name, mine if ours else theirs)
        _active = ours


def patch() -> None:
    """Route ``torch.geqrf``, ``torch.linalg.qr`` and ``torch.linalg.householder_product``
    through adaptqr until :func:`unpatch`."""
    _install(True)


def unpatch() -> None:
    """Give torch its own functions back (a no-op when not patched)."""
    _install(False)


def is_patched() -> bool:
    return _active


@contextlib.contextmanager
def patched():
    """:func:`patch` for a ``with`` block; the state before it is restored after."""
    was = _active
    patch()
    try:
        yield
    finally:
        if not was:
            unpatch()
