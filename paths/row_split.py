"""The row-split trailing update's host side: whether an update splits its rows
(:func:`splits_rows`), into how many slices (:func:`row_slices`), and its ``W`` buffers,
one :class:`WSlot` a stream, or one :class:`WParts` where each slice keeps its own sums
(``Schedule.w_partials``, sized by :func:`partial_slots`; no zeroing then).

A row-split update (:func:`adaptqr.paths.kernels.trailing.trailing_w_kernel`, then
``trailing_u_kernel``) sums ``W = C^T V`` over row slices with atomics, so its ``W`` must
hold zeros where it sums. A slot hands out that ``W``: plain, one buffer zeroed by a launch
before each update; or two buffers (``pingpong``, ``Schedule.w_pingpong``), zeroed once
when allocated, that the updates of a stream alternate between, each update's W kernel
zeroing the other one from its first column on for the next update (``ZERO``). The
zeroing launch then leaves the stream's chain (EXPERIMENTS.md T8).

Example (CPU)::

    >>> import torch
    >>> slot = WSlot((2, 8, 4), torch.device("cpu"), pingpong=True)
    >>> W, WZ = slot.take(0)
    >>> _ = W.fill_(1.0)  # the update's sums
    >>> _ = WZ.zero_()  # what its W kernel zeroes
    >>> W2, _ = slot.take(4)
    >>> W2 is WZ, bool(W2[:, 4:].eq(0).all())
    (True, True)
"""

from __future__ import annotations

import functools

import torch
import triton

from adaptqr.paths import schedules


def splits_rows(npan: int, B: int, tiles: int, rows: int, tile_rows: int = 0,
                 tile_batch: int = 0) -> bool:
    """Whether an update of ``npan`` panels over ``B x tiles`` column tiles of ``rows`` rows
    is split over rows too (too few column tiles to fill the GPU; W through atomics): from
    ``2 * TRAILING_SPLIT_MIN_ROWS`` rows, or from ``tile_rows`` (``Schedule.tile_split_rows``,
    if lower) for an update of one tile of at most ``tile_batch`` matrices
    (``schedules.ONE_TILE_SPLIT_MAX_BATCH``; EXPERIMENTS.md T6).

    >>> splits_rows(1, 1, 1, 480), splits_rows(1, 1, 1, 480, 256, 8), splits_rows(1, 1, 2, 480, 256, 8)
    (False, True, False)
    >>> splits_rows(1, 40, 1, 320, 256, 8)
    False
    """
    floor = 2 * schedules.TRAILING_SPLIT_MIN_ROWS
    if tile_rows and tiles == 1 and B <= tile_batch:
        floor = min(floor, tile_rows)
    return npan == 1 and B * tiles < schedules.TRAILING_SPLIT_PROGRAMS and rows >= floor


@functools.lru_cache(maxsize=4096)
def row_slices(B: int, tiles: int, rows: int, bm: int, waves_sm: int = 0, min_rows: int = 0
               ) -> tuple[int, int]:
    """``(nsplit, per)``: a row-split update's slices of ``per`` rows (a multiple of ``bm``).

    With ``waves_sm`` (the SM count, on a GPU), the slice count that minimises whole waves
    of programs (``TRAILING_SPLIT_CTAS_PER_SM`` an SM) times the rows a program sweeps;
    else about ``TRAILING_SPLIT_PROGRAMS`` programs. Slices of at least
    ``TRAILING_SPLIT_MIN_ROWS`` rows either way; of at least ``min_rows`` (if given, on a
    GPU) where slices of that floor would not fill one wave (the look-ahead's update of one
    column tile; a rest update keeps its wave choice, EXPERIMENTS.md T4). 2x4096's first
    update is 630 programs (2.4 waves) the old way, 252 (one wave) by waves (F2).

    >>> row_slices(2, 63, 4032, 64)
    (5, 832)
    >>> row_slices(2, 63, 4032, 64, 132)
    (2, 2048)
    """
    cap = triton.cdiv(rows, schedules.TRAILING_SPLIT_MIN_ROWS)
    slots = schedules.TRAILING_SPLIT_CTAS_PER_SM * waves_sm
    if min_rows and B * tiles * cap < slots:
        cap = triton.cdiv(rows, min_rows)
    if not waves_sm:
        nsplit = min(cap, triton.cdiv(schedules.TRAILING_SPLIT_PROGRAMS, B * tiles))
        per = triton.cdiv(triton.cdiv(rows, nsplit), bm) * bm
        return triton.cdiv(rows, per), per
    best = None
    for nsplit in range(1, cap + 1):
        per = triton.cdiv(triton.cdiv(rows, nsplit), bm) * bm
        ns = triton.cdiv(rows, per)
        cost = triton.cdiv(B * tiles * ns, slots) * per
        if best is None or cost < best[0]:  # ties: fewer slices, fewer atomics
            best = (cost, ns, per)
    return best[1], best[2]


class WSlot:
    """The ``W`` of one stream's row-split updates, plain or ``pingpong`` (the module doc)."""

    def __init__(self, shape: tuple, device: torch.device, pingpong: bool):
        """``shape``: ``(B, n, NB)``, a float32 ``W`` for every column of every matrix."""
        make = torch.zeros if pingpong else torch.empty
        self.bufs = [make(shape, dtype=torch.float32, device=device)
                     for _ in range(2 if pingpong else 1)]
        self.parity = 0
        self.clean_from = 0  # bufs[parity] holds zeros from this column on

    def take(self, c_start: int) -> tuple:
        """``(W, WZ)`` for an update of the columns from ``c_start`` on: ``W`` zero there;
        ``WZ`` the buffer its W kernel zeroes from ``c_start`` on, or None (plain: ``W``
        zeroed here)."""
        W = self.bufs[self.parity]
        if len(self.bufs) == 1:
            W.zero_()
            return W, None
        if c_start < self.clean_from:
            W.zero_()  # never in householder's loops: a stream's updates only move right
        self.parity ^= 1
        self.clean_from = c_start
        return W, self.bufs[self.parity]

    def fit(self, B: int, tiles: int, rows: int, bm: int, nsplit: int, per: int
            ) -> tuple[int, int]:
        """``(nsplit, per)`` as :func:`row_slices` gave them: one ``W`` holds any slices."""
        return nsplit, per


def partial_slots(B: int, m: int, n: int, bn: int, sm: int, min_rows: int = 0) -> int:
    """A bound on ``B * tiles * nsplit`` over the row-split updates of a ``B x m x n``
    factorization with column tiles of at most ``bn`` (:func:`row_slices` on ``sm`` SMs,
    slices of at least ``min_rows`` where few tiles are): the slots of :class:`WParts`.
    Tiles of many matrices take at most ``rows / TRAILING_SPLIT_MIN_ROWS`` slices; only
    where those would not fill a wave do thinner ones (``min_rows``) come in.

    >>> partial_slots(2, 4096, 4096, 64, 132, 64), partial_slots(8, 2048, 2048, 64, 132, 64)
    (2048, 2048)
    """
    many = B * triton.cdiv(n, bn) * triton.cdiv(m, schedules.TRAILING_SPLIT_MIN_ROWS)
    few = 0
    if sm and min_rows:
        few = (triton.cdiv(schedules.TRAILING_SPLIT_MIN_ROWS, min_rows)
               * schedules.TRAILING_SPLIT_CTAS_PER_SM * sm)
    return max(many, few)


class WParts:
    """The ``W`` of one stream's row-split updates as each slice's own sums
    (``Schedule.w_partials``, EXPERIMENTS.md N26): ``slots`` blocks of ``[bn, NB]`` float32,
    program (b, t, s) of an update storing block ``(b nsplit + s) tiles + t``, its U kernel
    adding a tile's blocks in slice order. So the same bits every call, and no zeroing.

    >>> parts = WParts(4, 8, 2, torch.device("cpu"))
    >>> parts.fit(1, 2, 100, 16, 3, 48)  # 6 blocks asked, 4 held: 2 slices of 64 rows
    (2, 64)
    >>> parts.fit(1, 2, 100, 16, 2, 64)
    (2, 64)
    >>> parts.fit(1, 5, 100, 16, 1, 112)
    Traceback (most recent call last):
    ...
    RuntimeError: row_split: 1 x 5 column tiles exceed the 4 blocks of W sized for this factorization
    """

    def __init__(self, slots: int, bn: int, nb: int, device: torch.device):
        self.slots = slots
        self.buf = torch.empty(slots * bn * nb, dtype=torch.float32, device=device)

    def take(self, c_start: int) -> tuple:
        """``(W, None)``, as :meth:`WSlot.take` (nothing to zero)."""
        return self.buf, None

    def fit(self, B: int, tiles: int, rows: int, bm: int, nsplit: int, per: int
            ) -> tuple[int, int]:
        """``(nsplit, per)`` of :func:`row_slices`, with fewer, taller slices where its
        blocks would not fit (never where :func:`partial_slots` sized them)."""
        most = self.slots // (B * tiles)
        if most < 1:
            raise RuntimeError(f"row_split: {B} x {tiles} column tiles exceed the {self.slots} "
                               f"blocks of W sized for this factorization")
        if nsplit <= most:
            return nsplit, per
        per = triton.cdiv(triton.cdiv(rows, most), bm) * bm
        return triton.cdiv(rows, per), per
