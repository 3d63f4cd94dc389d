"""The dispatcher's probe: per-matrix routes, ``n_active``, ``n_nonzero`` and ``n_kept`` in two launches.

:func:`route` is what a routed plan runs before its path on the column-major ``H``
(``(B, m, n)``, holding the input). It returns the same routes and ``n_active`` as
``classify(probe(H))`` but computes only the column features routing needs (no row norms,
no last-nonzero row: a below-the-diagonal flag) and fuses the classifier into one kernel
(:mod:`adaptqr.detectors.kernels.route_kernel`), so
a 40x176 batch pays two launches instead of some forty. :func:`adaptqr.detectors.probe`
keeps the full feature set for ``explain`` and future routes.

Example::

    >>> import torch
    >>> from adaptqr.detectors import route
    >>> A = torch.randn(3, 8, 8)
    >>> A[0] = torch.triu(A[0]); A[1, :, 6:] = 0
    >>> routes, features = route(A.mT.contiguous().mT)
    >>> routes.tolist(), features["n_active"].tolist()
    ([2, 1, 0], [0, 6, 8])
"""

from __future__ import annotations

import torch

from .classify import (
    DROP_TAIL,
    FP16_BUDGET,
    FP16_EST_NB,
    FP16_EXP_RANGE,
    FP16_MAX_N,
    FP16_TARGET,
    PRESCALE_INF_EXP,
    PRESCALE_MAX_EXP,
    PRESCALE_MIN_EXP,
    PRESCALE_TARGET_EXP,
    classify,
    fp16_est_scale,
    fp16_scales,
    prescale_exponents,
    route_codes,
    tail_bound_scale,
)
from .probe import BLOCK_N, BLOCK_N_SMALL, MIN_PROGRAMS, _check, probe, use_triton

# Rows per chunk of the column kernel and its warps: a [32, 32] float32 tile over 4 warps is
# 8 elements a thread for each of its four accumulators (103 registers for sm_90, so four
# programs share an SM and keep 16 KiB of loads in flight there).
ROUTE_BLOCK_M = 32
ROUTE_WARPS = 4
# Columns per step of the one-program-per-matrix classifier: n = 4096 takes 16 steps, and a
# [256] int/float vector is a few registers per thread.
ROUTE_BLOCK_N = 256


def route(H: torch.Tensor, *, backend: str = "auto", src: torch.Tensor | None = None,
          settings=None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``(routes, {"n_active": ..., "n_nonzero": ..., "n_kept": ..., "prescale": ...[, "fp16_scale": ...]})``
    for ``H`` ``(B, m, n)``: ``(B,)`` int32 each (``prescale``: the exponent ``e`` of
    :func:`classify.prescale_exponents`, the path factors ``H * 2^e``; ``fp16_scale``:
    float32, the FP16 route's per-matrix scale or 0, present only where the route is
    offered: :func:`classify.fp16_est_scale`), on H's device.

    ``backend``: ``"auto"`` (Triton on CUDA float16/bfloat16/float32, else torch ops),
    ``"triton"`` (forced; runs on CPU tensors under ``TRITON_INTERPRET=1``) or ``"torch"``
    (``classify(probe(H))``). No host synchronization.

    ``settings``: the call's :class:`adaptqr.config.Settings` (``ADAPTQR_FP16``,
    the ``fp16_max_n`` knob; default: the current snapshot).

    ``src`` (same shape and dtype as ``H``; H column-major): copy ``src`` into ``H`` first.
    With the Triton backend the column kernel does the copy as it reads (one pass over the
    batch instead of two); otherwise :func:`adaptqr.layout.load_column_major`.
    """
    _check(H)
    B, m, n = H.shape
    if settings is None:
        from adaptqr import config

        settings = config.snapshot()
    coef = _fp16_coef(m, n, settings)
    drop = bool(settings.knobs.get("drop_tail", DROP_TAIL))
    if src is not None and src.shape != H.shape:
        raise ValueError(f"route: src of shape {tuple(src.shape)} for H of shape {tuple(H.shape)}")
    if not use_triton(H, backend, "route probe") or B * m * n == 0 or (
            src is not None and (H.stride(1) != 1 or src.dtype != H.dtype)):
        if src is not None:
            from adaptqr.layout import load_column_major

            load_column_major(src, H)
        f = probe(H, backend="torch" if backend == "torch" else "auto", drop_tail=drop)
        routes = classify(f)
        n2max = f["col_norm2"].amax(dim=-1) if n else f["col_norm2"].new_zeros(B)
        pexp = prescale_exponents(n2max, ~f["nonfinite"].bool())
        feats = {"n_active": f["n_active"], "n_nonzero": f["n_nonzero"], "n_kept": f["n_kept"],
                 "prescale": pexp}
        if coef < float("inf"):
            feats["fp16_scale"] = fp16_scales(f["col_norm1"], f["col_norm2"], routes,
                                              f["n_active"], f["n_kept"], m, pexp)
        return routes, feats
    return _route_triton(H, src, coef, drop)


def _route_triton(H: torch.Tensor, src: torch.Tensor | None, coef: float, drop: bool):
    import triton

    from .kernels.route_kernel import route_columns_kernel, route_kernel

    B, m, n = H.shape
    dev = H.device
    if H.stride(1) != 1:
        H = H.mT.contiguous().mT  # the column kernel reads columns as contiguous rows
    block_n = BLOCK_N if B * triton.cdiv(n, BLOCK_N) >= MIN_PROGRAMS else BLOCK_N_SMALL
    cols = torch.empty((2, B, n), dtype=torch.float32, device=dev)  # n1, n2
    flags = torch.empty((2, B, n), dtype=torch.int8, device=dev)    # below, bad
    s = src if src is not None else H
    route_columns_kernel[(B, triton.cdiv(n, block_n))](
        H, m, n, H.stride(0), H.stride(2), cols[0], cols[1], flags[0], flags[1],
        s, s.stride(0), s.stride(1), s.stride(2),
        BLOCK_N=block_n, BLOCK_M=ROUTE_BLOCK_M, COPY=src is not None, num_warps=ROUTE_WARPS,
    )
    out = torch.empty((5, B), dtype=torch.int32, device=dev)  # n_active, routes, n_nonzero, n_kept, e
    n_active, routes, n_nonzero, n_kept, pexp = out[0], out[1], out[2], out[3], out[4]
    fp16 = torch.empty(B, dtype=torch.float32, device=dev)
    codes = route_codes()
    route_kernel[(B,)](
        cols[0], cols[1], flags[0], flags[1], n_active, routes, n_nonzero, n_kept, fp16, pexp, n,
        min(m, n),
        tail_bound_scale(m, n), coef,
        CODE_DENSE=codes["dense"], CODE_LOWRANK=codes["lowrank"], CODE_UPPER=codes["upper"],
        BLOCK_N=ROUTE_BLOCK_N, DROP=drop, FP16_NB=FP16_EST_NB, FP16_BUDGET=FP16_BUDGET,
        FP16_TARGET=FP16_TARGET, FP16_EXP_RANGE=FP16_EXP_RANGE,
        PRESCALE_MIN_EXP=PRESCALE_MIN_EXP, PRESCALE_MAX_EXP=PRESCALE_MAX_EXP,
        PRESCALE_TARGET_EXP=PRESCALE_TARGET_EXP, PRESCALE_INF_EXP=PRESCALE_INF_EXP,
    )
    feats = {"n_active": n_active, "n_nonzero": n_nonzero, "n_kept": n_kept, "prescale": pexp}
    if coef < float("inf"):  # else no matrix can take the route: no float16 copy, no launch
        feats["fp16_scale"] = fp16
    return routes, feats


def _fp16_coef(m: int, n: int, settings) -> float:
    """:func:`fp16_est_scale`, or inf (every estimate then fails the budget: no matrix takes
    the FP16 route) when ``ADAPTQR_FP16`` is 0 or n is outside ``FP16_MIN_N .. FP16_MAX_N``."""
    max_n = settings.knobs.fp16_max_n or FP16_MAX_N
    coef = fp16_est_scale(m, n, max_n) if settings.fp16 else 0.0
    return coef if coef > 0.0 else float("inf")
