"""Which kernel each panel of a blocked Householder factorization runs, and the row-split
panel's sizing: the panel plan of :mod:`adaptqr.paths.householder`, a function of the
batch, the shape, the resolved schedule and the device alone (no tensors but the row-split
panel's workspace).

Kinds (``PANEL_*``): the one-launch small QR; Triton's register, streamed and row-split
panels; the CUDA C register panel (one CTA a matrix) and its clusters, either tried as
CholeskyQR2 first (``PANEL_GRAM``, EXPERIMENTS.md H22).

Example::

    >>> from adaptqr.paths import schedules
    >>> s = schedules.schedule_for(2048, 2048)
    >>> _panel_kind(2, 2048, 0, s.nb, None, 64)[0], _panel_kind(2, 2048, 0, s.nb, 132, 64)[0]
    ('streamed', 'row-split')
"""

from __future__ import annotations

import functools

import torch
import triton

from adaptqr.paths import schedules
from adaptqr.paths.kernels import panel_cuda
from adaptqr.paths.kernels.panel import SPLIT_WSTR_NB
from adaptqr.paths.schedules import next_pow2
from adaptqr.registry import TRY_MARK

_SM_COUNT: dict[int, int] = {}


def _sm_count(device: torch.device) -> int:
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SM_COUNT:
        _SM_COUNT[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SM_COUNT[idx]


def split_rows(B: int, rows: int, nb: int, sm_count: int, min_rows: int = 0
               ) -> tuple[int, int] | None:
    """(RB, P) for the row-split panel kernel, or None when it does not apply: the panel
    fits one program's registers, or B * P programs would not all be resident at once
    (the grid barrier would deadlock). ``min_rows``: fewest rows a program takes (0:
    ``schedules.split_min_rows()``)."""
    max_rb = schedules.REG_PANEL_MAX_TILE // nb
    if next_pow2(rows) <= max_rb:
        return None
    per_matrix = max(1, sm_count // B)
    rb = min(max_rb, max(min_rows or schedules.split_min_rows(),
                         next_pow2(triton.cdiv(rows, per_matrix))))
    p = triton.cdiv(rows, rb)
    if B * p > sm_count:
        return None
    return rb, p


def split_capacity(B: int, m: int, n: int, nb: int, sm_count: int, min_rows: int = 0) -> int:
    """The most programs (a power of two, ``PMAX``) any row-split panel of a ``B x m x n``
    factorization takes: the partials' workspace is sized for it once a call.

    Not the first panel's count: ``split_rows`` halves a program's rows as the panel
    shortens, so the count can grow (4x4096 on 132 SMs: 32 programs of 128 rows at the
    first panel, 33 of 64 rows from row 1984 on). A first-panel capacity let those panels
    write past the workspace (H11).

    >>> split_capacity(4, 4096, 4096, 32, 132), split_rows(4, 4096, 32, 132)
    (64, (128, 32))
    """
    return _split_capacity(B, m, n, nb, sm_count, min_rows or schedules.split_min_rows())


@functools.lru_cache(maxsize=1024)
def _split_capacity(B: int, m: int, n: int, nb: int, sm_count: int, min_rows: int) -> int:
    # min_rows (the split_min_rows knob or its default) is what split_rows reads besides the
    # arguments: part of the cache key.
    cap = 0
    for k in range(0, n, nb):
        rp = split_rows(B, m - k, nb, sm_count, min_rows)
        if rp is not None:
            cap = max(cap, next_pow2(rp[1]))
    return cap


class _SplitWork:
    """Workspaces of the row-split panel kernel, allocated on first use in a call."""

    def __init__(self, H: torch.Tensor, nb: int, min_rows: int):
        self.H, self.nb, self.min_rows = H, nb, min_rows
        self.sm = _sm_count(H.device)
        self.bufs = None

    def get(self, pmax: int):
        B, m, n = self.H.shape
        if self.bufs is None:
            cap = max(pmax, split_capacity(B, m, n, self.nb, self.sm, self.min_rows))
            dev = self.H.device
            self.bufs = (torch.empty((B, 3, cap, SPLIT_WSTR_NB.value * self.nb),
                                     dtype=torch.float32, device=dev),
                         torch.empty((B, cap, self.nb, self.nb), dtype=torch.float32, device=dev),
                         torch.zeros((B, 3 * n), dtype=torch.int32, device=dev))
        return self.bufs


def _pairs(s, rb: int) -> bool:
    """Whether a row-split panel of ``rb`` rows a program pairs its columns (schedule field,
    else ``schedules.PAIRS_MAX_RB``)."""
    return s.split_pairs if s.split_pairs is not None else rb <= schedules.PAIRS_MAX_RB


#: The panel kernels, by the names :func:`panel_kinds` gives them (``register-cuda``: the
#: register panel in CUDA C, kernels/panel_cuda.py; ``cluster-cuda``: the same in a
#: cluster of CTAs a matrix).
PANEL_ONE_LAUNCH, PANEL_REGISTER, PANEL_REGISTER_CUDA, PANEL_CLUSTER_CUDA = (
    "one-launch", "register", "register-cuda", "cluster-cuda")
PANEL_ROW_SPLIT, PANEL_STREAMED = "row-split", "streamed"
#: Appended to a CUDA C panel's kind where it is tried as CholeskyQR2 first (each matrix's
#: panel that the Gram tests reject takes the column steps in the same launch, H22; the
#: kernel writes which one ran into ``MatrixInfo.panel_out``, a tried kind of the registry).
PANEL_GRAM = TRY_MARK + "gram"


def _cuda_panels(want: bool, nb: int, device: torch.device) -> bool:
    """Whether register panels of width ``nb`` on ``device`` run in CUDA C (``want``: the
    schedule's ``cuda_panel``)."""
    return want and nb in panel_cuda.WIDTHS and device.type == "cuda" and panel_cuda.available()


def _cluster_rows(cta_rows: int, cuda: bool) -> int:
    """The tallest panel (padded rows) the CUDA C clusters take: 0 unless ``cta_rows`` (the
    schedule's ``cuda_panel_cluster``) is set, CUDA C panels run (``cuda``) and clusters
    compile; 4096 (8 CTAs of 512 rows) at most."""
    if not (cta_rows and cuda and panel_cuda.cluster_available()):
        return 0
    return 512 * panel_cuda.MAX_CLUSTER


def _panel_kind(B: int, m: int, k: int, nb: int, sm: int | None, min_rows: int,
                cuda: bool = False, cuda_rows: int = schedules.CUDA_PANEL_MAX_ROWS,
                cluster_rows: int = 0, max_ctas: int = 0, pair_ctas: int = 0) -> tuple:
    """``(kind, MB, rp)`` of the panel at column ``k``: the kernel (``PANEL_*``), the
    register tile's rows, and the row split ``(RB, P)`` of a row-split panel (``sm``: the
    SM count, None off the GPU, where no panel is row-split; ``cuda``: register panels in
    CUDA C, :func:`_cuda_panels`, up to ``cuda_rows`` padded rows, and in clusters up to
    ``cluster_rows``, :func:`_cluster_rows`; the panels up to ``cuda_rows`` take clusters of
    :func:`_cta_rows` too while the batch's CTAs are at most ``max_ctas``, ``pair_ctas``
    for panels of two CTAs)."""
    # tl.dot (the T matrix's V^T V) needs K >= 16: the last panel of n = 200 has 8 rows.
    MB = max(16, next_pow2(m - k))
    ctas = MB // schedules.CLUSTER_SMALL_CTA_ROWS
    budget = pair_ctas if ctas == 2 else max_ctas
    if cluster_rows and 2 <= ctas and MB <= cuda_rows and B * ctas <= budget:
        return PANEL_CLUSTER_CUDA, MB, None
    if cuda and MB <= cuda_rows:
        return PANEL_REGISTER_CUDA, MB, None
    if cuda and MB <= cluster_rows:
        return PANEL_CLUSTER_CUDA, MB, None
    if nb * MB <= schedules.REG_PANEL_MAX_TILE:
        return PANEL_REGISTER, MB, None
    rp = split_rows(B, m - k, nb, sm, min_rows) if sm is not None else None
    return (PANEL_ROW_SPLIT if rp is not None else PANEL_STREAMED), MB, rp


def _cta_rows(mb: int, cuda_rows: int, cluster_cta_rows: int) -> int:
    """The CTA rows of a cluster panel of ``mb`` padded rows: ``CLUSTER_SMALL_CTA_ROWS``
    for the panels only small batches send to clusters (up to ``cuda_rows``), else the
    schedule's ``cuda_panel_cluster``.

    >>> _cta_rows(1024, 1024, 512), _cta_rows(2048, 1024, 512)
    (128, 512)
    """
    return schedules.CLUSTER_SMALL_CTA_ROWS if mb <= cuda_rows else cluster_cta_rows


def _kind_of(B: int, m: int, k: int, s: schedules.Schedule, device: torch.device,
             sm: int | None) -> tuple:
    """:func:`_panel_kind` of the panel at column ``k`` of a ``B x m`` batch on ``device``
    under the resolved schedule ``s`` (:func:`_with_knobs`; ``sm``: the SM count, None off
    the GPU)."""
    cuda = _cuda_panels(s.cuda_panel, s.nb, device)
    return _kind_given(B, m, k, s, sm, cuda, _cluster_rows(s.cuda_panel_cluster, cuda))


def _kind_given(B: int, m: int, k: int, s: schedules.Schedule, sm: int | None, cuda: bool,
                cluster_rows: int) -> tuple:
    """:func:`_kind_of` with its device's CUDA C choices given (``cuda``: :func:`_cuda_panels`,
    ``cluster_rows``: :func:`_cluster_rows`)."""
    return _panel_kind(B, m, k, s.nb, sm, s.split_min_rows, cuda, s.cuda_panel_rows,
                       cluster_rows, s.cluster_ctas, s.cluster_pair_ctas)


def _gram(s: schedules.Schedule, B: int, kind: str, MB: int, pw: int) -> int:
    """Whether the CUDA C panel of kind ``kind`` over ``MB`` padded rows and ``pw`` columns
    is tried as CholeskyQR2 first, as ``panel_cuda.launch``'s ``gram``: 0 no, 1 yes, 2 yes
    with its Grams on tensor cores (the schedule's ``gram_mma``). Yes under the schedule's
    ``gram_panel``, for at most its ``gram_max_batch`` matrices (``gram_small_batch`` for
    panels of at most ``GRAM_SMALL_PANEL_ROWS`` padded rows), on CTAs the Gram build takes
    (:func:`panel_cuda.gram_build`)."""
    small = MB <= schedules.GRAM_SMALL_PANEL_ROWS and B <= s.gram_small_batch
    if not (s.gram_panel and (B <= s.gram_max_batch or small)):
        return 0
    if kind == PANEL_CLUSTER_CUDA:
        nt = panel_cuda.cluster_shape(MB, _cta_rows(MB, s.cuda_panel_rows, s.cuda_panel_cluster),
                                      s.cluster_max)[1]
    elif kind == PANEL_REGISTER_CUDA:
        nt = panel_cuda.threads_rows(MB)[0]
    else:
        return 0
    return (2 if s.gram_mma else 1) if panel_cuda.gram_build(nt, pw, s.nb) else 0
