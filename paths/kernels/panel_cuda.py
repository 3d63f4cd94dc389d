"""The register panel's column steps in CUDA C (cupy, compiled at first use by NVRTC).

Same contract as :func:`adaptqr.paths.kernels.panel.panel_reg_kernel` with ``WRITE_T``:
factor columns ``[k, k + pw)`` of matrix ``blockIdx.x``, store the reflectors, ``tau`` and
the panel's ``T`` (larft's recurrence from the column steps' ``w = P^T v_j``, whose entries
for the stored columns are ``V^T V``'s, one row of ``T`` a lane: no T kernel launch).
Storage: ``Ht`` ``(B, n, m)`` contiguous, ``TAU`` ``(B, n)``, ``TW`` ``(B, n_tw, NB, NB)``,
``NA`` ``(B,)`` int32; ``GOUT`` ``(B, n_tw)`` int32 or null: the Gram build's outcome.

Why CUDA C: the Triton kernel's column step reduces ``w``'s 32 columns over the rows with
five shuffle rounds for every column (160 shuffles a thread a step); here a row belongs to
a thread, and one transposing butterfly leaves column ``l``'s warp sum on lane ``l`` (31
shuffles), with one barrier for the sums across warps. 640x512: 7.75 -> 5.95 ms a call
(EXPERIMENTS.md H12).

Layout: ``NT`` threads, thread ``t`` holds rows ``k + t + i NT`` (``i < R``) of the panel's
``NB = 32`` columns in registers (``NT R >= m - k``), the columns rotated by one a step so
that the loop over the steps is not unrolled (unrolled, its 21K instructions ran the column
step at ~2 us, no faster than Triton's; EXPERIMENTS.md H12). Panels of 2048 or 4096 padded
rows can take a cluster of up to 8 such CTAs a matrix, 16 as an experiment (``CL``,
:func:`cluster_shape`): each block sum is finished across the cluster through distributed
shared memory and a cluster barrier (EXPERIMENTS.md H16); rank 0 writes ``tau`` and ``T``.

A step exchanges its sums once where it can (``FUSE``, the default build): the exchange of
``w`` also carries five sums for the next column, whose ``alpha`` and sum of squares are
then downdated instead of summed again, unless the downdate cancels (a dependent column)
or leaves the plain sum's range (EXPERIMENTS.md H17).

The Gram build (``GRAM=1``, :mod:`~adaptqr.paths.kernels.panel_gram`'s device functions)
first tries each matrix's panel as CholeskyQR2 rebuilt into Householder form, and runs the
column steps where its tests reject the panel (EXPERIMENTS.md H22); with ``GOUT`` it writes
which one ran, ``GOUT[b, tw_index]`` 1 or 0, for the decisions log.

The column step's scalars are the Triton kernel's
(:func:`~adaptqr.paths.kernels.panel._reflector`: the plain sum of squares first and the
max-scaled one where it is out of range, powers of two for tiny and huge columns), so
degenerate columns get the same treatment. Every thread computes them from the same block
sums (an xor butterfly gives every lane the same bits), so every branch on them is
uniform.

Example (GPU with cupy)::

    >>> from adaptqr.paths.kernels import panel_cuda
    >>> panel_cuda.available() in (True, False)
    True
"""

from __future__ import annotations

import functools
import logging

import numpy as np
import torch

from adaptqr.paths.kernels import cluster_fit
from adaptqr.paths.kernels.panel_cuda_src import SRC  # noqa: F401  (the kernel's source)
from adaptqr.paths.kernels.panel_gram import gram_build, gram_smem

#: Panel widths the kernel is compiled for. Width 16 (n <= 352) was built and measured in
#: the same run as Triton's (run 1941): 40x176 0.2565 against 0.2492 ms, 40x352 0.783
#: against 0.787; no gain, removed (EXPERIMENTS.md H12).
WIDTHS = (32,)


def threads_rows(mb: int) -> tuple[int, int]:
    """``(NT, R)`` of each CTA for a panel of ``mb`` rows (a power of two, 16..4096): up to
    256 threads of one row each, then two rows a thread (256 threads at 512 rows: 103
    registers, two CTAs an SM; 512 threads at 1024: 101 registers, one CTA an SM; sm_90,
    ptxas 12.9); taller panels take clusters of such CTAs (:func:`cluster_shape`).

    >>> threads_rows(512), threads_rows(128), threads_rows(16), threads_rows(1024)
    ((256, 2), (128, 1), (32, 1), (512, 2))
    """
    if mb <= 256:
        return max(32, mb), 1
    return mb // 2, 2


#: The most CTAs a cluster (one matrix's panel) takes: 8, the portable cluster size. 16,
#: the non-portable size sm_90 allows once a kernel opts in, is an experiment (:func:`launch`'s
#: ``max_cluster``, knob ``cluster_max``; EXPERIMENTS.md H33).
MAX_CLUSTER = 8
#: The cluster sizes the launcher takes.
CLUSTER_MAXIMA = (8, 16)
#: ``CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`` (the CUDA driver's enum).
_NON_PORTABLE_CLUSTER = 14


def cluster_shape(mb: int, cta_rows: int, max_cluster: int = MAX_CLUSTER) -> tuple[int, int, int]:
    """``(CL, NT, R)``: the CTAs a matrix's panel of ``mb`` padded rows takes, and each CTA's
    threads and rows a thread, for CTAs of ``cta_rows`` rows (128, 256, 512 or 1024; more
    where ``max_cluster`` CTAs would not cover ``mb``). One CTA where ``mb <= cta_rows``.

    >>> cluster_shape(4096, 1024), cluster_shape(2048, 256), cluster_shape(4096, 256)
    ((4, 512, 2), (8, 256, 1), (8, 256, 2))
    >>> cluster_shape(512, 128), cluster_shape(1024, 128)
    ((4, 128, 1), (8, 128, 1))
    >>> cluster_shape(512, 1024)
    (1, 256, 2)
    >>> cluster_shape(4096, 256, 16), cluster_shape(2048, 256, 16), cluster_shape(2048, 128, 16)
    ((16, 256, 1), (8, 256, 1), (16, 128, 1))
    """
    rows = max(min(cta_rows, mb), mb // max_cluster)
    return (mb // rows,) + threads_rows(rows)


logger = logging.getLogger("adaptqr.paths")


def compiles(build, what: str, instead: str) -> bool:
    """Whether ``build()`` (a kernel's NVRTC compile through cupy) succeeds; else one warning
    naming ``what`` did not compile and what runs ``instead``."""
    try:
        build()
    except Exception as exc:  # an NVRTC or driver too old for the kernel, say
        logger.warning("adaptqr: the %s did not compile (%s: %s); %s", what,
                       type(exc).__name__, str(exc)[:200], instead)
        return False
    return True


def cupy_builds(build, what: str, instead: str) -> bool:
    """Whether cupy imports, a CUDA device is there and ``build()`` (a kernel's compile)
    succeeds; else False, with one warning (:func:`compiles`) where only the compile fails.
    Each kernel's ``available`` (cached there)."""
    if not torch.cuda.is_available():
        return False
    try:
        import cupy  # noqa: F401
    except Exception:
        return False
    return compiles(build, what, instead)


def compile_function(src: str, name: str, device_index: int, *options: str):
    """The cupy function ``name`` of ``src`` compiled by NVRTC for the device (C++17, with
    ``options``), subnormals kept (IEEE, ``-ftz=false``); once a caller's process (the caller
    caches it: this compile is not cupy's disk-cached one).

    Not ``cupy.RawModule``: cupy appends ``-ftz=true`` to its options, which flushes every
    subnormal operand and result to zero. The small kernels factor the caller's matrix
    unscaled; flushed, a 4 x 4 matrix of ``randn * 1e-40`` came out with every tau 0 (a
    factor residual of 1e6 where LAPACK's is 21; run 0422, EXPERIMENTS.md H37). The CUDA C
    panel's input is prescaled by the probes (normal), and it stays on RawModule's cached
    build."""
    import cupy as cp
    from cupy.cuda import compiler, function

    with cp.cuda.Device(device_index):
        built = compiler.compile_using_nvrtc(src, ("-std=c++17", "-ftz=false") + options,
                                             cache_in_memory=True)
        mod = function.Module()
        mod.load(built[0] if isinstance(built, tuple) else built)  # cupy 14: (binary, names)
        return mod.get_function(name)


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """Whether cupy imports, a CUDA device is there and the kernel compiles for it (NVRTC,
    once a process, about a second): else the Triton panel runs, with one warning logged."""
    return cupy_builds(lambda: _kernel(*threads_rows(512), torch.cuda.current_device()),
                       "CUDA C panel", "the Triton panel runs instead")


#: The oldest device whose Gram build takes its Grams on tensor cores (tf32 ``mma.sync``
#: m16n8k8 is sm_80's); older ones keep the scalar Grams.
MMA_MIN_CAPABILITY = (8, 0)


@functools.lru_cache(maxsize=None)
def cluster_available() -> bool:
    """Whether the cluster build compiles and the device has clusters (sm_90 and up): else
    tall panels stay row-split or streamed, with one warning logged."""
    if not available():
        return False
    if torch.cuda.get_device_capability() < (9, 0):
        return False
    return compiles(lambda: _kernel(256, 2, torch.cuda.current_device(), False, 2),
                    "CUDA C cluster panel", "tall panels stay row-split")


def launch_shape(mb: int, cta_rows: int, max_cluster: int = MAX_CLUSTER) -> tuple[int, int, int]:
    """``(CL, NT, R)`` of a launch over panels of ``mb`` padded rows: :func:`cluster_shape`
    where ``cta_rows`` asks for clusters, else one CTA a matrix (:func:`threads_rows`).

    >>> launch_shape(512, 0), launch_shape(4096, 256, 16)
    ((1, 256, 2), (16, 256, 1))
    """
    return cluster_shape(mb, cta_rows, max_cluster) if cta_rows else (1,) + threads_rows(mb)


def defines(nt: int, r: int, fuse: bool = False, cl: int = 1, gram: int = 0) -> tuple:
    """The ``(name, value)`` compile definitions of a build (the source's own defaults for
    the rest): ``NT``, ``R``, ``FUSE``, ``CL``, ``GRAM`` (``gram`` 1 or 2) and ``GRAM_MMA``
    (``gram`` 2: the Grams on tensor cores, EXPERIMENTS.md H52); the GPU build and the host
    shim's (``adaptqr.testing.cuda_host``) alike.

    >>> defines(256, 1, True, 16, True)
    (('NT', 256), ('R', 1), ('FUSE', 1), ('CL', 16), ('GRAM', 1))
    >>> defines(256, 2), defines(128, 1, gram=2)
    ((('NT', 256), ('R', 2)), (('NT', 128), ('R', 1), ('GRAM', 1), ('GRAM_MMA', 1)))
    """
    out = (("NT", nt), ("R", r)) + ((("FUSE", 1),) if fuse else ())
    out += (("CL", cl),) if cl > 1 else ()
    out += (("GRAM", 1),) if gram else ()
    return out + ((("GRAM_MMA", 1),) if gram == 2 else ())


@functools.lru_cache(maxsize=None)
def _kernel(nt: int, r: int, device_index: int, fuse: bool = False, cl: int = 1,
            gram: int = 0):
    import cupy as cp

    with cp.cuda.Device(device_index):
        opts = ("-std=c++17",) + tuple(f"-D{k}={v}" for k, v in defines(nt, r, fuse, cl, gram))
        mod = cp.RawModule(code=SRC, options=opts)
        fn = mod.get_function("panel_cuda")
        if gram:  # static and dynamic shared memory together pass the 48 KB default
            fn.max_dynamic_shared_size_bytes = gram_smem(nt)
        if cl > MAX_CLUSTER:  # a non-portable cluster size launches only once opted in
            # RawModule.get_function gives a RawKernel; the driver's handle is its kernel's.
            cp.cuda.driver.funcSetAttribute(fn.kernel.ptr, _NON_PORTABLE_CLUSTER, 1)
        return fn


@functools.lru_cache(maxsize=None)
def _clusters_fit(nt: int, r: int, device_index: int, fuse: bool, cl: int, gram: int) -> bool:
    """Whether a cluster of ``cl`` CTAs of this build can be placed on the device (asked once
    a build, only above :data:`MAX_CLUSTER`; :mod:`~adaptqr.paths.kernels.cluster_fit`)."""
    import cupy as cp

    fn = _kernel(nt, r, device_index, fuse, cl, gram)
    with cp.cuda.Device(device_index):
        n = cluster_fit.max_active_clusters(fn.kernel.ptr, cl, nt, gram_smem(nt) if gram else 0)
    if n < 1:
        logger.warning("adaptqr: clusters of %d CTAs cannot be placed on device %d; the panels "
                       "take clusters of %d", cl, device_index, MAX_CLUSTER)
    return n >= 1


try:  # torch's current stream as a pointer, without a Stream object (Triton's launcher's way)
    from torch._C import _cuda_getCurrentRawStream as _raw_stream
except ImportError:  # a CPU build: no launch happens there
    def _raw_stream(device_index: int) -> int:
        return torch.cuda.current_stream(device_index).cuda_stream


@functools.lru_cache(maxsize=64)
def _stream(ptr: int, device_index: int):
    import warnings

    import cupy as cp

    # cupy 14 deprecates ExternalStream for Stream.from_external, which cupy 13 lacks.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cp.cuda.ExternalStream(ptr, device_index)


def launch(Ht: torch.Tensor, tau: torch.Tensor, TW: torch.Tensor, na: torch.Tensor,
           k: int, m: int, n: int, pw: int, tw_index: int, n_tw: int, nb: int, mb: int,
           has_na: bool, floor: float, fuse: bool = False, cta_rows: int = 0,
           gram: int = 0, gram_out: torch.Tensor | None = None,
           max_cluster: int = MAX_CLUSTER) -> None:
    """One launch over ``Ht.shape[0]`` matrices on torch's current stream (capturable into
    a CUDA graph: no allocation, no sync). ``nb``: the panel width (:data:`WIDTHS`), ``mb``:
    the panel's padded rows (``next_pow2(m - k)``, at most 1024 in one CTA); ``cta_rows``: 0,
    one CTA a matrix, else a cluster of CTAs of that many rows (:func:`cluster_shape`);
    ``fuse``: the build whose column steps take their scalars from the step before where
    they can (one exchange a step, EXPERIMENTS.md H17); ``gram``: the build that tries each
    matrix's panel as CholeskyQR2 rebuilt into Householder form first, where
    :func:`gram_build` allows (EXPERIMENTS.md H22; 2: its Grams on tensor cores, H52);
    ``gram_out``: ``(B, n_tw)`` int32, where
    the Gram build writes each matrix's outcome of this panel (column ``tw_index``: 1 the
    Gram build, 0 the column steps; unwritten past the matrix's ``n_active``);
    ``max_cluster``: the most CTAs a cluster takes, :data:`CLUSTER_MAXIMA` (16 is not
    portable, H33: where the device cannot place such a cluster, :data:`MAX_CLUSTER`)."""
    if nb not in WIDTHS:
        raise ValueError(f"panel_cuda: width {nb} not compiled (widths {WIDTHS})")
    if max_cluster not in CLUSTER_MAXIMA:
        raise ValueError(f"panel_cuda: clusters of at most {max_cluster} CTAs not built "
                         f"(sizes {CLUSTER_MAXIMA})")
    cl, nt, r = launch_shape(mb, cta_rows, max_cluster)
    if nt * r > 1024 or nt * r * cl < mb:
        raise ValueError(f"panel_cuda: {mb} rows do not fit {max_cluster} CTAs of 1024 rows")
    dev = Ht.device.index if Ht.device.index is not None else torch.cuda.current_device()
    gram = int(gram)  # True means 1: one cache entry a build
    if gram == 2 and torch.cuda.get_device_capability(dev) < MMA_MIN_CAPABILITY:
        gram = 1  # the scalar Grams: tf32 mma.sync needs sm_80
    if cl > MAX_CLUSTER and not _clusters_fit(nt, r, dev, bool(fuse), cl, gram):
        cl, nt, r = launch_shape(mb, cta_rows, MAX_CLUSTER)
    if gram and not gram_build(nt, pw, nb):
        raise ValueError(f"panel_cuda: no Gram build for {nt} threads and {pw} of {nb} columns")
    kern = _kernel(nt, r, dev, bool(fuse), cl, gram)
    args = (np.uint64(Ht.data_ptr()), np.uint64(tau.data_ptr()), np.uint64(TW.data_ptr()),
            np.uint64(na.data_ptr()), np.int32(k), np.int32(m), np.int32(n), np.int32(pw),
            np.int32(tw_index), np.int32(n_tw), np.int32(1 if has_na else 0), np.float32(floor),
            np.uint64(gram_out.data_ptr() if gram and gram_out is not None else 0))
    # A cluster's CTAs are consecutive blocks (the kernel's compile-time cluster shape).
    run_on_torch_stream(kern, (Ht.shape[0] * cl,), (nt,), args, Ht.device, dev,
                        gram_smem(nt) if gram else 0)


def run_on_torch_stream(kern, grid: tuple, block: tuple, args: tuple, device: torch.device,
                        device_index: int, shared_mem: int = 0) -> None:
    """Launch the cupy function ``kern`` on torch's current stream of ``device`` (index
    ``device_index``): no allocation, no sync, so a CUDA graph capture records it."""
    import cupy as cp

    stream = _stream(_raw_stream(device_index), device_index)
    # cupy's current device is its own (thread-local, 0 by default), not torch's.
    if cp.cuda.runtime.getDevice() != device_index:
        with cp.cuda.Device(device_index), stream:
            kern(grid, block, args, shared_mem=shared_mem)
        return
    with stream:
        kern(grid, block, args, shared_mem=shared_mem)
