"""The qr_v2 acceptance check, per matrix, in float64 (spec/qr_v2.md, "The acceptance check").

For every matrix of the batch, with ``Q = householder_product(H, tau)`` formed in float64
from the float32 factors and ``R = triu(H)``:

* factor residual ``||R - Q^T A||_1 / (n * eps32 * ||A||_1)``; gate 20;
* orthogonality ``||Q^T Q - I||_1 / (n * eps32)``; gate 100;

``||.||_1`` is the matrix 1-norm (largest column sum of absolute values). This project's
bar is half of each gate, on every matrix.

This is a test tool, not a hot path: it synchronizes with the host. It works through the
batch in chunks of about 128 MiB per float64 temporary (64 matrices at 512 x 512), so that
every qr_v2 case fits next to the caller's data on a GPU.

Rectangular ``(m, n)`` inputs are checked too (Q is the thin ``m x min(m, n)`` factor and
the scale uses ``max(m, n)``; for tall matrices the factor residual is the larger of
``||R - Q^T A||_1`` and ``||A - Q R||_1``, since the first alone cannot see the part of A
outside the thin Q's span). For the square qr_v2 inputs this is exactly the spec.

Example::

    >>> import torch
    >>> from adaptqr.testing.check import check_geqrf
    >>> A = torch.randn(3, 16, 16)
    >>> res = check_geqrf(A, *torch.geqrf(A))
    >>> res.passes_bar, res.factor.shape
    (True, torch.Size([3]))
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from adaptqr import originals

__all__ = ["GATE_FACTOR", "GATE_ORTH", "BAR", "BAR_FACTOR", "BAR_ORTH", "CheckResult", "check_geqrf",
           "check_qr", "check_householder_product"]

EPS32 = 2.0 ** -23
#: The public gates, in units of n * eps32 (scaled residuals).
GATE_FACTOR = 20.0
GATE_ORTH = 100.0
#: This project's bar is this fraction of each gate: other seeds and inputs must pass too.
BAR = 0.5
BAR_FACTOR = GATE_FACTOR * BAR
BAR_ORTH = GATE_ORTH * BAR
#: Bytes of one float64 temporary per chunk of matrices: 64 matrices at 512x512, 1 at
#: 4096x4096. A chunk peaks at about 9 such temporaries (measured on the H200: +1.1 GiB
#: for 640x512 with 64 a chunk; +2.9 GiB for 60x1024 all at once before this bound).
CHUNK_BYTES = 128 << 20


@dataclass
class CheckResult:
    """The outcome of :func:`check_geqrf`.

    ``factor`` and ``orth`` are float64 CPU tensors ``(B,)`` of scaled residuals per
    matrix (empty when the structural checks failed); ``error`` is None or says which
    structural check (shape, dtype, device, finiteness) failed.
    """

    factor: torch.Tensor
    orth: torch.Tensor
    worst_factor: float
    worst_orth: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        """The structural checks passed (residuals are meaningful)."""
        return self.error is None

    @property
    def passes_gate(self) -> bool:
        return self.ok and self.worst_factor <= GATE_FACTOR and self.worst_orth <= GATE_ORTH

    @property
    def passes_bar(self) -> bool:
        return self.ok and self.worst_factor <= BAR_FACTOR and self.worst_orth <= BAR_ORTH

    @property
    def summary(self) -> str:
        if self.error is not None:
            return f"FAIL ({self.error})"
        verdict = "PASS" if self.passes_bar else ("GATE-ONLY" if self.passes_gate else "FAIL")
        return (f"{verdict} factor={self.worst_factor:.3g} orth={self.worst_orth:.3g} "
                f"(worst of {self.factor.numel()}; gate {GATE_FACTOR:g}/{GATE_ORTH:g}, "
                f"bar {BAR_FACTOR:g}/{BAR_ORTH:g})")

    def __str__(self) -> str:
        return self.summary


def _failed(msg: str) -> CheckResult:
    empty = torch.empty(0, dtype=torch.float64)
    return CheckResult(empty, empty, float("inf"), float("inf"), msg)


def _structure_error(A, H, tau) -> str | None:
    for name, t in (("A", A), ("H", H), ("tau", tau)):
        if not isinstance(t, torch.Tensor):
            return f"{name} must be a torch.Tensor, got {type(t).__name__}"
    if A.dim() < 2:
        return f"A must have at least 2 dims, got shape {tuple(A.shape)}"
    m, n = A.shape[-2:]
    if H.shape != A.shape:
        return f"H shape must be {tuple(A.shape)}, got {tuple(H.shape)}"
    want_tau = (*A.shape[:-2], min(m, n))
    if tuple(tau.shape) != want_tau:
        return f"tau shape must be {want_tau}, got {tuple(tau.shape)}"
    for name, t in (("H", H), ("tau", tau)):
        if t.dtype != A.dtype:
            return f"{name} dtype must be {A.dtype}, got {t.dtype}"
        if t.device != A.device:
            return f"{name} must be on {A.device}, got {t.device}"
    if not A.is_floating_point():
        return f"A must be a real floating tensor, got {A.dtype}"
    for name, t in (("H", H), ("tau", tau)):
        if not bool(torch.isfinite(t).all()):
            return f"{name} contains NaN or Inf"
    return None


def _scaled(res: torch.Tensor, denom: torch.Tensor) -> torch.Tensor:
    # A zero matrix has ||A||_1 = 0: an exact zero residual scores 0, anything else inf,
    # never 0/0 = NaN.
    safe = torch.where(denom > 0, denom, torch.ones_like(denom))
    out = res / safe
    return torch.where(denom > 0, out, torch.where(res == 0, torch.zeros_like(res), torch.full_like(res, float("inf"))))


def check_geqrf(A: torch.Tensor, H: torch.Tensor, tau: torch.Tensor, *, chunk: int | None = None) -> CheckResult:
    """Check ``(H, tau)`` as a geqrf factorization of ``A``, matrix by matrix, in float64.

    A: ``(..., m, n)`` real float (qr_v2: float32 ``(B, n, n)``); H: same shape, dtype and
    device; tau: ``(..., min(m, n))``. Neither is modified. ``chunk``: matrices checked
    at once (default: as many as fit in ``CHUNK_BYTES`` a float64 temporary).

    >>> import torch
    >>> A = torch.randn(2, 8, 8)
    >>> H, tau = torch.geqrf(A)
    >>> check_geqrf(A, H, tau * 2).passes_gate
    False
    """
    err = _structure_error(A, H, tau)
    if err is not None:
        return _failed(err)
    m, n = A.shape[-2:]
    k = min(m, n)
    H3 = H.reshape(-1, m, n)
    t2 = tau.reshape(-1, k)

    def factors(s, e):
        h = H3[s:e].double()
        return originals.householder_product(h[:, :, :k], t2[s:e].double()), torch.triu(h[:, :k, :])

    return _score(A, factors, chunk)


def check_qr(A: torch.Tensor, Q: torch.Tensor, R: torch.Tensor, *, chunk: int | None = None) -> CheckResult:
    """Check a reduced ``(Q, R)`` (``Q`` ``(..., m, k)``, ``R`` ``(..., k, n)``, ``k = min(m,
    n)``) of ``A`` as :func:`check_geqrf` checks geqrf's: the same residuals and gates.

    >>> import torch
    >>> A = torch.randn(2, 8, 5)
    >>> check_qr(A, *torch.linalg.qr(A)).passes_bar
    True
    """
    for name, t in (("A", A), ("Q", Q), ("R", R)):
        if not isinstance(t, torch.Tensor):
            return _failed(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    m, n = A.shape[-2:]
    k = min(m, n)
    if Q.shape != (*A.shape[:-2], m, k) or R.shape != (*A.shape[:-2], k, n):
        return _failed(f"Q, R shapes must be {(*A.shape[:-2], m, k)} and {(*A.shape[:-2], k, n)}, "
                       f"got {tuple(Q.shape)} and {tuple(R.shape)}")
    if not (bool(torch.isfinite(Q).all()) and bool(torch.isfinite(R).all())):
        return _failed("Q or R contains NaN or Inf")
    Q3, R3 = Q.reshape(-1, m, k), R.reshape(-1, k, n)
    return _score(A, lambda s, e: (Q3[s:e].double(), R3[s:e].double()), chunk)


def _score(A: torch.Tensor, factors, chunk: int | None) -> CheckResult:
    """The residuals of every matrix of ``A`` against ``factors(s, e)``: float64 ``(Q, R)``
    of matrices ``[s, e)``."""
    m, n = A.shape[-2:]
    k = min(m, n)
    scale_n = max(m, n, 1)
    A3 = A.reshape(-1, m, n)
    B = A3.shape[0]
    if chunk is None:
        chunk = max(1, CHUNK_BYTES // (max(m, 1) * max(n, 1) * 8))
    factor = torch.empty(B, dtype=torch.float64)
    orth = torch.empty(B, dtype=torch.float64)
    for s in range(0, B, chunk):
        e = min(B, s + chunk)
        a = A3[s:e].double()
        q, r = factors(s, e)  # (b, m, k), (b, k, n)
        qt = q.mT
        fres = torch.linalg.matrix_norm(r - qt @ a, ord=1)
        if m > n:
            # The thin Q of a tall matrix makes R - Q^T A blind to the part of A outside Q's
            # span (any Q orthogonal to A with R = 0 would pass): also require A = Q R.
            fres = torch.maximum(fres, torch.linalg.matrix_norm(a - q @ r, ord=1))
        del r
        anorm = torch.linalg.matrix_norm(a, ord=1)
        del a
        eye = torch.eye(k, dtype=torch.float64, device=q.device)
        ores = torch.linalg.matrix_norm(qt @ q - eye, ord=1)
        del q, qt
        factor[s:e] = _scaled(fres, scale_n * EPS32 * anorm).cpu()
        orth[s:e] = (ores / (scale_n * EPS32)).cpu()
    worst_f = float(factor.max()) if B else 0.0
    worst_o = float(orth.max()) if B else 0.0
    return CheckResult(factor, orth, worst_f, worst_o)


def check_householder_product(H: torch.Tensor, tau: torch.Tensor, Q: torch.Tensor) -> CheckResult:
    """Check ``Q = householder_product(H, tau)`` (float32) per matrix against the same
    product in float64: "factor" is ``||Q - Q64||_1 / (max(m, n) eps32)``, "orth" ``||Q^T Q -
    I||_1 / (max(m, n) eps32)``, with :func:`check_geqrf`'s gates.

    >>> import torch
    >>> h, tau = torch.geqrf(torch.randn(3, 9, 6))
    >>> check_householder_product(h, tau, torch.linalg.householder_product(h, tau)).passes_bar
    True
    """
    m, n = H.shape[-2:]
    if Q.shape != H.shape:
        return _failed(f"Q shape must be {tuple(H.shape)}, got {tuple(Q.shape)}")
    if not bool(torch.isfinite(Q).all()):
        return _failed("Q contains NaN or Inf")
    scale = max(m, n, 1) * EPS32
    B = H.reshape(-1, m, n).shape[0]
    chunk = max(1, CHUNK_BYTES // (max(m, 1) * max(n, 1) * 8))
    H3, Q3, t2 = H.reshape(-1, m, n), Q.reshape(-1, m, n), tau.reshape(B, -1)
    factor = torch.empty(B, dtype=torch.float64)
    orth = torch.empty(B, dtype=torch.float64)
    eye = torch.eye(n, dtype=torch.float64, device=Q.device)
    for s in range(0, B, chunk):
        e = min(B, s + chunk)
        q = Q3[s:e].double()
        q64 = originals.householder_product(H3[s:e].double(), t2[s:e].double())
        factor[s:e] = (torch.linalg.matrix_norm(q - q64, ord=1) / scale).cpu()
        orth[s:e] = (torch.linalg.matrix_norm(q.mT @ q - eye, ord=1) / scale).cpu()
    return CheckResult(factor, orth, float(factor.max()) if B else 0.0, float(orth.max()) if B else 0.0)
