"""Input and ``out=`` checks with torch.geqrf's error types, and torch's ``out=`` write rules.

Error types match torch.geqrf's (measured on torch 2.13):

=====================================  ======================  ==============================
input                                  torch raises            we raise (naming shape/dtype)
=====================================  ======================  ==============================
not a tensor                           TypeError               TypeError
fewer than 2 dims                      RuntimeError            RuntimeError
integer / bool / half / bfloat16       NotImplementedError     NotImplementedError
device other than CPU/CUDA (meta ...)  NotImplementedError     NotImplementedError
``out`` not a 2-tuple/list of tensors  TypeError               TypeError
``out`` on another device              RuntimeError            RuntimeError
``out`` dtype not castable from input  RuntimeError            RuntimeError
requires grad together with ``out=``   RuntimeError            RuntimeError
complex input that requires grad       RuntimeError            RuntimeError
=====================================  ======================  ==============================

Example::

    >>> import torch
    >>> from adaptqr.validate import check_input
    >>> check_input(torch.ones(3))
    Traceback (most recent call last):
    ...
    RuntimeError: adaptqr.geqrf: input must have at least 2 dimensions, got shape (3,) (dtype float32, device cpu)
"""

from __future__ import annotations

import warnings

import torch

SUPPORTED_DTYPES = frozenset({torch.float32, torch.float64, torch.complex64, torch.complex128})
SUPPORTED_DEVICES = frozenset({"cpu", "cuda"})

_OP = "adaptqr.geqrf"


def _dt(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def describe(A: torch.Tensor) -> str:
    """``'shape (2, 3, 3), dtype float32, device cpu'``."""
    return f"shape {tuple(A.shape)}, dtype {_dt(A.dtype)}, device {A.device}"


def check_input(A) -> None:
    """Raise torch.geqrf's error type (with the shape/dtype/device) if ``A`` is not a valid input."""
    if not isinstance(A, torch.Tensor):
        raise TypeError(f"{_OP}(): argument 'A' must be a Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(
            f"{_OP}: input must have at least 2 dimensions, got shape {tuple(A.shape)} "
            f"(dtype {_dt(A.dtype)}, device {A.device})"
        )
    if A.dtype not in SUPPORTED_DTYPES:
        raise NotImplementedError(
            f"{_OP}: not implemented for dtype {_dt(A.dtype)} (input {describe(A)}); "
            f"supported: float32, float64, complex64, complex128"
        )
    if not (A.is_cuda or A.is_cpu):
        raise NotImplementedError(f"{_OP}: not implemented on device {A.device} (input {describe(A)}); "
                                  "CPU and CUDA only")


def check_out(out, A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate ``out=(a, tau)`` as torch.geqrf does; returns it as a tuple."""
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{_OP}(): argument 'out' must be a tuple of 2 Tensors, not {type(out).__name__}")
    if len(out) != 2:
        raise TypeError(f"{_OP}(): argument 'out' must be a tuple of 2 Tensors (a, tau), got {len(out)} elements")
    for i, t in enumerate(out):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{_OP}(): expected a Tensor as element {i} of 'out', got {type(t).__name__}")
    a, tau = out
    for name, t in (("a", a), ("tau", tau)):
        if t.device != A.device:
            raise RuntimeError(
                f"{_OP}: expected out tensor {name} on the input's device {A.device}, but got {name} on {t.device} "
                f"({name} shape {tuple(t.shape)}; input {describe(A)})"
            )
        if not torch.can_cast(A.dtype, t.dtype):
            raise RuntimeError(
                f"{_OP}: expected out tensor {name} to be safely castable from the input's dtype {_dt(A.dtype)}, "
                f"but got {name} with dtype {_dt(t.dtype)} (input {describe(A)})"
            )
    if a is tau:
        raise RuntimeError(f"{_OP}: out tensors a and tau must be two different tensors (input {describe(A)})")
    return a, tau


def check_grad(A: torch.Tensor, out) -> None:
    """torch.geqrf's autograd rules: no ``out=`` with grad, no complex grad (raised before any work)."""
    if not torch.is_grad_enabled():
        return
    if out is not None and (A.requires_grad or out[0].requires_grad or out[1].requires_grad):
        raise RuntimeError(
            f"{_OP}(): functions with out=... arguments don't support automatic differentiation, but one of the "
            f"arguments requires grad (input {describe(A)})"
        )
    if A.requires_grad and A.is_complex():
        raise RuntimeError(
            f"{_OP} does not support automatic differentiation for outputs with complex dtype (input {describe(A)})"
        )


def write_out(dst: torch.Tensor, src: torch.Tensor, name: str, input_dtype: torch.dtype) -> None:
    """Copy a result into an ``out=`` tensor the way torch.geqrf does.

    - right shape: written in place, keeping ``dst``'s strides and dtype;
    - no elements and the input's dtype: resized to the result's own strides (column-major
      ``a``);
    - otherwise resized to a contiguous tensor of the result's shape, with torch's
      deprecation warning when ``dst`` had elements.
    """
    if dst.shape != src.shape:
        if dst.numel() == 0:
            if dst.dtype == input_dtype:
                dst.resize_(src.shape)
                dst.as_strided_(src.shape, src.stride())
            else:
                dst.resize_(src.shape)
        else:
            warnings.warn(
                f"{_OP}: an output ({name}) with one or more elements was resized since it had shape "
                f"{list(dst.shape)}, which does not match the required output shape {list(src.shape)}. "
                "This behavior is deprecated (as in torch); resize it to zero elements with t.resize_(0) to reuse it.",
                UserWarning,
                stacklevel=3,  # write_out <- geqrf <- the caller
            )
            dst.resize_(src.shape)
    dst.copy_(src)
