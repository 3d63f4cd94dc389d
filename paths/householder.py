"""The default GPU path: blocked Householder QR with compact WY, in Triton.

``factor_householder(H, tau, info)`` factors ``H`` (``(B, m, n)`` float32, column-major
matrices, ``H.mT`` contiguous, m >= n >= 2) in place with LAPACK's geqrf conventions and
writes ``tau`` (``(B, n)``). The host only launches kernels: no synchronization, no
data-dependent shapes, so the whole call can be captured in a CUDA graph. Workspaces: ``T``
(``B x cdiv(n, nb) x nb x nb`` float32, at most ``nb/m`` of the input); for tall panels of
small batches also the row-split panel's partial sums, barrier counters and per-program
``T`` parts, and the row-split trailing update's ``W`` (``B x n x nb``). A blocked
schedule whose m is not a multiple of ``schedules.ROW_ALIGN`` factors a copy padded with
zero rows (:func:`work_rows`, ``B x n x m'`` float32) and copies it back.

Plan per shape (:mod:`adaptqr.paths.schedules`):

* small (``next_pow2(n) * next_pow2(m) <= schedules.SMALL_MAX_TILE``, 4096): one launch, one program per matrix, the
  whole QR in registers (:func:`~adaptqr.paths.kernels.panel.panel_reg_kernel`).
* otherwise, per group of ``group`` panels of ``nb`` columns: for each panel, the panel
  kernel (registers or row-chunked) then the trailing kernel on the rest of the group;
  then one trailing launch applies the whole group to the columns after it.
* where no panel is row-split (every panel one CTA, cluster or program a matrix), with one
  group of look-ahead (``Schedule.lookahead``): the next group's columns and panels on a
  high-priority stream while the caller's stream applies the group to the columns after
  them (:func:`_factor_lookahead`; the graph capture records both streams).

``info.features["n_active"]`` (int32 ``(B,)``, optional): matrix b needs reflectors only
for columns ``< n_active[b]``; later columns get ``tau = 0`` and hold ``Q1^T A_tail``;
panels past it exit at once. ``info.features["n_kept"]`` (int32 ``(B,)``, read with
n_active; else ``n_nonzero``): columns from it on are zero in the result (exactly zero, or
a dropped negligible tail that ``finish_tail`` zeros), and trailing tiles there are skipped.
``info.features["prescale"]`` (int32 ``(B,)``, from the route probe): matrix b is factored as
``A * 2^e`` and R scaled back (:mod:`adaptqr.paths.prescale`); blocked schedules then leave
a sub-column below ``panel.NEGLIGIBLE_SUBCOLUMN`` as it is. Without them (no probe:
``ADAPTQR_DETECT=0``, a direct call) a blocked schedule computes the exponents itself from
each matrix's max-abs (:func:`~adaptqr.paths.prescale.own_exponents`,
one read of the batch), so that extreme scales never depend on the probe, and scales a
given ``fp16_scale`` along.
``info.features["fp16_scale"]`` (float32 ``(B,)``, optional, from the route probe): matrix b
with a scale above 0 keeps its trailing matrix in a float16 copy (issue 8's FP16 route,
:mod:`adaptqr.paths.kernels.fp16_storage`; the copy is ``B x n x m`` float16, half the
input's bytes, allocated whenever the feature is given). With the feature the batch is
cut in groups of ``Schedule.fp16_group`` panels (2: the FP16 update applies both in one
pass over its tile).

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

import copy
import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
import triton

from adaptqr.layout import aligned, rows_padded
from adaptqr.paths import schedules
from adaptqr.paths.kernels import panel_cuda
from adaptqr.paths.kernels.fp16_storage import F16_NONE, F16_ONLY, F16_SKIP
from adaptqr.paths.kernels.panel import (
    NEGLIGIBLE_SUBCOLUMN,
    panel_chunked_kernel,
    panel_reg_kernel,
    panel_split_kernel,
    panel_t_kernel,
)
from adaptqr.paths.kernels.trailing import (
    pair_u_kernel,
    pair_y_kernel,
    trailing_kernel,
    trailing_u_kernel,
    trailing_w_kernel,
    v16_kernel,
)
from adaptqr.paths.lanes import Lanes, RouteLanes
from adaptqr.paths.panel_plan import (  # noqa: F401  (PANEL_* and split_* are householder's API too)
    PANEL_CLUSTER_CUDA,
    PANEL_GRAM,
    PANEL_ONE_LAUNCH,
    PANEL_REGISTER,
    PANEL_REGISTER_CUDA,
    PANEL_ROW_SPLIT,
    PANEL_STREAMED,
    _cluster_rows,
    _cta_rows,
    _cuda_panels,
    _gram,
    _kind_given,
    _kind_of,
    _pairs,
    _panel_kind,
    _sm_count,
    _split_capacity,
    _SplitWork,
    split_capacity,
    split_rows,
)
from adaptqr.paths.prescale import own_exponents, prescale, times_pow2, unscale
from adaptqr.paths.row_split import WParts, WSlot, partial_slots, row_slices, splits_rows
from adaptqr.paths.schedules import next_pow2
from adaptqr.registry import ALL_CLASSES, Path

__all__ = ["factor_householder", "capable", "NAME"]

NAME = "householder"


def interpreting() -> bool:
    """Whether the Triton kernels were built for the interpreter (``TRITON_INTERPRET=1`` when
    they were imported): they then run on CPU tensors too."""
    return type(panel_reg_kernel).__name__ == "InterpretedFunction"


def capable(batch: int, m: int, n: int, dtype: torch.dtype, device_type: str) -> str | None:
    """None when this path takes ``batch`` matrices ``m x n`` of ``dtype`` on ``device_type``,
    else the reason it declines. CPU tensors only under the Triton interpreter (so that
    ``adaptqr.geqrf(A, path="householder")`` tests these kernels without a GPU)."""
    if device_type != "cuda" and not (device_type == "cpu" and interpreting()):
        return (f"householder: needs a CUDA tensor (or a CPU one under TRITON_INTERPRET=1), "
                f"got device type {device_type!r}")
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


def _feature(info: Any, name: str, B: int, device: torch.device,
             dtype: torch.dtype = torch.int32) -> torch.Tensor | None:
    """``info.features[name]`` as a contiguous ``(B,)`` tensor of ``dtype``, or None
    (``n_active`` / ``n_nonzero`` int32; the route probe's ``fp16_scale`` float32, 0 for a
    matrix on the FP32 route)."""
    feats = getattr(info, "features", None) if info is not None else None
    if not feats:
        return None
    f = feats.get(name)
    if f is None:
        return None
    if f.shape != (B,) or f.device != device:
        raise ValueError(f"householder: {name} must be a ({B},) tensor on {device}, "
                         f"got shape {tuple(f.shape)} on {f.device}")
    if f.dtype != dtype or not f.is_contiguous():
        f = f.to(dtype).contiguous()
    return f


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


def uses_routes(batch: int, m: int, n: int, dtype: torch.dtype, device_type: str) -> bool:
    """Whether per-matrix features (``n_active``) change this path's work for the shape.

    Not for the one-launch small schedule: its single program walks every column anyway, so a
    probe (a kernel plus a few dozen small reductions, several microseconds each on the GPU)
    would cost more than the whole factorization (20x32: 0.022 ms, EXPERIMENTS.md H4).
    """
    return not schedules.schedule_for(m, n).small


def factor_householder(H: torch.Tensor, tau: torch.Tensor, info: Any = None, *,
                       schedule: schedules.Schedule | None = None,
                       after_panels: Callable[[int], None] | None = None) -> None:
    """Factor ``H`` in place (geqrf), writing ``tau``. See the module docstring.

    ``schedule`` overrides :func:`adaptqr.paths.schedules.schedule_for` (for experiments).
    ``after_panels(k)`` is called each time the reflectors of columns ``[0, k)`` are final
    (their panels issued on the current stream, which is then the stream they ran on): the
    wide path applies them to its other columns from there (:mod:`adaptqr.paths.wide`).
    """
    _check(H, tau)
    B, m, n = H.shape
    if B == 0:
        return
    Ht = H.mT
    na = _feature(info, "n_active", B, H.device)
    has_na = na is not None
    na_arg = na if has_na else tau  # any pointer; unused when HAS_NA is False
    # The updates stop at n_kept (the route probe's: finish_tail zeros what is past it), or
    # at n_nonzero; without either no column is known to be zero: n (no tile skipped).
    nz = None
    if has_na:
        nz = _feature(info, "n_kept", B, H.device)
        nz = _feature(info, "n_nonzero", B, H.device) if nz is None else nz
    nz_arg = nz if nz is not None else torch.full_like(na, n) if has_na else tau
    s = _with_knobs(schedule or schedules.schedule_for(m, n), info, n)

    pexp = _feature(info, "prescale", B, H.device)
    if pexp is None and not s.small:
        # No probe ran, or a caller gave features without exponents: the "f16x3" products
        # need every matrix in the prescaling window all the same (EXPERIMENTS.md T10). An
        # FP16 scale given with them is the matrix's as it is: it follows the scaling.
        pexp = own_exponents(H)
        sc = _feature(info, "fp16_scale", B, H.device, torch.float32)
        if sc is not None:
            info = copy.copy(info)
            info.features = dict(info.features, fp16_scale=times_pow2(sc, -pexp))
    if pexp is not None:
        prescale(H, pexp)
    floor = NEGLIGIBLE_SUBCOLUMN.value if pexp is not None else 0.0
    # The wide path's after_panels reads the reflectors from H as they are made: no copy.
    mp = work_rows(m, s) if after_panels is None else m
    if mp == m:
        _factor(H, Ht, tau, info, s, na_arg, has_na, nz_arg, B, m, n, floor, after_panels)
    else:
        Wt = rows_padded(Ht, mp)
        _factor(Wt.mT, Wt, tau, info, s, na_arg, has_na, nz_arg, B, mp, n, floor, None)
        Ht.copy_(Wt[:, :, :m])
    if pexp is not None:
        unscale(H, pexp)


def work_rows(m: int, s: schedules.Schedule) -> int:
    """The rows the factorization of ``m``-row matrices under ``s`` runs on: m rounded up to
    ``schedules.ROW_ALIGN`` for a blocked schedule (the input copied below zero rows), m for
    the one-launch kernel.

    >>> work_rows(3500, schedules.schedule_for(3500, 3500)), work_rows(30, schedules.schedule_for(30, 30))
    (3504, 30)
    """
    return m if s.small else aligned(m, schedules.ROW_ALIGN)


def _with_knobs(s: schedules.Schedule, info: Any, n: int = 0) -> schedules.Schedule:
    """``s`` with the experiment knobs it leaves open (``tail_prec`` None, ``split_min_rows``
    0, ...) taken from the call's settings snapshot (``info.settings``, else the current
    one), else from the library's constants; ``n``: the matrices' columns (the small-n panel
    width depends on them, ``schedules.SMALL_N_NB_MULTIPLE``; 0 counts as a multiple)."""
    if s.small:
        return s  # the one-launch kernel reads no knob: no lookup on the host-bound path
    knobs = getattr(info, "settings", None)
    if knobs is None:
        from adaptqr import config

        knobs = config.snapshot()
    # The constants are part of the key: a measuring script may set them between calls.
    return _resolved(s, knobs.knobs, (schedules.TAIL_PREC, schedules.SPLIT_MIN_ROWS)
                     + schedules.knob_constants(), n % schedules.SMALL_N_NB_MULTIPLE == 0,
                     knobs.deterministic)


@functools.lru_cache(maxsize=256)
def _resolved(s: schedules.Schedule, knobs, constants: tuple, whole: bool,
              deterministic: bool = False) -> schedules.Schedule:
    # Schedules and knobs are frozen: a call of a seen shape and settings costs one lookup.
    r = dataclasses.replace(
        s, deterministic=s.deterministic or deterministic, prec=knobs.trailing_prec or s.prec,
        tail_prec=s.tail_prec or knobs.tail_prec or schedules.TAIL_PREC,
        split_min_rows=s.split_min_rows or knobs.split_min_rows or schedules.SPLIT_MIN_ROWS,
        **{name: getattr(s, name) if getattr(s, name) is not None else schedules.knob(name, knobs)
           for name in schedules.SCHEDULE_KNOBS})
    if r.w_partials is None:
        # Ordered partials cost 4-11 % where updates split (N26), but the mode's other way
        # to the same bits, no split at all, costs up to 2.5x (N26b).
        r = dataclasses.replace(r, w_partials=r.deterministic)
    # Panels of small_n_nb columns where the table gives 16 and n is a whole number of
    # SMALL_N_NB_MULTIPLE columns (``whole``; EXPERIMENTS.md H18, H19).
    widen = r.small_n_nb and r.nb == 16 and whole
    return dataclasses.replace(r, nb=r.small_n_nb) if widen else r


def _factor(H, Ht, tau, info, s, na_arg, has_na, nz_arg, B, m, n, floor, after_panels):
    if s.small:
        NB = next_pow2(max(n, 16))
        MB = next_pow2(m)
        panel_reg_kernel[(B,)](Ht, tau, tau, na_arg, 0, m, n, n, 0, 1,
                               NB=NB, MB=MB, HAS_NA=has_na, WRITE_T=False, FLOOR=floor,
                               num_warps=_warps(NB * MB))
        if after_panels is not None:
            after_panels(n)
        return

    nb, group = s.nb, s.group
    n_tw = triton.cdiv(n, nb)
    TW = torch.empty((B, n_tw, nb, nb), dtype=torch.float32, device=H.device)
    split = _SplitWork(H, nb, s.split_min_rows) if H.is_cuda else None
    wbuf: list = []  # the row-split updates' W (WSlot or WParts), allocated on first use
    # The FP16 route (kernels/fp16_storage.py) updates one or two panels at a time: with its
    # feature given, the whole batch takes the groups of fp16_group().
    sc = _feature(info, "fp16_scale", B, H.device, torch.float32) if s.fp16 else None
    f16 = None
    v16 = y16 = vlo = None
    if s.fp32_halves and s.fp32_pair and s.prec == "f16x3":
        # The FP32 pair rest updates' reflector halves (T14), as N23's copies: allocated
        # before any fork, used on the rest update's stream alone; the high halves serve the
        # FP16 route's rest updates too (the same rounding).
        v16, vlo = torch.empty((2, B, 2 * nb, m), dtype=torch.float16, device=H.device).unbind(0)
    if sc is not None:
        group = fp16_group(s, B, m, n)
        f16 = (torch.empty((B, n, m), dtype=torch.float16, device=H.device), sc)
        if s.fp16_v16 and v16 is None:
            # The rest updates' reflectors in float16, one group at a time (N23, N24);
            # allocated here, before any fork, and used on one stream only.
            v16 = torch.empty((B, group * nb, m), dtype=torch.float16, device=H.device)
        if pair_splits(s, B, n, group):
            # The split pair update's Y and scales (N25): allocated before any fork, used by
            # the rest update's stream alone, one update after the other.
            y16 = (torch.empty((B, n, 2 * nb), dtype=torch.float16, device=H.device),
                   torch.empty((B, n), dtype=torch.float32, device=H.device))
    f = _Blocked(Ht, tau, TW, na_arg, nz_arg, has_na, B, m, n, n_tw, s, split, floor, wbuf,
                 after_panels, v16, y16, _panel_out(info, B, n_tw, H.device), vlo)
    lanes = _lookahead_lanes(f, group)
    if lanes is not None:
        _factor_lookahead(f, group, f16, lanes)
        return
    for g0 in range(0, n, nb * group):
        gend = min(n, g0 + nb * group)
        _group_panels(f, g0, gend, 0)
        if gend < n:
            _trailing(f, g0, triton.cdiv(gend - g0, nb), gend, n, f16, rest=True)


def _panel_out(info: Any, B: int, n_tw: int, device: torch.device) -> torch.Tensor | None:
    """``info.panel_out``: the ``(B, n_tw)`` int32 tensor the Gram panels write their
    outcomes into (the dispatcher's, for the decisions log), or None."""
    out = getattr(info, "panel_out", None) if info is not None else None
    if out is None:
        return None
    if out.shape != (B, n_tw) or out.dtype != torch.int32 or out.device != device \
            or not out.is_contiguous():
        raise ValueError(f"householder: panel_out must be a contiguous ({B}, {n_tw}) int32 "
                         f"tensor on {device}, got shape {tuple(out.shape)} dtype {out.dtype} "
                         f"on {out.device}")
    return out


def fp16_group(s: schedules.Schedule, B: int, m: int, n: int) -> int:
    """Panels a group for a ``B x m x n`` batch on the FP16 route under the resolved
    schedule ``s``: ``s.fp16_group`` where set (1 or 2), else (0) one where the first
    update would be row-split (few matrices: the pair update, never row-split, would be a
    few programs sweeping every row, EXPERIMENTS.md N15), two elsewhere (the pair update,
    N9).

    >>> s = _with_knobs(schedules.schedule_for(2048, 2048), None)
    >>> [fp16_group(s, B, n, n) for B, n in ((8, 2048), (60, 1024), (640, 512))]
    [1, 2, 2]
    """
    if s.fp16_group not in (0, 1, 2):
        raise ValueError(f"householder: Schedule.fp16_group must be 0, 1 or 2, got "
                         f"{s.fp16_group}")
    if s.fp16_group:
        return s.fp16_group
    return 1 if _splits(s, 1, B, triton.cdiv(n - s.nb, s.bn), m) else 2


def _splits(s: schedules.Schedule, npan: int, B: int, tiles: int, rows: int, tile_rows: int = 0,
            tile_batch: int = 0) -> bool:
    """:func:`~adaptqr.paths.row_split.splits_rows` under ``s``: never where ``s`` is
    deterministic (a row-split update sums ``W`` with atomics, in no fixed order).

    >>> s = _with_knobs(schedules.schedule_for(4096, 4096), None)
    >>> _splits(s, 1, 2, 63, 4032), _splits(dataclasses.replace(s, deterministic=True), 1, 2, 63, 4032)
    (True, False)
    """
    return ((not s.deterministic or bool(s.w_partials))
            and splits_rows(npan, B, tiles, rows, tile_rows, tile_batch))


def _group_panels(f: _Blocked, g0: int, gend: int, w_slot: int) -> None:
    """The panels of columns ``[g0, gend)``, each applied to the group's later columns; then
    ``f.after_panels(gend)``."""
    for k in range(g0, gend, f.s.nb):
        pw = min(f.s.nb, f.n - k)
        _panel(f, k, pw)
        if k + pw < gend:
            _trailing(f, k, 1, k + pw, gend, None, w_slot)
    if f.after_panels is not None:
        f.after_panels(gend)


def _lookahead_lanes(f: _Blocked, group: int):
    """:class:`~adaptqr.paths.lanes.Lanes` where the schedule asks for look-ahead and it
    applies (CUDA, two groups or more, :func:`lookahead_applies`); else None."""
    if not (f.s.lookahead and f.Ht.is_cuda and f.n > f.s.nb * group):
        return None
    cuda = _cuda_panels(f.s.cuda_panel, f.s.nb, f.Ht.device)
    if not _lookahead_fits(f.B, f.m, f.n, f.s, f.split.sm if f.split is not None else None, cuda,
                           _cluster_rows(f.s.cuda_panel_cluster, cuda)):
        return None
    return Lanes(f.Ht.device)


@functools.lru_cache(maxsize=256)
def _lookahead_fits(B: int, m: int, n: int, s: schedules.Schedule, sm: int | None, cuda: bool,
                    cluster_rows: int) -> bool:
    """:func:`lookahead_applies` to every panel of a ``B x m x n`` factorization under the
    resolved ``s`` (``cuda``, ``cluster_rows``: :func:`_kind_of`'s CUDA C choices). Asked
    once a shape: 640x512's 16 panel kinds took ~70 us of host time a call before its first
    panel launch (run 0028, ``host_time.py``)."""
    return lookahead_applies(s.lookahead, lambda k: _kind_given(B, m, k, s, sm, cuda, cluster_rows)[0],
                             range(0, n, s.nb))


def lookahead_applies(mode: int, kind_of, ks) -> bool:
    """Whether look-ahead ``mode`` (``Schedule.lookahead``, 0 or 1) takes a factorization
    whose panel at column ``k`` runs the kernel ``kind_of(k)`` (``ks``: the panels'
    columns): where no panel is row-split. Each panel is asked, since a shorter panel can
    split where a taller one could not. Never with a row-split panel: its grid barrier needs
    all its programs resident (the rest update could hold their SMs), and its workspace
    would be allocated inside the fork. CUDA C panels and clusters, Triton's register and
    streamed panels are one program (or one cluster) a matrix.

    >>> kinds = {0: "streamed", 32: "row-split", 64: "register"}
    >>> lookahead_applies(1, kinds.get, kinds), lookahead_applies(1, {0: "register"}.get, [0])
    (False, True)
    """
    return mode == 1 and all(kind_of(k) != PANEL_ROW_SPLIT for k in ks)


def _factor_lookahead(f: _Blocked, group: int, f16, lanes: Lanes) -> None:
    """The blocked loop with one group of look-ahead (EXPERIMENTS.md L2): after group G's
    panels, ``hi`` updates group G + 1's columns and factors its panels while ``main``
    applies G to the columns after G + 1. ``hi`` waits for the update of G - 1 on ``main``
    (it covered G + 1's columns), ``main`` for G's panels. The two updates at once use
    separate ``W`` buffers (allocated before the fork: nothing is allocated on ``hi``), where
    an update can be row-split at all (:func:`_may_split_rows`)."""
    nb, n = f.s.nb, f.n
    step = nb * group
    if _may_split_rows(f):
        _w(f, 1)
    lanes.fork()
    with lanes.on_hi():
        _group_panels(f, 0, min(n, step), 1)
    ev_panels = lanes.record(lanes.hi)
    ev_rest = None
    for g0 in range(0, n - step, step):
        gend = g0 + step
        nend = min(n, gend + step)
        npan = triton.cdiv(gend - g0, nb)
        ev_next = None
        if nend < n:
            lanes.wait(lanes.main, ev_panels)
            _trailing(f, g0, npan, nend, n, f16, 0, rest=True)
            ev_next = lanes.record(lanes.main)
        with lanes.on_hi():
            lanes.wait(lanes.hi, ev_rest)
            _trailing(f, g0, npan, gend, nend, f16, 1)
            _group_panels(f, gend, nend, 1)
            ev_panels = lanes.record(lanes.hi)
        ev_rest = ev_next
    lanes.join()


def _may_split_rows(f: _Blocked) -> bool:
    """Whether any update of ``f`` can take the row-split kernels
    (:func:`~adaptqr.paths.row_split.splits_rows` with the fewest tiles and the most rows):
    640x512's never do, and need no ``W``."""
    return _splits(f.s, 1, f.B, 1, f.m, f.s.tile_split_rows, schedules.ONE_TILE_SPLIT_MAX_BATCH)


def _w(f: _Blocked, slot: int) -> WSlot | WParts:
    """The row-split trailing update's ``W`` number ``slot`` (0: the main loop's; 1: the
    look-ahead stream's), allocated on first use: each slice's sums where
    ``Schedule.w_partials``, else one sum by atomics."""
    s = f.s
    while len(f.wbuf) <= slot:
        if s.w_partials:
            sm = _sm_count(f.Ht.device) if f.Ht.is_cuda else 0
            slots = partial_slots(f.B, f.m, f.n, s.bn, sm, s.slice_min_rows or 0)
            f.wbuf.append(WParts(slots, s.bn, s.nb, f.Ht.device))
        else:
            f.wbuf.append(WSlot((f.B, f.n, s.nb), f.Ht.device, bool(s.w_pingpong)))
    return f.wbuf[slot]


class _Blocked(NamedTuple):
    """What every panel and trailing launch of one blocked factorization shares."""

    Ht: torch.Tensor      # (B, n, m): H's columns as rows
    tau: torch.Tensor     # (B, n)
    TW: torch.Tensor      # (B, n_tw, nb, nb): each panel's T
    na: torch.Tensor      # (B,) int32 n_active (any tensor without has_na)
    nz: torch.Tensor      # (B,) int32 n_kept, else n_nonzero (any tensor without has_na)
    has_na: bool
    B: int
    m: int
    n: int
    n_tw: int
    s: schedules.Schedule
    split: Any            # _SplitWork (CUDA), else None
    floor: float          # the reflectors' FLOOR (NEGLIGIBLE_SUBCOLUMN, or 0)
    wbuf: list            # the row-split updates' W (WSlot or WParts), allocated on first use
    after_panels: Any     # factor_householder's after_panels, or None
    v16: Any = None       # (B, group nb, m) float16: the rest update's reflectors (N23, N24)
    y16: Any = None       # ((B, n, 2 nb) float16, (B, n) float32): the split pair's Y (N25)
    gout: Any = None      # (B, n_tw) int32: the Gram panels' outcomes (info.panel_out), or None
    vlo: Any = None       # (B, 2 nb, m) float16: the FP32 pair rest update's low halves (T14)


def panel_kinds(B: int, m: int, n: int, device: torch.device) -> tuple[int, list[str]]:
    """``(nb, kinds)``: the panel width and the kernel each panel of a ``B x m x n``
    factorization on ``device`` runs, in column order (the default schedule; the decisions
    log and ``adaptqr.explain`` show them per matrix). A panel at or past a matrix's
    ``n_active`` exits at once.

    >>> panel_kinds(2, 64, 64, torch.device("cpu"))
    (64, ['one-launch'])
    >>> panel_kinds(2, 2048, 96, torch.device("cpu"))[1] == ["streamed"] * 3  # row-split on a GPU
    True
    """
    s = schedules.schedule_for(m, n)
    if s.small:
        return s.nb, [PANEL_ONE_LAUNCH]
    s = _with_knobs(s, None, n)
    m = work_rows(m, s)
    sm = _sm_count(device) if device.type == "cuda" else None
    kinds = []
    for k in range(0, n, s.nb):
        kind, MB, _ = _kind_of(B, m, k, s, device, sm)
        kinds.append(kind + PANEL_GRAM if _gram(s, B, kind, MB, min(s.nb, n - k)) else kind)
    return s.nb, kinds


def _kind(f: _Blocked, k: int) -> tuple:
    """:func:`_kind_of` the panel at column ``k`` under ``f``'s schedule."""
    return _kind_of(f.B, f.m, k, f.s, f.Ht.device, f.split.sm if f.split is not None else None)


def _panel(f: _Blocked, k: int, pw: int) -> None:
    """Factor columns ``[k, k + pw)`` of every matrix, and their T."""
    Ht, tau, TW, na, has_na, B, m, n, n_tw, s, split, floor = (
        f.Ht, f.tau, f.TW, f.na, f.has_na, f.B, f.m, f.n, f.n_tw, f.s, f.split, f.floor)
    nb = s.nb
    kind, MB, rp = _kind(f, k)
    sep_t = bool(s.t_kernel)
    from_s = False
    if kind in (PANEL_REGISTER_CUDA, PANEL_CLUSTER_CUDA):
        # Builds its own T (no T kernel launch).
        panel_cuda.launch(Ht, tau, TW, na, k, m, n, pw, k // nb, n_tw, nb, MB, has_na, floor,
                          bool(s.cuda_panel_fuse),
                          _cta_rows(MB, s.cuda_panel_rows, s.cuda_panel_cluster)
                          if kind == PANEL_CLUSTER_CUDA else 0, _gram(s, B, kind, MB, pw),
                          f.gout, int(s.cluster_max))
        sep_t = False
    elif kind == PANEL_REGISTER:
        # Off the GPU (the interpreter) no SM count: the latency-bound plan.
        sm = split.sm if split is not None else B + 1
        warps, auto_t = schedules.register_panel_plan(B, sm, nb * MB)
        sep_t = auto_t if s.t_kernel is None else s.t_kernel
        from_s = s.t_from_panel if sep_t else s.t_doubling
        panel_reg_kernel[(B,)](Ht, tau, TW, na, k, m, n, pw, k // nb, n_tw,
                               NB=nb, MB=MB, HAS_NA=has_na, WRITE_T=not sep_t, WRITE_S=from_s,
                               LOG2NB=nb.bit_length() - 1 if from_s and not sep_t else 0,
                               FLOOR=floor, num_warps=warps)
    else:
        wt = not sep_t
        if kind == PANEL_ROW_SPLIT:
            rb, p = rp
            pmax = next_pow2(p)
            WS, SP, CNT = split.get(pmax)
            panel_split_kernel[(B, p)](Ht, tau, TW, na, WS, SP, CNT, k, m, n, pw, k // nb,
                                       n_tw, p, NB=nb, RB=rb, PMAX=pmax, HAS_NA=has_na,
                                       WRITE_T=wt, PAIRS=_pairs(s, rb), FLOOR=floor,
                                       num_warps=_warps(nb * rb))
        else:
            CH = max(16, schedules.REG_PANEL_MAX_TILE // nb)
            panel_chunked_kernel[(B,)](Ht, tau, TW, na, k, m, n, pw, k // nb, n_tw,
                                       NB=nb, CH=CH, HAS_NA=has_na, WRITE_T=wt, FLOOR=floor,
                                       num_warps=_warps(nb * CH))
    if sep_t:
        panel_t_kernel[(B,)](Ht, tau, TW, na, k, m, n, pw, k // nb, n_tw,
                             NB=nb, CH=schedules.T_KERNEL_ROWS, HAS_NA=has_na, FROM_S=from_s,
                             num_warps=schedules.T_KERNEL_WARPS)


#: The largest grid extent on a CUDA grid's second axis: the blocked update puts the batch
#: there (column tiles first, EXPERIMENTS.md T2) up to it.
MAX_GRID_Y = 65535


#: Rows a program of :func:`~adaptqr.paths.kernels.trailing.v16_kernel` converts.
V16_BM = 64


def _v16(f: _Blocked, k0: int, npan: int, lo: bool = False) -> None:
    """:func:`~adaptqr.paths.kernels.trailing.v16_kernel`: the ``npan`` panels from ``k0``
    into ``f.v16`` (with ``lo``, their low halves into ``f.vlo`` too), on the current
    stream (the rest update's, which alone reads them)."""
    v16_kernel[(f.B, triton.cdiv(f.m - k0, V16_BM))](f.Ht, f.na, f.v16,
                                                      f.vlo if lo else f.v16, k0, f.m, f.n,
                                                      HAS_NA=f.has_na, NB=f.s.nb, BM=V16_BM,
                                                      NP=npan, LO=lo)


def _trailing(f: _Blocked, k0: int, npan: int, c_start: int, c_end: int, f16,
              w_slot: int = 0, rest: bool = False) -> None:
    """Apply the ``npan`` panels from column ``k0`` to columns ``[c_start, c_end)``; ``f16``:
    ``(C16, scales)`` of the FP16 route (one or two panels an update), else None;
    ``w_slot``: which ``W`` a row-split update uses (:func:`_w`); ``rest``: the update of
    every column after the next group (its stream owns ``f.v16``)."""
    Ht, TW, na, nz, has_na, B, m, n, n_tw, s = (
        f.Ht, f.TW, f.na, f.nz, f.has_na, f.B, f.m, f.n, f.n_tw, f.s)
    C16, SC = f16 if f16 is not None else (Ht, Ht)
    # One launch a kernel without the FP16 route; with it, one for each route
    # (fp16_storage.F16_*).
    modes = (F16_NONE.value,) if f16 is None else (F16_SKIP.value, F16_ONLY.value)
    # The rest update's FP16 launches read the reflectors from f.v16, copied first (N23, N24).
    v16 = rest and f.v16 is not None and f16 is not None
    fit = max(schedules.FIT_MIN_BN, next_pow2(c_end - c_start))
    bn = min(s.bn, fit)
    tiles = triton.cdiv(c_end - c_start, bn)
    rows = m - k0
    if _splits(s, npan, B, tiles, rows, s.tile_split_rows, schedules.ONE_TILE_SPLIT_MAX_BATCH):
        if v16:
            _v16(f, k0, npan)
        sm = _sm_count(Ht.device) if Ht.is_cuda else 0
        nsplit, per = row_slices(B, tiles, rows, s.bm, sm, s.slice_min_rows or 0)
        wslot = _w(f, w_slot)
        nsplit, per = wslot.fit(B, tiles, rows, s.bm, nsplit, per)
        W, WZ = wslot.take(c_start)
        grid = (B, tiles, nsplit)
        common = dict(NB=s.nb, BN=bn, BM=s.bm, HAS_NA=has_na, PREC=s.prec,
                      PREC_TAIL=s.tail_prec, BM16=s.bm, PARTIAL=bool(s.w_partials),
                      num_warps=schedules.TRAILING_WARPS,
                      num_stages=schedules.TRAILING_STAGES)
        lanes = RouteLanes(s.route_lanes, Ht, f16 is not None, row_split=True)
        for mode in modes:
            # The next W zeroed by the first launch: with route lanes, the side stream's.
            zero = WZ is not None and mode == modes[0]
            with lanes.on(mode):
                use = v16 and mode == F16_ONLY.value
                trailing_w_kernel[grid](Ht, W, na, nz, C16, SC, k0, m, n, c_start, c_end, per,
                                        WZ if zero else W, c_start, f.v16 if use else C16,
                                        F16=mode, ZERO=zero, USE_V16=use, **common)
        for mode in modes:
            with lanes.on(mode):
                use = v16 and mode == F16_ONLY.value
                trailing_u_kernel[grid](Ht, TW, W, na, nz, C16, SC, k0, m, n, c_start, c_end,
                                        n_tw, per, f.v16 if use else C16, F16=mode,
                                        USE_V16=use, **common)
        lanes.join()
        return
    if B * triton.cdiv(c_end - c_start, bn) < schedules.TRAILING_MIN_PROGRAMS:
        bn = 32
    MB = max(16, next_pow2(m - k0))
    resident = bn * MB <= schedules.RESIDENT_MAX_TILE
    bm = MB if resident else s.bm
    tile_major = B <= MAX_GRID_Y
    lanes = RouteLanes(s.route_lanes, Ht, f16 is not None)
    v16 = v16 and npan == 2 and not resident  # the pair update's streamed tiles only
    # The FP32 pair rest update's halves (T14), with the FP16 route's copy in one launch.
    halves = rest and f.vlo is not None and npan == 2 and not resident
    if v16 or halves:
        _v16(f, k0, npan, lo=halves)
    for mode in modes:
        only16 = mode == F16_ONLY.value and not resident
        # Both panels of a group in one pass over a streamed FP16 tile (N9); not for the
        # FP32 launch, which would compile the pair code for nothing.
        pair = npan == 2 and not resident and mode != F16_SKIP.value and f16 is not None
        # The FP32 launch's own pair (T13), in row chunks of s.fp32_pair.
        pair32 = bool(s.fp32_pair) and npan == 2 and not resident and mode != F16_ONLY.value
        bn_l = (min(s.fp16_bn, fit) if s.fp16_fit else s.fp16_bn) if only16 and s.fp16_bn else bn
        tiles = triton.cdiv(c_end - c_start, bn_l)
        grid = (tiles, B) if tile_major else (B, tiles)
        stages = s.fp16_stages if only16 and s.fp16_stages else schedules.TRAILING_STAGES
        with lanes.on(mode):
            if pair and only16 and rest and f.y16 is not None:
                _pair_split(f, k0, c_start, c_end, bn_l, tile_major, C16, SC, v16, stages)
                continue
            h32 = halves and pair32
            trailing_kernel[grid](Ht, TW, na, nz, C16, SC, k0, npan, m, n, c_start, c_end, n_tw,
                                  f.v16 if (v16 and pair) or h32 else C16,
                                  f.vlo if h32 else C16, NB=s.nb, BN=bn_l,
                                  BM=s.fp32_pair if pair32 else max(16, bm),
                                  RESIDENT=resident, PAIR32=pair32, HALVES32=h32,
                                  HAS_NA=has_na, PREC=s.prec, PREC_TAIL=s.tail_prec, F16=mode,
                                  BM16=max(16, bm) if resident else s.bm, PAIR16=pair,
                                  TILE_MAJOR=tile_major, USE_V16=v16 and pair,
                                  num_warps=_warps(bn * bm) if resident else schedules.TRAILING_WARPS,
                                  num_stages=stages)
    lanes.join()


def pair_splits(s: schedules.Schedule, B: int, n: int, group: int) -> bool:
    """Whether the FP16 pair rest updates of a ``B x n`` batch in groups of ``group`` panels
    take :func:`_pair_split` under the resolved ``s``: ``s.pair_split`` rows set, and fewer
    than ``schedules.PAIR_SPLIT_MAX_PROGRAMS`` pair programs over a whole row of column
    tiles (``B * n / s.fp16_bn``; 0 there: ``s.bn``), where the pair kernel's programs leave
    SMs idle.

    >>> s = _with_knobs(schedules.schedule_for(512, 512), None)
    >>> pair_splits(s, 60, 1024, 2), pair_splits(s, 640, 512, 2), pair_splits(s, 60, 1024, 1)
    (True, False, False)
    """
    return (bool(s.pair_split) and group == 2
            and B * triton.cdiv(n, s.fp16_bn or s.bn) < schedules.PAIR_SPLIT_MAX_PROGRAMS)


def _pair_split(f: _Blocked, k0: int, c_start: int, c_end: int, bn: int, tile_major: bool,
                C16: torch.Tensor, SC: torch.Tensor, v16: bool, stages: int) -> None:
    """The FP16-only launch of a rest update of the two panels from ``k0`` as two launches
    (:func:`pair_splits`, EXPERIMENTS.md N25): :func:`~adaptqr.paths.kernels.trailing.pair_y_kernel`
    forms the ``Y`` of each column tile of at most ``schedules.PAIR_SPLIT_BN`` columns into
    ``f.y16``, then ``pair_u_kernel`` updates the tiles by row slices of ``s.pair_split``
    rows (rounded up to the row chunk). Tiles of ``bn`` columns give the pair kernel's bits;
    narrower ones scale ``Y`` by their own tile, so round it otherwise. ``stages``: the
    pair launch's pipelining stages, for both."""
    s, B = f.s, f.B
    Y16, YS = f.y16
    bn = min(bn, schedules.PAIR_SPLIT_BN)
    tiles = triton.cdiv(c_end - c_start, bn)
    V16 = f.v16 if v16 else C16
    pair_y_kernel[(tiles, B) if tile_major else (B, tiles)](
        f.Ht, f.TW, f.na, f.nz, C16, SC, Y16, YS, k0, f.m, f.n, c_start, c_end, f.n_tw, V16,
        NB=s.nb, BN=bn, BM=s.bm, HAS_NA=f.has_na, PREC=s.prec, TILE_MAJOR=tile_major,
        USE_V16=v16, num_warps=schedules.TRAILING_WARPS, num_stages=stages)
    rows = f.m - k0
    per = min(triton.cdiv(rows, s.bm), triton.cdiv(s.pair_split, s.bm)) * s.bm
    pair_u_kernel[(B, tiles, triton.cdiv(rows, per))](
        f.Ht, f.na, f.nz, C16, SC, Y16, YS, k0, f.m, f.n, c_start, c_end, per, V16,
        NB=s.nb, BN=bn, BM=s.bm, HAS_NA=f.has_na, USE_V16=v16,
        num_warps=schedules.TRAILING_WARPS, num_stages=stages)


#: Above torch's and reference's: the default for what :func:`capable` accepts.
PRIORITY = 100


def _spec(fn):
    return lambda spec: fn(spec.batch, spec.m, spec.n, spec.dtype, spec.device_type)


PATH = Path(
    name=NAME,
    impl=factor_householder,
    supports=_spec(capable),
    classes=ALL_CLASSES,
    priority=PRIORITY,
    capturable=True,
    routed=True,  # reads features["n_active"] and skips the negligible tail itself
    reads_routes=_spec(uses_routes),
    panels=lambda spec, device: panel_kinds(spec.batch, spec.m, spec.n, device),
    description="Triton blocked Householder (compact WY), CUDA float32; routes per matrix on the device",
)
