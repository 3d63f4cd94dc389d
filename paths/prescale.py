"""Per-matrix prescaling (issue 22): the householder path factors ``A * 2^e`` instead of ``A``
where ``A``'s scale is extreme, and scales R back.

``e = features["prescale"][b]`` comes from :func:`adaptqr.detectors.route`
(:func:`adaptqr.detectors.classify.prescale_exponents`: 0 unless the largest column 2-norm
is outside ``[2^-2, 2^12)``, the window the "f16x3" products need). Householder vectors
and tau are invariant under a scaling by a power of two and R scales with it, so
:func:`prescale` before the factorization and :func:`unscale` after it give geqrf of ``A``
itself, without a subnormal or overflowing intermediate (and the low-rank tail, which only
clears entries below the diagonal, may come before or after). No host synchronization: a
Triton kernel on CUDA (matrices with ``e == 0`` only read ``e``), ``torch.ldexp``-like
products elsewhere.

Example::

    >>> import torch
    >>> from adaptqr.paths.prescale import prescale, unscale
    >>> H = (torch.ones(2, 3, 3) * 1e-40).mT.contiguous().mT
    >>> e = torch.tensor([0, 136], dtype=torch.int32)
    >>> prescale(H, e); float(H[1, 0, 0]) > 1e-3, float(H[0, 0, 0]) == float(torch.tensor(1e-40))
    (True, True)
    >>> unscale(H, e); bool((H[1].triu() == H[0].triu()).all())
    True
"""

from __future__ import annotations

import math

import torch

# Column-major tiles of [32 columns, 128 rows]; at most this many programs a matrix (a
# matrix that needs scaling is rare: the others exit after one load).
BLOCK_C = 32
BLOCK_M = 128
PROGRAMS_PER_MATRIX = 8


def times_pow2(x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """``x * 2^e`` (``e`` integer, of any sign up to 2^8, broadcast against ``x``) as two
    exact products: ``2^e`` alone may leave float32's range."""
    e = e.to(torch.int64)
    e1 = torch.div(e, 2, rounding_mode="floor")
    return (x * torch.pow(2.0, e1.to(x.dtype))) * torch.pow(2.0, (e - e1).to(x.dtype))


class Given:
    """A path ``info`` that carries only the exponents ``e`` (``(B,)`` int32): for a caller that
    prescaled already (``e = 0``) or chose them, so that the householder path neither reads
    the batch for its own (:func:`own_exponents`) nor drops its reflector floor.

    >>> import torch
    >>> Given(torch.zeros(2, dtype=torch.int32)).features["prescale"].tolist()
    [0, 0]
    """

    def __init__(self, e: torch.Tensor, settings=None):
        self.features = {"prescale": e}
        # The caller's settings snapshot (adaptqr.config.Settings), so that the knobs the
        # path reads are the call's, not whatever the environment holds by then.
        self.settings = settings


def own_exponents(H: torch.Tensor) -> torch.Tensor:
    """``(B,)`` int32 exponents for ``H`` ``(B, m, n)`` without the probe's column norms: from
    each matrix's largest entry (exact for subnormal and huge entries, where a sum of
    squares under- or overflows) times ``sqrt(m)``, a bound on its largest column norm, by
    :func:`adaptqr.detectors.classify.prescale_exponents`: a matrix is then factored with
    its largest column norm below ``2^PRESCALE_MAX_EXP``, as the "f16x3" products need.

    >>> import torch
    >>> own_exponents(torch.full((2, 4, 4), 1e-40) * torch.tensor([1.0, 1e40]).view(2, 1, 1)).tolist()
    [136, 0]
    """
    from adaptqr.detectors.classify import prescale_exponents

    # One reduction over H, no |H| temporary (the wide path's 8x1024x4096: abs then amax
    # were 64 + 41 us, EXPERIMENTS.md W4). NaN propagates as amax's does.
    amax = torch.linalg.vector_norm(H, ord=float("inf"), dim=(-2, -1))
    return prescale_exponents(amax * math.sqrt(max(H.shape[-2], 1)), torch.isfinite(amax))


def _apply(H: torch.Tensor, e: torch.Tensor, sign: int, upper: bool) -> None:
    if H.dim() != 3 or e.shape != (H.shape[0],):
        raise ValueError(f"prescale: H (B, m, n) and e (B,), got {tuple(H.shape)} and "
                         f"{tuple(e.shape)}")
    B, m, n = H.shape
    if B * m * n == 0:
        return
    if H.is_cuda and H.stride() == (m * n, 1, m):
        import triton

        from adaptqr.paths.kernels.scale import scale_kernel

        grid = (B, min(PROGRAMS_PER_MATRIX, triton.cdiv(n, BLOCK_C)))
        scale_kernel[grid](H.mT, e.to(torch.int32).contiguous(), m, n, SIGN=sign, UPPER=upper,
                           BLOCK_C=BLOCK_C, BLOCK_M=BLOCK_M, num_warps=4)
        return
    scaled = times_pow2(H, e.view(B, 1, 1) * sign)
    if upper:
        keep = torch.ones(m, n, dtype=torch.bool, device=H.device).triu()
        scaled = torch.where(keep, scaled, H)
    H.copy_(scaled)


def prescale(H: torch.Tensor, e: torch.Tensor) -> None:
    """``H[b] *= 2^e[b]`` in place (``H``: ``(B, m, n)``; ``e``: ``(B,)`` int32)."""
    _apply(H, e, 1, False)


def unscale(H: torch.Tensor, e: torch.Tensor) -> None:
    """``R`` (the entries on and above the diagonal of ``H[b]``) ``*= 2^-e[b]`` in place."""
    _apply(H, e, -1, True)
