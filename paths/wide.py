"""The ``wide`` path: geqrf of wide ``m < n`` CUDA float32 matrices (issue 26).

LAPACK's order for a wide matrix: the leading ``m x m`` block is factored (the householder
path's kernels, :func:`~adaptqr.paths.householder.factor_householder`), and its ``Q^T`` is
applied to the other ``n - m`` columns (:func:`adaptqr.qform.apply_qt`, blocked compact WY
in a Triton kernel). Same ``(a, tau)`` layout as torch.geqrf: R is ``m x n``, ``tau`` has
``m`` entries. torch.geqrf on CUDA loops on the host over the batch (64x256x1024: 366 ms).

``Q^T`` goes to the other columns ``WIDE_CHUNK_PANELS`` panels at a time on a side stream,
as soon as the factorization has made them (:func:`adaptqr.qform.apply_qt_panels`), beside
the rest of the factorization.

Without the detectors' features for the leading block (they describe the whole matrix),
the block takes the default route: no low-rank skipping, no FP16 trailing matrix. A matrix
of extreme scale is prescaled as a whole (:func:`~adaptqr.paths.prescale.own_exponents`),
so that the block and the other columns keep one scale.

Example::

    >>> import torch, adaptqr
    >>> if torch.cuda.is_available():
    ...     a, tau = adaptqr.geqrf(torch.randn(8, 64, 256, device="cuda"))
"""

from __future__ import annotations

import torch

from adaptqr.detectors import finish_tail, route
from adaptqr.paths.lanes import NORMAL_PRIORITY, Lanes, OneLane
from adaptqr.paths.prescale import Given, own_exponents, prescale, unscale
from adaptqr.qform import (
    QFORM_NB,
    apply_qt,
    apply_qt_in_triton,
    apply_qt_panels,
    apply_qt_workspace,
)
from adaptqr.registry import Path

NAME = "wide"
#: Above torch's (0), below householder's (100), which declines m < n.
PRIORITY = 90
#: Panels (of ``QFORM_NB`` columns) a ``Q^T`` launch applies to the other columns while the
#: leading block is factored; 0: one launch after the factorization. At 8x1024x4096 that
#: launch is 2.4 of 6.0 ms (EXPERIMENTS.md D5) and the block's factorization leaves SMs
#: idle (8 matrices). Run 0644, ms (0 / 4 / 8 / 16 panels): 8x1024x4096 5.051 / 4.470 /
#: 4.430 / 4.419, 64x256x1024 0.997 / 0.981 / 0.993 / 0.995. 8 is the middle of the flat
#: part. Knob ``wide_chunk`` (EXPERIMENTS.md W3).
WIDE_CHUNK_PANELS = 8
#: One matrix: 4 panels a launch. The factorization leaves more SMs idle, and the last
#: range (after the last panel) is the tail: run 1347 (``linalg.qr`` by QF14, ms, ranges of
#: 8 / 4 / 2): 1x512 0.994 / 0.949 / 0.938, 1x768 1.504 / 1.481 / 1.481, 1x1024 2.082 /
#: 2.048 / 2.069 (EXPERIMENTS.md QF14); W3's 64x256x1024 was 0.981 at 4 against 0.993.
WIDE_CHUNK_PANELS_ONE = 4
#: 1: the leading block is probed (the route probe's ``n_active`` / ``n_nonzero``), so that
#: a rank-deficient block skips its negligible tail as the householder path's low-rank
#: route does: its later reflectors get ``tau = 0`` (identities for the other columns too)
#: and :func:`~adaptqr.detectors.finish_tail` clears the tail. QF14's ``[A | c I]`` of a
#: rank-deficient ``A`` lost that skipping (1x1024 rankdef 1.98 -> 2.21 ms). Run 0023
#: (``linalg.qr``, ms, off / on): 1x1024 rankdef 1.978 / 1.606, 2x1024 clustered 1.984 /
#: 1.778; dense 1.6-2.7 % slower (1x1536 3.147 / 3.191, 4x1024 2.222 / 2.282); run 0022:
#: 8x1024x4096 3.838 / 3.903. Knob ``wide_probe`` (EXPERIMENTS.md W6).
WIDE_PROBE = 1


def capable(spec) -> str | None:
    from adaptqr.paths.householder import capable as square_capable

    if spec.m >= spec.n:
        return f"wide: needs m < n, got {spec.m}x{spec.n}"
    return square_capable(spec.batch, spec.m, spec.m, spec.dtype, spec.device_type)


def factor_wide(H: torch.Tensor, tau: torch.Tensor, info=None) -> None:
    """Factor wide ``H`` ``(B, m, n)`` (column-major, ``m < n``) in place; ``tau``: ``(B, m)``."""
    from adaptqr import config
    from adaptqr.paths.householder import factor_householder

    settings = getattr(info, "settings", None) or config.snapshot()
    B, m, _ = H.shape
    e = own_exponents(H)
    prescale(H, e)
    # The kernels take whole column-major batches: the leading block gets its own buffer.
    lead = torch.empty((B, m, m), dtype=H.dtype, device=H.device).mT  # strides (m*m, 1, m)
    lead.copy_(H[..., :m])
    C = H[..., m:]
    # The block's own exponents: H's come from its largest entry, which may sit in the
    # other columns (linalg.qr's [s A | I] keeps them at one scale, D6), and the block's
    # "f16x3" products need its column norms in the prescaling window (EXPERIMENTS.md T10).
    given = Given(own_exponents(lead), settings)
    n_active = _probe_block(lead, given, settings)
    chunk = settings.knobs.get("wide_chunk", WIDE_CHUNK_PANELS_ONE if B == 1 else WIDE_CHUNK_PANELS)
    if chunk and apply_qt_in_triton(lead, tau, C):
        _factor_overlapped(lead, tau, C, given, chunk, H[..., :m])
    else:
        factor_householder(lead, tau, given)
        apply_qt(lead, tau, C, settings.knobs)
        H[..., :m] = lead
    if n_active is not None:
        f = given.features
        finish_tail(H[..., :m], tau, n_active, n_kept=f["n_kept"], n_nonzero=f["n_nonzero"])
    unscale(H, e)


def _probe_block(lead: torch.Tensor, given: Given, settings) -> torch.Tensor | None:
    """With :data:`WIDE_PROBE` (and the detectors on): the block's ``n_active`` ``(B,)``, also
    put with ``n_nonzero`` into ``given``'s features for the householder path; else None."""
    if not (settings.knobs.get("wide_probe", WIDE_PROBE) and settings.detect):
        return None
    _, feats = route(lead, settings=settings)
    given.features.update(n_active=feats["n_active"], n_nonzero=feats["n_nonzero"], n_kept=feats["n_kept"])
    return feats["n_active"]


def _factor_overlapped(lead: torch.Tensor, tau: torch.Tensor, C: torch.Tensor, given,
                       chunk: int, out: torch.Tensor) -> None:
    """Factor ``lead`` ``(B, m, m)`` and apply its ``Q^T`` to ``C`` ``(B, m, c)``, ``chunk``
    panels at a time as the factorization makes them: on a second stream of normal
    priority that waits for each range's panels (on the GPU; in issue order off it, under
    the interpreter). The panels' ``T`` buffer is allocated before that stream starts:
    nothing is allocated on it. ``out``: where the factored block is copied, on the
    caller's stream while the side stream still applies the last panels (both only read
    the block, and ``C`` is other memory): ~30 us off 8x1024x4096's chain
    (EXPERIMENTS.md W5)."""
    from adaptqr.paths.householder import factor_householder

    m = lead.shape[-1]
    TW = apply_qt_workspace(lead)
    n_p = TW.shape[1]
    lanes = Lanes(lead.device, NORMAL_PRIORITY) if lead.is_cuda else OneLane()
    lanes.fork()
    done = 0

    def after_panels(k: int) -> None:
        nonlocal done
        p1 = n_p if k >= m else k // QFORM_NB
        if p1 - done < chunk and not (p1 == n_p and p1 > done):
            return
        # None: the current stream, the one the panels were issued on.
        lanes.wait(lanes.hi, lanes.record(None))
        with lanes.on_hi():
            apply_qt_panels(lead, tau, C, TW, done, p1, given.settings.knobs)
        done = p1

    factor_householder(lead, tau, given, after_panels=after_panels)
    out.copy_(lead)
    lanes.join()


PATH = Path(
    name=NAME,
    impl=factor_wide,
    supports=capable,
    priority=PRIORITY,
    capturable=True,
    description="wide m < n: householder on the leading m x m block, then Q^T on the rest (CUDA float32)",
)
