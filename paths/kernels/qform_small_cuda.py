"""Q of small matrices in CUDA C (cupy): one CTA a matrix, one thread a column of Q, for
columns of at most :data:`MAX_ROWS` rows (EXPERIMENTS.md QF23).

Same contract as :func:`adaptqr.paths.kernels.qform.qform_kernel` on one matrix's columns:
``Qt[b, c, :] = (H_1 ... H_k e_c)^T`` for ``c < n``, from the reflectors in ``Ht`` ``(B, n, m)``
contiguous (row ``j`` of ``Ht[b]`` is column ``j`` of ``H``: ``v_j`` below its unit entry)
and ``TAU`` ``(B, k)``; ``Qt`` ``(B, n, m)`` contiguous.

Why: at these sizes (20x32: a few microseconds of GPU work) ``householder_product`` is
bound by the host, and a Triton launch costs the host tens of microseconds more than a cupy
launch of a compiled kernel (its binder, its cache key, its launch metadata, on each call).
The column's reflections need no exchange between threads: thread ``c`` holds column ``c``
in registers (``MR`` of them, ``m`` rounded up) and applies ``H_j`` for ``j`` from
``min(c, k - 1)`` down (those above leave ``e_c`` as it is), each a dot product and an
update of its own rows, ``v_j`` and ``tau`` read from
shared memory (the same address for every thread: a broadcast). Products in float32 FMA; a
reflector with ``tau == 0`` is skipped, as LAPACK's ``larf`` does.

Example (GPU with cupy)::

    >>> from adaptqr.paths.kernels import qform_small_cuda
    >>> qform_small_cuda.available() in (True, False)
    True
"""

from __future__ import annotations

import functools

import numpy as np
import torch

#: The longest column the kernel holds (rows; ``qform.QFORM_RESIDENT_ROWS``'s): the column
#: in registers, the reflectors (at most MAX_ROWS x MAX_ROWS floats, 16 KB) in shared memory.
MAX_ROWS = 64

SRC = r"""
// MR (the column's registers, a power of two >= m) comes from the compile options.
extern "C" __global__ void __launch_bounds__(MR)
qform_small(const float* __restrict__ Ht, const float* __restrict__ TAU, float* __restrict__ Qt,
            int m, int n, int k) {
    __shared__ float hs[MR * MR];  // reflector j's rows at hs[j * m ...]
    __shared__ float ts[MR];
    const int b = blockIdx.x, c = threadIdx.x;
    const float* hb = Ht + (long long)b * n * m;
    for (int e = c; e < k * m; e += blockDim.x) hs[e] = hb[e];
    for (int e = c; e < k; e += blockDim.x) ts[e] = TAU[(long long)b * k + e];
    __syncthreads();
    if (c >= n) return;
    float q[MR];
#pragma unroll
    for (int i = 0; i < MR; ++i) q[i] = i == c ? 1.0f : 0.0f;
    // H_j leaves e_c as it is for j > c (v_j is zero above row j).
    for (int j = c < k - 1 ? c : k - 1; j >= 0; --j) {
        const float t = ts[j];
        if (t == 0.0f) continue;
        const float* v = hs + j * m;
        // Four partial sums: the dot product's chain a quarter as long.
        float w[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int i = 0; i < MR; ++i) {
            const float vi = i == j ? 1.0f : (i > j && i < m ? v[i] : 0.0f);
            w[i & 3] += vi * q[i];
        }
        const float tw = t * ((w[0] + w[1]) + (w[2] + w[3]));
#pragma unroll
        for (int i = 0; i < MR; ++i) {
            const float vi = i == j ? 1.0f : (i > j && i < m ? v[i] : 0.0f);
            q[i] -= tw * vi;
        }
    }
    float* out = Qt + ((long long)b * n + c) * m;
#pragma unroll
    for (int i = 0; i < MR; ++i)
        if (i < m) out[i] = q[i];
}
"""


def rows_of(m: int) -> int:
    """``MR``: the column's registers for ``m`` rows, a power of two from 16.

    >>> rows_of(20), rows_of(32), rows_of(3)
    (32, 32, 16)
    """
    return max(16, 1 << (m - 1).bit_length())


def applies(A: torch.Tensor) -> bool:
    """Whether the kernel takes the Q of ``A`` ``(*, m, n)``: CUDA, ``m`` at most
    :data:`MAX_ROWS`, and the kernel available (:func:`available`)."""
    return A.is_cuda and A.shape[-2] <= MAX_ROWS and available()


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """Whether cupy imports, a CUDA device is there and the kernel compiles for it (once a
    process): else the Triton kernel forms these Q factors, with one warning logged."""
    if not torch.cuda.is_available():
        return False
    try:
        import cupy  # noqa: F401
    except Exception:
        return False
    from adaptqr.paths.kernels.panel_cuda import compiles

    return compiles(lambda: _kernel(MAX_ROWS, torch.cuda.current_device()),
                    "small-Q CUDA C kernel", "the Triton kernel forms Q instead")


@functools.lru_cache(maxsize=None)
def _kernel(mr: int, device_index: int):
    import cupy as cp

    with cp.cuda.Device(device_index):
        return cp.RawModule(code=SRC, options=("-std=c++17", f"-DMR={mr}")).get_function(
            "qform_small")


def launch(Ht: torch.Tensor, tau: torch.Tensor, Qt: torch.Tensor, m: int, n: int, k: int) -> None:
    """``Qt`` ``(B, n, m)`` ``= Q^T`` of the reflectors in ``Ht`` ``(B, n, m)`` and ``tau``
    ``(B, k)`` (all contiguous float32 on one CUDA device, ``m <= MAX_ROWS``): one launch on
    torch's current stream, no allocation (capturable)."""
    from adaptqr.paths.kernels.panel_cuda import run_on_torch_stream

    if m > MAX_ROWS:
        raise ValueError(f"qform_small_cuda: {m} rows, at most {MAX_ROWS}")
    mr = rows_of(m)
    dev = Ht.device.index if Ht.device.index is not None else torch.cuda.current_device()
    args = (np.uint64(Ht.data_ptr()), np.uint64(tau.data_ptr()), np.uint64(Qt.data_ptr()),
            np.int32(m), np.int32(n), np.int32(k))
    run_on_torch_stream(_kernel(mr, dev), (Ht.shape[0],), (mr,), args, Ht.device, dev)
