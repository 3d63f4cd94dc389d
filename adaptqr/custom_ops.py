"""adaptqr's public ops as ``torch.library`` custom ops, so that they compose with
``torch.compile`` (``fullgraph=True``, ``mode="reduce-overhead"``), ``torch.export`` and
autograd (issue 26).

- ``torch.ops.adaptqr.geqrf(A) -> (a, tau)``
- ``torch.ops.adaptqr.householder_product(A, tau) -> Q``
- ``torch.ops.adaptqr.qr(A, mode) -> (Q, R)``, with torch's ``linalg_qr_backward``

The public functions (:func:`adaptqr.geqrf`, :func:`adaptqr.householder_product`,
:func:`adaptqr.linalg.qr`) call these ops while ``torch.compile`` traces them, and run
directly otherwise (an eager call skips the op's dispatch overhead). Inside the op the
dispatcher, the probes, the graph cache and the decisions log run as in an eager call. The
fake (meta) implementations give the real ones' shapes and strides: geqrf's from the
dispatcher's own allocation (torch has no meta geqrf), the other two by torch's own
functions on the fake tensors.

Example (``torch.compile(lambda x: adaptqr.geqrf(x), fullgraph=True)`` traces into the
first; tests/test_compile.py compiles each)::

    >>> import torch, adaptqr
    >>> a, tau = torch.ops.adaptqr.geqrf(torch.eye(3))
    >>> tau.tolist()
    [0.0, 0.0, 0.0]
"""

from __future__ import annotations

import torch

from adaptqr import originals


@torch.library.custom_op("adaptqr::geqrf", mutates_args=())
def geqrf(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    from adaptqr import dispatch

    # Fresh outputs: under mode="reduce-overhead" torch's CUDA graphs check that every
    # output lives in their pool, and a replay of the library's own graph hands out its own.
    return dispatch.run(A, None, fresh=True)


@geqrf.register_fake
def _geqrf_fake(A):
    from adaptqr import dispatch

    return dispatch.empty_outputs(A)


@torch.library.custom_op("adaptqr::householder_product", mutates_args=())
def householder_product(A: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    from adaptqr.qform import householder_product as _hp

    return _hp(A, tau)


@householder_product.register_fake
def _householder_product_fake(A, tau):
    return originals.householder_product(A, tau)


@torch.library.custom_op("adaptqr::qr", mutates_args=())
def qr(A: torch.Tensor, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    from adaptqr.linalg import _qr

    return _qr(A, mode)


@qr.register_fake
def _qr_fake(A, mode):
    return tuple(originals.linalg_qr(A, mode=mode))


def _qr_setup(ctx, inputs, output):
    ctx.mode = inputs[1]
    ctx.save_for_backward(*output)


def _qr_backward(ctx, gQ, gR):
    from adaptqr.linalg import qr_backward

    Q, R = ctx.saved_tensors
    return qr_backward(gQ, gR, Q, R, ctx.mode), None


qr.register_autograd(_qr_backward, setup_context=_qr_setup)
