"""``adaptqr.geqrf``: torch.geqrf's whole contract, dispatched to the fastest applicable path.

Example::

    >>> import torch, adaptqr
    >>> A = torch.randn(2, 5, 4)
    >>> a, tau = adaptqr.geqrf(A)
    >>> a.shape, a.stride(), tau.shape
    (torch.Size([2, 5, 4]), (20, 1, 5), torch.Size([2, 4]))
    >>> torch.allclose(a, torch.geqrf(A).a)
    True
"""

from __future__ import annotations

import torch

from adaptqr import custom_ops, dispatch, validate  # noqa: F401 (custom_ops registers the ops)


class _GeqrfFunction(torch.autograd.Function):
    """Gives requires-grad inputs torch.geqrf's behaviour: outputs require grad, backward raises."""

    @staticmethod
    def forward(ctx, A, path):
        return dispatch.run(A, path)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented (adaptqr.geqrf, as torch.geqrf).")


def geqrf(A: torch.Tensor, *, out=None, path: str | None = None):
    """QR factorization in LAPACK's geqrf form, a drop-in for ``torch.geqrf``.

    Args:
        A: ``(*, m, n)`` tensor, float32/float64/complex64/complex128, CPU or CUDA, any
            strides. Never modified.
        out: optional ``(a, tau)`` to write into, with torch.geqrf's rules (resized if their
            shape differs; dtypes must be safely castable from ``A``'s; same device).
        path: force a registered path by name (default: ``ADAPTQR_PATH``, else the plan's
            choice). An unknown name, or a path that cannot take ``A``, raises ``ValueError``.

    Returns:
        ``torch.return_types.geqrf(a, tau)``: ``a`` ``(*, m, n)`` batched column-major with R
        on and above the diagonal and the Householder vectors below, ``tau`` ``(*, min(m, n))``
        contiguous.

    >>> import torch, adaptqr
    >>> a, tau = adaptqr.geqrf(torch.eye(3, dtype=torch.float64))
    >>> tau.tolist()
    [0.0, 0.0, 0.0]
    """
    validate.check_input(A)
    if out is not None:
        out = validate.check_out(out, A)
    if torch.compiler.is_compiling():
        # Traced: the op is opaque to the compiler (adaptqr.custom_ops).
        a, tau = torch.ops.adaptqr.geqrf(A)
    elif A.requires_grad and torch.is_grad_enabled():
        validate.check_grad(A, out)
        a, tau = _GeqrfFunction.apply(A, path)
    else:
        if out is not None:
            validate.check_grad(A, out)
        a, tau = dispatch.run(A, path)
    if out is not None:
        validate.write_out(out[0], a, "a", A.dtype)
        validate.write_out(out[1], tau, "tau", A.dtype)
        return torch.return_types.geqrf(out)
    return torch.return_types.geqrf((a, tau))
