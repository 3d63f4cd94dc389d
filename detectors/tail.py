"""Finish a low-rank factorization: clear the negligible column tail of every matrix.

The path factored only the leading ``n_active[b]`` columns of matrix ``b`` and applied
those reflectors to the later columns up to ``n_kept[b]`` (column ``j`` there holds
``Q1^T a_j``); the columns from ``n_kept[b]`` on it left as they were (a dropped negligible
tail) or they are exactly zero (from ``n_nonzero[b]`` on).
:func:`finish_tail` then makes ``(H, tau)`` a valid geqrf result: for ``j >= n_active[b]``
it sets ``tau[b, j] = 0`` (identity reflectors) and zeros rows ``i > j`` of column ``j``, and
every row of the columns ``n_kept[b] <= j < n_nonzero[b]``. Why that is accurate enough:
:mod:`adaptqr.detectors.classify` (the bound) and docs/DETECTORS.md. For an upper
triangular matrix (``n_active = 0``) it only writes zeros where zeros already are, and
``tau = 0``.

No host synchronization: ``n_active`` stays on the device; a Triton kernel on CUDA, a
masked fill in torch ops elsewhere.

Example::

    >>> import torch
    >>> from adaptqr.detectors import finish_tail
    >>> H = torch.ones(2, 4, 4).mT.contiguous().mT
    >>> tau = torch.ones(2, 4)
    >>> nact = torch.tensor([4, 1], dtype=torch.int32)
    >>> finish_tail(H, tau, nact, n_kept=torch.tensor([4, 3], dtype=torch.int32))
    >>> tau.tolist()
    [[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]]
    >>> H[1].tolist()
    [[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
"""

from __future__ import annotations

import torch

# 32 columns x 128 rows a store: the same tile shape as the probe; the kernel is pure
# stores, so the tile only needs to be wide enough for full 128-byte row segments.
BLOCK_N = 32
BLOCK_M = 128


def _check(H: torch.Tensor, tau: torch.Tensor, counts: dict[str, torch.Tensor]) -> None:
    if H.dim() != 3:
        raise ValueError(f"finish_tail expects H of shape (B, m, n), got {tuple(H.shape)}")
    B, m, n = H.shape
    k = min(m, n)
    if tau.shape != (B, k):
        raise ValueError(f"finish_tail expects tau of shape {(B, k)} for H {tuple(H.shape)}, got {tuple(tau.shape)}")
    for name, c in counts.items():
        if c.shape != (B,):
            raise ValueError(f"finish_tail expects {name} of shape {(B,)}, got {tuple(c.shape)}")
        if c.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"finish_tail expects int32/int64 {name}, got dtype {c.dtype}")
        if not (H.device == tau.device == c.device):
            raise ValueError(
                f"finish_tail expects H, tau, {name} on one device, got {H.device}, {tau.device}, {c.device}"
            )


def _torch_finish_tail(H: torch.Tensor, tau: torch.Tensor, n_active: torch.Tensor,
                       n_kept: torch.Tensor, n_nonzero: torch.Tensor) -> None:
    B, m, n = H.shape
    k = min(m, n)
    rows = torch.arange(m, device=H.device).view(1, m, 1)
    cols = torch.arange(n, device=H.device).view(1, 1, n)
    nz = n_nonzero.view(B, 1, 1)
    below = (rows > cols) & (cols >= n_active.view(B, 1, 1))
    H.masked_fill_((below | (cols >= n_kept.view(B, 1, 1))) & (cols < nz) & (cols < k), 0)
    tau.masked_fill_(torch.arange(k, device=H.device).view(1, k) >= n_active.view(B, 1), 0)


def _triton_finish_tail(H: torch.Tensor, tau: torch.Tensor, n_active: torch.Tensor,
                        n_kept: torch.Tensor, n_nonzero: torch.Tensor) -> None:
    import triton

    from .kernels.tail_kernel import finish_tail_kernel

    B, m, n = H.shape
    k = min(m, n)
    sb, sr, sc = H.stride()
    finish_tail_kernel[(B, triton.cdiv(k, BLOCK_N))](
        H, tau, n_active, n_kept, n_nonzero, m, k, sb, sr, sc, tau.stride(0), tau.stride(1),
        BLOCK_N=BLOCK_N, BLOCK_M=BLOCK_M,
    )


def finish_tail(H: torch.Tensor, tau: torch.Tensor, n_active: torch.Tensor, *,
                n_kept: torch.Tensor | None = None, n_nonzero: torch.Tensor | None = None,
                backend: str = "auto") -> None:
    """In place, for each matrix ``b`` and column ``j < min(m, n)``: ``tau[b, j] = 0`` and
    ``H[b, i, j] = 0`` for ``i > j`` where ``j >= n_active[b]``, and ``H[b, :, j] = 0``
    where ``j >= n_kept[b]`` (the dropped tail); columns from ``n_nonzero[b]`` on are
    exactly zero already and not written.

    ``H``: ``(B, m, n)`` (any strides; column-major in the dispatcher), ``tau``:
    ``(B, min(m, n))``, ``n_active`` / ``n_kept`` / ``n_nonzero``: ``(B,)`` int32 on the same
    device (the route probe's; without ``n_kept`` nothing is dropped, without ``n_nonzero``
    no column is known to be zero). A path given ``n_kept`` must be finished with it: it
    left the columns from there on unupdated. ``backend``: ``"auto"`` (Triton on CUDA,
    torch ops otherwise), ``"triton"`` (forced; runs on CPU under ``TRITON_INTERPRET=1``) or
    ``"torch"``.
    """
    if backend not in ("auto", "triton", "torch"):
        raise ValueError(f"finish_tail backend must be 'auto', 'triton' or 'torch', got {backend!r}")
    counts = {"n_active": n_active, "n_kept": n_kept, "n_nonzero": n_nonzero}
    _check(H, tau, {name: c for name, c in counts.items() if c is not None})
    B, m, n = H.shape
    if B * min(m, n) == 0:
        return
    full = torch.full_like(n_active, n)
    n_kept = full if n_kept is None else n_kept.to(n_active.dtype)
    n_nonzero = full if n_nonzero is None else n_nonzero.to(n_active.dtype)
    use_triton = backend == "triton"
    if backend == "auto" and H.is_cuda:
        try:
            import triton  # noqa: F401

            use_triton = True
        except ImportError:  # pragma: no cover - depends on the environment
            use_triton = False
    if use_triton:
        _triton_finish_tail(H, tau, n_active, n_kept, n_nonzero)
    else:
        _torch_finish_tail(H, tau, n_active, n_kept, n_nonzero)
