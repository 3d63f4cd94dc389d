"""The default GPU path: blocked Householder QR with compact WY, in Triton.

``factor_householder(H, tau, info)`` factors ``H`` (``(B, m, n)`` float32, column-major
matrices, ``H.mT`` contiguous, m >= n >= 2) in place with LAPACK's geqrf conventions and
writes ``tau`` (``(B, n)``). The host only launches kernels: no synchronization, no
data-dependent shapes, so the whole call can be captured in a CUDA graph. The one
workspace is ``T`` (``B x cdiv(n, nb) x nb x nb`` float32, at most ``nb/m`` of the input).

Plan per shape (:mod:`adaptqr.paths.schedules`):

* small (``next_pow2(n) * next_pow2(m) <= 16K``): one launch, one program per matrix, the
  whole QR in registers (:func:`~adaptqr.paths.kernels.panel.panel_reg_kernel`).
* otherwise, per group of ``group`` panels of ``nb`` columns: for each panel, the panel
  kernel (registers or row-chunked) then the trailing kernel on the rest of the group;
  then one trailing launch applies the whole group to the columns after it.

``info.features["n_active"]`` (int32 ``(B,)``, optional): matrix b needs reflectors only
for columns ``< n_active[b]``; later columns get ``tau = 0`` and hold ``Q1^T A_tail``;
panels past it exit at once.

Example::

    >>> import os, torch
    >>> from adaptqr.paths.householder import factor_householder, capable
    >>> capable(4, 64, 64, torch.float32, "cuda") is None
    True
    >>> if torch.cuda.is_available():
    ...     A = torch.randn(4, 64, 64, device="cuda")
    ...     H = A.mT.contiguous().mT.clone(); tau = A.new_empty(4, 64)
    ...     factor_householder(H, tau, None)
    ...     torch.allclose(H.diagonal(dim1=-2, dim2=-1).abs(),
    ...                    torch.geqrf(A)[0].diagonal(dim1=-2, dim2=-1).abs(), atol=1e-3)
    ... else:
    ...     True
    True
"""

from __future__ import annotations

from typing import Any

import torch
import triton

from adaptqr.paths import schedules
from adaptqr.paths.kernels.panel import panel_chunked_kernel, panel_reg_kernel
from adaptqr.paths.kernels.trailing import trailing_kernel
from adaptqr.paths.schedules import next_pow2

__all__ = ["factor_householder", "capable", "NAME"]

NAME = "householder"


def capable(batch: int, m: int, n: int, dtype: torch.dtype, device_type: str) -> str | None:
    """None when this path takes ``batch`` matrices ``m x n`` of ``dtype`` on ``device_type``,
    else the reason it declines."""
    if device_type != "cuda":
        return f"householder: needs a CUDA tensor, got device type {device_type!r}"
    if dtype != torch.float32:
        return f"householder: needs float32, got {dtype}"
    if n < 2 or m < n:
        return f"householder: needs m >= n >= 2, got {m}x{n}"
    if batch < 1:
        return f"householder: needs a non-empty batch, got batch {batch}"
    return None


def _warps(elements: int) -> int:
    # About 32-64 fp32 tile elements a thread; beyond 16 warps per program no gain.
    if elements <= 4096:
        return 4
    if elements <= 16384:
        return 8
    return 16


def _n_active(info: Any, B: int, device: torch.device) -> torch.Tensor | None:
    feats = getattr(info, "features", None) if info is not None else None
    if not feats:
        return None
    na = feats.get("n_active")
    if na is None:
        return None
    if na.shape != (B,) or na.device != device:
        raise ValueError(f"householder: n_active must be a ({B},) tensor on {device}, "
                         f"got shape {tuple(na.shape)} on {na.device}")
    if na.dtype != torch.int32 or not na.is_contiguous():
        na = na.to(torch.int32).contiguous()
    return na


def _check(H: torch.Tensor, tau: torch.Tensor) -> None:
    if H.dim() != 3 or H.dtype != torch.float32:
        raise ValueError(f"householder: H must be (B, m, n) float32, got shape "
                         f"{tuple(H.shape)} dtype {H.dtype}")
    B, m, n = H.shape
    if m < n or n < 1:
        raise ValueError(f"householder: needs m >= n >= 1, got H of shape {tuple(H.shape)}")
    if H.stride() != (m * n, 1, m):
        raise ValueError(f"householder: H must hold column-major matrices (H.mT contiguous, "
                         f"strides {(m * n, 1, m)}), got shape {tuple(H.shape)} strides "
                         f"{H.stride()}")
    if tau.shape != (B, n) or tau.dtype != torch.float32 or not tau.is_contiguous() \
            or tau.device != H.device:
        raise ValueError(f"householder: tau must be a contiguous ({B}, {n}) float32 tensor on "
                         f"{H.device}, got shape {tuple(tau.shape)} dtype {tau.dtype} on "
                         f"{tau.device}")


def factor_householder(H: torch.Tensor, tau: torch.Tensor, info: Any = None, *,
                       schedule: schedules.Schedule | None = None) -> None:
    """Factor ``H`` in place (geqrf), writing ``tau``. See the module docstring.

    ``schedule`` overrides :func:`adaptqr.paths.schedules.schedule_for` (for experiments).
    """
    _check(H, tau)
    B, m, n = H.shape
    if B == 0:
        return
    Ht = H.mT
    na = _n_active(info, B, H.device)
    has_na = na is not None
    na_arg = na if has_na else tau  # any pointer; unused when HAS_NA is False
    s = schedule or schedules.schedule_for(m, n)

    if s.small:
        NB = next_pow2(max(n, 16))
        MB = next_pow2(m)
        panel_reg_kernel[(B,)](Ht, tau, tau, na_arg, 0, m, n, n, 0, 1,
                               NB=NB, MB=MB, HAS_NA=has_na, WRITE_T=False,
                               num_warps=_warps(NB * MB))
        return

    nb, group = s.nb, s.group
    n_tw = triton.cdiv(n, nb)
    TW = torch.empty((B, n_tw, nb, nb), dtype=torch.float32, device=H.device)
    for g0 in range(0, n, nb * group):
        gend = min(n, g0 + nb * group)
        for k in range(g0, gend, nb):
            pw = min(nb, n - k)
            _panel(Ht, tau, TW, na_arg, has_na, B, k, m, n, pw, n_tw, nb)
            if k + pw < gend:
                _trailing(Ht, TW, na_arg, has_na, B, k, 1, m, n, k + pw, gend, n_tw, s)
        if gend < n:
            npan = triton.cdiv(gend - g0, nb)
            _trailing(Ht, TW, na_arg, has_na, B, g0, npan, m, n, gend, n, n_tw, s)


def _panel(Ht, tau, TW, na, has_na, B, k, m, n, pw, n_tw, nb):
    MB = next_pow2(m - k)
    if nb * MB <= schedules.REG_PANEL_MAX_TILE:
        panel_reg_kernel[(B,)](Ht, tau, TW, na, k, m, n, pw, k // nb, n_tw,
                               NB=nb, MB=MB, HAS_NA=has_na, WRITE_T=True,
                               num_warps=_warps(nb * MB))
    else:
        CH = max(16, schedules.REG_PANEL_MAX_TILE // nb)
        panel_chunked_kernel[(B,)](Ht, tau, TW, na, k, m, n, pw, k // nb, n_tw,
                                   NB=nb, CH=CH, HAS_NA=has_na, WRITE_T=True,
                                   num_warps=_warps(nb * CH))


def _trailing(Ht, TW, na, has_na, B, k0, npan, m, n, c_start, c_end, n_tw, s):
    bn = s.bn
    MB = next_pow2(m - k0)
    resident = bn * MB <= schedules.RESIDENT_MAX_TILE
    bm = MB if resident else s.bm
    grid = (B, triton.cdiv(c_end - c_start, bn))
    trailing_kernel[grid](Ht, TW, na, k0, npan, m, n, c_start, c_end, n_tw,
                          NB=s.nb, BN=bn, BM=max(16, bm), RESIDENT=resident, HAS_NA=has_na,
                          PREC=s.prec, num_warps=_warps(bn * bm) if resident else 4)
