"""One pass over a batch of matrices -> per-column and per-matrix features, on the device.

:func:`probe` is what the dispatcher calls on the column-major ``H`` (``(B, m, n)``, holding
the input) before any path runs. It never synchronizes with the host, so it can sit inside
a captured CUDA graph. On CUDA float16/bfloat16/float32 tensors it runs one Triton kernel
(:mod:`adaptqr.detectors.kernels.probe_kernel`); elsewhere (CPU, float64, complex, no Triton)
a torch-ops fallback computes the same features.

Features (``k = min(m, n)``; norms are float32, or float64 for float64/complex128 input):

=====================  ==========  ===================================================
name                   shape       meaning
=====================  ==========  ===================================================
``col_norm1``          (B, n)      column 1-norms
``col_norm2``          (B, n)      column 2-norms (scaled: no overflow at 1e30, no
                                   underflow at 1e-30)
``col_maxabs``         (B, n)      column max abs
``col_last_nz``        (B, n)      int32, last row holding a nonzero, -1 if none
``col_lower_zero``     (B, n)      bool, rows i > j of column j are all exactly zero
``col_nonfinite``      (B, n)      bool, column holds a NaN or Inf
``row_norm2``          (B, m)      row 2-norms (scaled)
``norm1``              (B,)        ||A||_1, the largest column 1-norm
``col_norm_max/min``   (B,)        largest / smallest nonzero column 2-norm
``row_norm_max/min``   (B,)        largest / smallest nonzero row 2-norm
``col_range``          (B,)        col_norm_max / col_norm_min (1 for a zero matrix)
``row_range``          (B,)        row_norm_max / row_norm_min (1 for a zero matrix)
``lower_zero``         (B,)        bool, strictly-lower part exactly zero (upper
                                   triangular), over the k columns that have one
``lower_bandwidth``    (B,)        int32, max_j (last nonzero row of column j) - j, >= 0
``nonfinite``          (B,)        bool, the matrix holds a NaN or Inf
``n_active``           (B,)        int32, leading columns to factor (see
                                   :func:`adaptqr.detectors.classify.active_columns`)
``n_nonzero``          (B,)        int32, columns from this one on are exactly zero
                                   (:func:`adaptqr.detectors.classify.nonzero_columns`)
``n_kept``             (B,)        int32, columns from this one on are zero in the
                                   result: exactly zero, or a dropped negligible tail
                                   (:func:`adaptqr.detectors.classify.kept_columns`)
``tail_bound``         (B,)        the column 2-norm at or below which a trailing
                                   column is negligible
=====================  ==========  ===================================================

Norms count the finite entries only and are then set to NaN in a column that holds a NaN
or Inf, so NaN reaches every norm-derived feature of that matrix.

Example::

    >>> import torch
    >>> from adaptqr.detectors import probe
    >>> A = torch.randn(4, 6, 6)
    >>> A[:, :, 4:] = 0                      # a zero tail of two columns
    >>> H = A.mT.contiguous().mT             # column-major, as the dispatcher holds it
    >>> f = probe(H)
    >>> f["n_active"].tolist()
    [4, 4, 4, 4]
"""

from __future__ import annotations

import torch

from .classify import DROP_TAIL, active_columns, kept_columns, nonzero_columns, tail_bound

# Column tile of one program. 32 columns x 128-row chunks = 16 KiB of float32 a load, and
# 640x512 gives 10240 programs; below ~4 programs per SM of an H200 (132 SMs) we halve the
# tile so the few-but-large batches (2x4096: 256 programs at 32) still fill the GPU.
BLOCK_N = 32
BLOCK_N_SMALL = 16
MIN_PROGRAMS = 4 * 132
BLOCK_M = 128
# Rows merged per program of the row-norm combine kernel.
COMBINE_BLOCK_M = 256

_TRITON_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _triton_available() -> bool:
    try:
        import triton  # noqa: F401
    except Exception:  # pragma: no cover - depends on the environment
        return False
    return True


def use_triton(H: torch.Tensor, backend: str, what: str) -> bool:
    """Whether ``what`` (probe, route) runs its Triton kernels on ``H`` for ``backend``.

    ``"auto"``: on CUDA float16/bfloat16/float32 when Triton imports; ``"triton"``: always
    (CPU tensors under ``TRITON_INTERPRET=1``), a ``TypeError`` for other dtypes; ``"torch"``:
    never.
    """
    if backend not in ("auto", "triton", "torch"):
        raise ValueError(f"{what} backend must be 'auto', 'triton' or 'torch', got {backend!r}")
    if backend == "triton" and H.dtype not in _TRITON_DTYPES:
        raise TypeError(f"the Triton {what} takes float16/bfloat16/float32, got dtype {H.dtype}")
    return backend == "triton" or (
        backend == "auto" and H.is_cuda and H.dtype in _TRITON_DTYPES and _triton_available()
    )


def _check(H: torch.Tensor) -> None:
    if H.dim() != 3:
        raise ValueError(f"probe expects a (B, m, n) batch, got shape {tuple(H.shape)}")
    if not (H.dtype.is_floating_point or H.dtype.is_complex):
        raise TypeError(f"probe expects a floating or complex tensor, got dtype {H.dtype}")


def _norm_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype in (torch.float64, torch.complex128) else torch.float32


def _scaled_norm(a: torch.Tensor, dim: int) -> torch.Tensor:
    """2-norm of the nonnegative ``a`` along ``dim``, computed on ``a / max`` (no overflow)."""
    mx = a.amax(dim=dim, keepdim=True)
    safe = torch.where(mx > 0, mx, torch.ones_like(mx))
    return (mx * torch.linalg.vector_norm(a / safe, dim=dim, keepdim=True)).squeeze(dim)


def _raw_torch(H: torch.Tensor) -> dict[str, torch.Tensor]:
    """The per-column and per-row raw features in torch ops (any device, any dtype)."""
    B, m, n = H.shape
    fdt = _norm_dtype(H.dtype)
    x = H.abs().to(fdt)
    bad = ~torch.isfinite(x)
    a = torch.where(bad, torch.zeros((), dtype=fdt, device=H.device), x)
    rows = torch.arange(m, device=H.device, dtype=torch.int32).view(1, m, 1)
    nz = H != 0
    last = torch.where(nz, rows, torch.full_like(rows, -1))
    if m == 0:
        last_nz = torch.full((B, n), -1, dtype=torch.int32, device=H.device)
    else:
        last_nz = last.amax(dim=1).to(torch.int32)
    return {
        "col_norm1": a.sum(dim=1),
        "col_norm2": _scaled_norm(a, 1) if m else torch.zeros((B, n), dtype=fdt, device=H.device),
        "col_maxabs": a.amax(dim=1) if m else torch.zeros((B, n), dtype=fdt, device=H.device),
        "col_last_nz": last_nz,
        "col_nonfinite": bad.any(dim=1),
        "row_norm2": _scaled_norm(a, 2) if n else torch.zeros((B, m), dtype=fdt, device=H.device),
    }


def _raw_triton(H: torch.Tensor) -> dict[str, torch.Tensor]:
    """The same raw features from one Triton pass (float16/bfloat16/float32 input)."""
    import triton

    from .kernels.probe_kernel import combine_rows_kernel, probe_columns_kernel

    B, m, n = H.shape
    dev = H.device
    block_n = BLOCK_N if B * triton.cdiv(n, BLOCK_N) >= MIN_PROGRAMS else BLOCK_N_SMALL
    T = triton.cdiv(n, block_n)
    n1 = torch.empty((B, n), dtype=torch.float32, device=dev)
    n2 = torch.empty_like(n1)
    mx = torch.empty_like(n1)
    last = torch.empty((B, n), dtype=torch.int32, device=dev)
    bad = torch.empty((B, n), dtype=torch.int8, device=dev)
    rmax = torch.empty((B, T, m), dtype=torch.float32, device=dev)
    rss = torch.empty_like(rmax)
    row_norm2 = torch.empty((B, m), dtype=torch.float32, device=dev)
    sb, sr, sc = H.stride()
    probe_columns_kernel[(B, T)](
        H, m, n, sb, sr, sc, n1, n2, mx, last, bad, rmax, rss, T,
        BLOCK_N=block_n, BLOCK_M=BLOCK_M,
    )
    combine_rows_kernel[(B, triton.cdiv(m, COMBINE_BLOCK_M))](
        rmax, rss, row_norm2, m, T, BLOCK_M=COMBINE_BLOCK_M,
    )
    return {
        "col_norm1": n1,
        "col_norm2": n2,
        "col_maxabs": mx,
        "col_last_nz": last,
        "col_nonfinite": bad.bool(),
        "row_norm2": row_norm2,
    }


def _nonzero_min(x: torch.Tensor) -> torch.Tensor:
    """Smallest nonzero entry along the last dim (inf where all are zero)."""
    inf = torch.full((), float("inf"), dtype=x.dtype, device=x.device)
    return torch.where(x > 0, x, inf).amin(dim=-1) if x.shape[-1] else inf.expand(x.shape[:-1])


def _amax0(x: torch.Tensor) -> torch.Tensor:
    """Max along the last dim, 0 for an empty dim."""
    if x.shape[-1] == 0:
        return torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    return x.amax(dim=-1)


def _range(mx: torch.Tensor, mn: torch.Tensor) -> torch.Tensor:
    # A zero matrix has no nonzero norm: range 1 (nothing to lose in any precision).
    return torch.where(mx > 0, mx / mn, torch.ones_like(mx))


def _finish(raw: dict[str, torch.Tensor], m: int, n: int, drop_tail: bool) -> dict[str, torch.Tensor]:
    """Per-matrix features from the raw per-column / per-row ones (small torch ops)."""
    f = dict(raw)
    col_bad = f["col_nonfinite"]
    nan = torch.full((), float("nan"), dtype=f["col_norm2"].dtype, device=col_bad.device)
    for name in ("col_norm1", "col_norm2", "col_maxabs"):
        f[name] = torch.where(col_bad, nan, f[name])
    bad = col_bad.any(dim=-1)
    f["nonfinite"] = bad
    f["row_norm2"] = torch.where(bad[:, None], nan, f["row_norm2"])

    k = min(m, n)
    cols = torch.arange(n, device=col_bad.device, dtype=torch.int32)
    col_lower_zero = f["col_last_nz"] <= cols
    f["col_lower_zero"] = col_lower_zero
    f["lower_zero"] = col_lower_zero[:, :k].all(dim=-1)
    f["lower_bandwidth"] = _amax0(f["col_last_nz"] - cols).clamp_min(0).to(torch.int32)

    f["norm1"] = _amax0(f["col_norm1"])
    f["col_norm_max"] = _amax0(f["col_norm2"])
    f["col_norm_min"] = _nonzero_min(f["col_norm2"])
    f["row_norm_max"] = _amax0(f["row_norm2"])
    f["row_norm_min"] = _nonzero_min(f["row_norm2"])
    # NaN must survive the "> 0" tests inside these helpers.
    for name in ("col_norm_min", "row_norm_min"):
        f[name] = torch.where(bad, nan, f[name])
    f["col_range"] = torch.where(bad, nan, _range(f["col_norm_max"], f["col_norm_min"]))
    f["row_range"] = torch.where(bad, nan, _range(f["row_norm_max"], f["row_norm_min"]))

    f["tail_bound"] = tail_bound(f["norm1"], m, n)
    f["n_active"] = active_columns(f, m, n)
    f["n_nonzero"] = nonzero_columns(f, n)
    f["n_kept"] = kept_columns(f, m, n, drop_tail)
    return f


def probe(H: torch.Tensor, *, backend: str = "auto", drop_tail: bool = DROP_TAIL) -> dict[str, torch.Tensor]:
    """Features of every matrix of ``H`` ``(B, m, n)`` in one pass, as device tensors.

    ``backend``: ``"auto"`` (Triton on CUDA float16/bfloat16/float32, torch ops otherwise),
    ``"triton"`` (forced; also runs on CPU tensors under ``TRITON_INTERPRET=1``) or
    ``"torch"``; ``drop_tail``: whether ``n_kept`` drops a negligible tail (the knob of
    that name). See the module docstring for the feature names.
    """
    _check(H)
    B, m, n = H.shape
    if use_triton(H, backend, "probe") and B * m * n > 0:
        raw = _raw_triton(H)
    else:
        raw = _raw_torch(H)
    return _finish(raw, m, n, drop_tail)
