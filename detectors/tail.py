"""Finish a low-rank factorization: clear the negligible column tail of every matrix.

The path factored only the leading ``n_active[b]`` columns of matrix ``b`` (and applied
those reflectors to every later column, so column ``j >= n_active`` holds ``Q1^T a_j``).
:func:`finish_tail` then makes ``(H, tau)`` a valid geqrf result: for ``j >= n_active[b]``
it zeros rows ``i > j`` of column ``j`` and sets ``tau[b, j] = 0`` (identity reflectors).
Why that is accurate enough: :mod:`adaptqr.detectors.classify` (the bound) and
docs/DETECTORS.md. For an upper triangular matrix (``n_active = 0``) it only writes zeros
where zeros already are, and ``tau = 0``.

No host synchronization: ``n_active`` stays on the device; a Triton kernel on CUDA, a
masked fill in torch ops elsewhere.

Example::

    >>> import torch
    >>> from adaptqr.detectors import finish_tail
    >>> H = torch.ones(2, 4, 4).mT.contiguous().mT
    >>> tau = torch.ones(2, 4)
    >>> finish_tail(H, tau, torch.tensor([4, 1], dtype=torch.int32))
    >>> tau.tolist()
    [[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]]
    >>> H[1].tolist()
    [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0]]
"""

from __future__ import annotations

import torch

# 32 columns x 128 rows a store: the same tile shape as the probe; the kernel is pure
# stores, so the tile only needs to be wide enough for full 128-byte row segments.
BLOCK_N = 32
BLOCK_M = 128


def _check(H: torch.Tensor, tau: torch.Tensor, n_active: torch.Tensor) -> None:
    if H.dim() != 3:
        raise ValueError(f"finish_tail expects H of shape (B, m, n), got {tuple(H.shape)}")
    B, m, n = H.shape
    k = min(m, n)
    if tau.shape != (B, k):
        raise ValueError(f"finish_tail expects tau of shape {(B, k)} for H {tuple(H.shape)}, got {tuple(tau.shape)}")
    if n_active.shape != (B,):
        raise ValueError(f"finish_tail expects n_active of shape {(B,)}, got {tuple(n_active.shape)}")
    if n_active.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"finish_tail expects int32/int64 n_active, got dtype {n_active.dtype}")
    if not (H.device == tau.device == n_active.device):
        raise ValueError(
            f"finish_tail expects H, tau, n_active on one device, got {H.device}, {tau.device}, {n_active.device}"
        )


def _torch_finish_tail(H: torch.Tensor, tau: torch.Tensor, n_active: torch.Tensor) -> None:
    B, m, n = H.shape
    k = min(m, n)
    nact = n_active.view(B, 1, 1)
    rows = torch.arange(m, device=H.device).view(1, m, 1)
    cols = torch.arange(n, device=H.device).view(1, 1, n)
    H.masked_fill_((rows > cols) & (cols >= nact), 0)
    tau.masked_fill_(torch.arange(k, device=H.device).view(1, k) >= n_active.view(B, 1), 0)


def _triton_finish_tail(H: torch.Tensor, tau: torch.Tensor, n_active: torch.Tensor) -> None:
    import triton

    from .kernels.tail_kernel import finish_tail_kernel

    B, m, n = H.shape
    k = min(m, n)
    sb, sr, sc = H.stride()
    finish_tail_kernel[(B, triton.cdiv(k, BLOCK_N))](
        H, tau, n_active, m, k, sb, sr, sc, tau.stride(0), tau.stride(1),
        BLOCK_N=BLOCK_N, BLOCK_M=BLOCK_M,
    )


def finish_tail(H: torch.Tensor, tau: torch.Tensor, n_active: torch.Tensor, *, backend: str = "auto") -> None:
    """In place: ``H[b, i, j] = 0`` for ``i > j >= n_active[b]``, ``tau[b, j] = 0`` for ``j >= n_active[b]``.

    ``H``: ``(B, m, n)`` (any strides; column-major in the dispatcher), ``tau``:
    ``(B, min(m, n))``, ``n_active``: ``(B,)`` int32 on the same device. ``backend``:
    ``"auto"`` (Triton on CUDA, torch ops otherwise), ``"triton"`` (forced; runs on CPU
    under ``TRITON_INTERPRET=1``) or ``"torch"``.
    """
    _check(H, tau, n_active)
    if backend not in ("auto", "triton", "torch"):
        raise ValueError(f"finish_tail backend must be 'auto', 'triton' or 'torch', got {backend!r}")
    B, m, n = H.shape
    if B * min(m, n) == 0:
        return
    use_triton = backend == "triton"
    if backend == "auto" and H.is_cuda:
        try:
            import triton  # noqa: F401

            use_triton = True
        except ImportError:  # pragma: no cover - depends on the environment
            use_triton = False
    if use_triton:
        _triton_finish_tail(H, tau, n_active)
    else:
        _torch_finish_tail(H, tau, n_active)
