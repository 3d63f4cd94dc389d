"""Panel-width schedules of the Householder path, as named data.

A schedule says, for one matrix shape, how :func:`adaptqr.paths.householder.factor_householder`
cuts the columns: ``nb`` columns per panel (one panel kernel launch each), ``group`` panels
per trailing-update group (the far trailing columns are updated once per group, all of its
panels applied while the column tile is in registers when it fits), the trailing
kernel's column tile ``bn`` and row chunk ``bm``, and the product precision.

Register budgets (elements of float32 held by one program; a program of 8 warps holds 64
registers per thread per 16K elements, more spills):

* ``SMALL_MAX_TILE``: ``next_pow2(n) * next_pow2(m)`` at or below it -> the whole QR is one
  launch of the register panel kernel with ``NB = next_pow2(n)`` (n <= 128 for square).
* ``REG_PANEL_MAX_TILE``: a panel whose ``nb * next_pow2(m - k)`` fits stays in registers;
  taller panels stream row chunks of ``REG_PANEL_MAX_TILE // nb`` through L2.
* ``RESIDENT_MAX_TILE``: a trailing column tile ``bn * next_pow2(m - k)`` that fits is
  updated in registers for the whole group.

Measurements behind the numbers are in docs/EXPERIMENTS.md.

Example::

    >>> from adaptqr.paths.schedules import schedule_for
    >>> s = schedule_for(512, 512)
    >>> (s.small, s.nb, s.group)
    (False, 32, 1)
    >>> schedule_for(64, 64).small
    True
"""

from __future__ import annotations

from dataclasses import dataclass

#: Whole QR in one launch when next_pow2(n) * next_pow2(m) is at most this (square: n <= 64).
#: At 16K (n <= 128) the one-launch kernel spilled: blocked nb 16 took about half its time
#: for n = 80..128 on the H200 (24x128 0.327 -> 0.175 ms, 32x96 0.247 -> 0.123, 40x128
#: 0.330 -> 0.179, 64x80 0.207 -> 0.098; EXPERIMENTS.md H10).
SMALL_MAX_TILE = 4096
#: Panel tile held in registers up to this many elements (32 x 512); taller panels stream.
REG_PANEL_MAX_TILE = 16384
#: Trailing column tile kept in registers over a whole group up to this many elements.
#: 16K ([32, 512]) spilled badly on the H200: 640x512 trailing alone took 198 ms against
#: ~4 ms for cuBLAS (EXPERIMENTS.md, run 1); only small tiles stay resident.
RESIDENT_MAX_TILE = 2048
#: Row-split panel: fewest rows a program takes (fewer makes the per-column barrier the cost).
#: 128 and 256 were slower on the H200: 2x4096 26.2 / 27.2 / 32.2 ms at 64 / 128 / 256,
#: 8x2048 13.4 / 13.4 / 15.6 (EXPERIMENTS.md S1).
SPLIT_MIN_ROWS = 64
#: Register panels in CUDA C (kernels/panel_cuda.py, where cupy imports and the width is
#: 32) instead of Triton. Public call, same run (EXPERIMENTS.md H12, run 1932): 640x512
#: 7.75 -> 5.95 ms, rankdef 7.68 -> 6.15, 60x1024 6.71 -> 6.58, 1x512 1.42 -> 1.13; the
#: cases without such panels (20x32, 40x176, 40x352) within their run-to-run spread. The
#: ``cuda_panel`` knob (0 / 1) sets it per call.
CUDA_PANEL = True


#: The tallest panel (padded rows) the CUDA C kernel takes: 1024 (512 threads of two rows,
#: one CTA an SM); taller panels go row-split or streamed. Against 512 (H12's bound; the
#: panels of 513-1024 rows row-split or streamed), same run (EXPERIMENTS.md H13, run 2343):
#: 60x1024 dense 6.41 -> 4.54 ms, mixed 7.89 -> 6.25, nearrank 9.00 -> 7.39, geomean 3.195
#: -> 3.064; batch 1 (row-split below the SM count) and the other cases unchanged. The knob
#: ``cuda_panel_rows=512`` restores H12's bound.
CUDA_PANEL_MAX_ROWS = 1024
#: CUDA C column steps that take their column's scalars from the step before (a downdate,
#: guarded), so that most steps exchange their sums once, not twice. Against two exchanges,
#: same run (EXPERIMENTS.md H17, run 0148): 640x512 5.97 -> 5.53 ms, 60x1024 4.31 -> 3.92,
#: 8x2048 7.72 -> 7.09, 2x4096 19.23 -> 17.52, 1x1024 3.00 -> 2.61; geomean 2.888 -> 2.731;
#: 20x32, 40x176, 40x352 (Triton panels) unchanged. Knob ``cuda_panel_fuse=0`` for two.
CUDA_PANEL_FUSE = True

#: CUDA C panels of 32 columns on CTAs of 64-256 threads try each matrix's panel as
#: CholeskyQR2 rebuilt into Householder form first, and take the column steps where its
#: tests reject the panel (knob ``gram_panel``; EXPERIMENTS.md H22), in batches of at most
#: GRAM_PANEL_MAX_BATCH matrices. Run 1639, Gram / column steps, ms: 8x2048 5.58 / 6.01,
#: 2x4096 13.58 / 14.33; run 1635: 1x512 0.757 / 0.820, 1x1024 1.560 / 1.867, 1x4096 10.04
#: / 10.39. Where many matrices keep every SM busy the Gram's extra products cost more
#: than its shorter chain saves (run 1639: 640x512 5.80 / 5.55, 40x352 0.661 / 0.625,
#: 40x176 0.269 / 0.255). Batches between (run 0014, EXPERIMENTS.md H23; 8 / 40 matrices
#: tried, ms): 16x512 0.988 / 0.928, 32x512 1.185 / 1.073, 16x1024 2.573 / 2.253, 32x1024
#: 3.144 / 2.719; 40x512 1.171 / 1.182 and 40x1024 3.194 / 3.207 no longer gain. Since
#: H32 shortened the Gram build's chains, batches to 64 gain too (H100, session 43's runs
#: 1912-1913, at most 32 / 64 matrices, ms): 40x176 0.243 / 0.230, 40x352 0.603 / 0.588,
#: 40x512 1.122 / 1.066, 64x384 0.770 / 0.738, 64x512 1.369 / 1.339, 64x176 clustered
#: 0.170 / 0.163; n 768-1024 (first panels too tall for the build) within 1.1 %
#: (EXPERIMENTS.md H34).
GRAM_PANEL = True
GRAM_PANEL_MAX_BATCH = 64
#: Past ``GRAM_PANEL_MAX_BATCH``, panels of at most ``GRAM_SMALL_PANEL_ROWS`` padded rows (one
#: row a thread) take the Gram build too in batches of at most this many matrices (0: none):
#: each still one CTA on an SM of its own. H100 run 0920 (EXPERIMENTS.md H51), the Gram build
#: for every panel that can take it, ms, column steps / Gram: 80x176 0.276 / 0.253, 100x256
#: 0.525 / 0.456, 128x352 0.865 / 0.787, 120x352 rankdef 0.715 / 0.684; with two rows a
#: thread (512-row panels) 96x512 1.432 / 1.457 and 72x768 2.181 / 2.216 lose. At two CTAs
#: an SM too (run 0940, H51c, default then bound 128 / 264): 132x256 0.466 / 0.442, 160x176
#: 0.386 / 0.339, 200x256 0.632 / 0.568, 256x352 1.350 / 1.271. Up to 512 (run 1150, H51d,
#: bound 264 / 640): 300x256 0.862 / 0.841, 400x176 0.633 / 0.577, 512x352 2.518 / 2.477;
#: not at 640 matrices: 640x256 1.562 / 1.585, and on the 12 cases (run 1523, the 640-matrix
#: cases, whose last 8 panels it would take) 640x512 +1.0 %, mixed +2.6 %, rankdef +1.8 %
#: (H51e). Knob ``gram_small_batch``.
GRAM_SMALL_PANEL_MAX_BATCH = 512
GRAM_SMALL_PANEL_ROWS = 256
#: The Gram build's Grams on tensor cores (3xTF32 mma.sync; the CUDA C macro ``GRAM_MMA``;
#: sm_80 and up, ``panel_cuda.MMA_MIN_CAPABILITY``). H100 run 1149 (EXPERIMENTS.md H52), ms,
#: scalar / mma: 40x176 0.2211 / 0.2119, 40x352 0.5332 / 0.5244, 8x2048 4.818 / 4.684,
#: 2x4096 8.965 / 8.550, 640x512 mixed 5.304 / 5.094; run 1150: 132x256 0.460 / 0.445,
#: 160x176 0.345 / 0.335, 200x256 0.586 / 0.568, 256x352 1.318 / 1.286; 640x512 dense
#: (no Gram panel) 5.148 / 5.226, noise. Knob ``gram_mma``.
GRAM_MMA = True
#: The panels above ``CUDA_PANEL_MAX_ROWS`` (up to 4096 rows) in CUDA C too, a cluster of
#: CTAs of this many rows a matrix (panel_cuda.cluster_shape: 128-1024, at most 8 CTAs; the
#: block sums meet in distributed shared memory) instead of row-split panels synchronized
#: through global memory; 0: off. Against off, same run (EXPERIMENTS.md H16, run 0138):
#: 8x2048 8.96 -> 7.83 ms, 2x4096 20.90 -> 19.28, 1x3072 10.58 -> 9.62, 1x4096 16.47 ->
#: 14.89. CTAs of 256 rows lost there (8x2048 8.07, 2x4096 19.50) but gained once the
#: Gram panels and the FP16 route to 4096 were in (EXPERIMENTS.md H25, run 1218, 512 / 256
#: rows, ms): 8x2048 5.539 / 5.451, 2x4096 10.474 / 10.324, 1x3072 5.755 / 5.628, 1x4096
#: 8.166 / 8.064; 1024 rows lost in H16 (8.55, 20.91). Knob
#: ``cuda_panel_cluster``; with the knob ``cuda_panel_rows=256`` it splits the panels of 512
#: and 1024 rows too (batch 1, CTAs of 128 rows: 1x768 2.03 -> 1.87, 1x1024 3.02 -> 2.74).
CUDA_PANEL_CLUSTER = 256
#: The most CTAs of a cluster panel: 8 (panel_cuda.MAX_CLUSTER, portable), or 16 (sm_90's
#: non-portable size, opted in at the kernel's load): 4096-row panels at CTAs of 256 rows
#: in 16 CTAs of one row a thread instead of 8 of two, so the Gram build's per-row work
#: (two Grams, three solves) halves a CTA. H100, ms, 8 / 16: run 1652, 1x4096 7.692 /
#: 7.168, 2x4096 9.512 / 9.112; session 43's run 1855, 1x4096 7.478 / 7.153, 2x4096 9.501
#: / 9.163, 1x3072 5.029 / 4.931, the other cases within noise. Where the driver says no
#: cluster of 16 such CTAs can be placed (a MIG slice, small GPCs), the launch keeps 8
#: (panel_cuda._clusters_fit). EXPERIMENTS.md H33; knob ``cluster_max``.
CUDA_PANEL_CLUSTER_MAX = 16
#: The panels of 257 to ``CUDA_PANEL_MAX_ROWS`` padded rows take clusters of CTAs of
#: ``CLUSTER_SMALL_CTA_ROWS`` rows (4 or 8 a matrix), so that few matrices use more SMs,
#: while the batch's CTAs (``B * MB / CLUSTER_SMALL_CTA_ROWS``) are at most
#: ``CLUSTER_SMALL_CTAS`` (0: none). Against one CTA, same run (EXPERIMENTS.md H16, runs
#: 0148-0149, then for batches of at most 32), ms: 1x512 1.132 -> 1.093, 1x1024 3.00 ->
#: 2.71, 2x1024 3.03 -> 2.73, 8x1024 3.13 -> 2.80, 16x1024 3.19 -> 2.93, 32x1024 3.55 ->
#: 3.42, 32x512 1.383 -> 1.375 (CTAs of 256 rows: 2.93, 3.43, 1.381). Larger batches, H100
#: run 0903 (EXPERIMENTS.md H48, against batches of at most 32): 40x352 0.586 -> 0.546 (160
#: CTAs), 64x512 1.271 -> 1.175 (256), 60x1024 dense 3.426 -> 3.250 and nearrank 4.463 ->
#: 4.207 (its 512-row panels, 240), 48x768 1.945 -> 1.904; 60x1024 mixed 4.006 -> 4.073
#: (inside its spread); 192 gains less (60x1024 3.355). H47: 60x1024's 1024-row panels
#: (480 CTAs) +10 %. The budget holds every batch of at most 32 (8 CTAs a matrix at most).
#: Knob ``cluster_ctas``.
CLUSTER_SMALL_CTA_ROWS = 128
CLUSTER_SMALL_CTAS = 256
#: Panels of 129-256 padded rows (two CTAs of 128 rows) take clusters while the batch's
#: CTAs (``2 B``) are at most this many (0: none). Against 0,
#: H100 run 0906 (EXPERIMENTS.md H48b), ms: 40x176 0.2230 -> 0.2161, 32x256 0.3244 ->
#: 0.3155, 48x256 0.3542 -> 0.3447, 64x176 0.2336 -> 0.2308, 16x224 0.2626 -> 0.2538,
#: 100x256 (200 CTAs, not taken) 0.525 both; 64 gains at 16x224 and 32x256 only. Run
#: 0903: at 200-256 CTAs two-CTA clusters lose 3-12 %. Knob ``cluster_pair_ctas``.
CLUSTER_PAIR_CTAS = 128
#: One group of look-ahead (EXPERIMENTS.md L2, L3): where no panel is row-split, the
#: panels and each update's next group of columns on a high-priority stream, the rest of
#: each update on the caller's stream beside them. Against off, same run (run 0213, where
#: every panel was CUDA C): 2x4096 17.37 -> 14.88 ms, 60x1024 3.95 -> 3.81, mixed 5.37 ->
#: 4.84, nearrank 6.36 -> 5.91, 640x512 mixed / rankdef / clustered -2.5 %, 640x512 dense
#: 5.69 -> 5.79, 8x2048 6.90 -> 6.87; geomean 2.765 -> 2.672; 1x4096 13.12 -> 11.27 (run
#: 0212). Over Triton's panels too (L3, run 0416, against CUDA C panels only): 40x352
#: 0.793 -> 0.712, 40x176 0.253 -> 0.254. Knob ``lookahead``: 0 off.
LOOKAHEAD = 1
#: Route lanes (EXPERIMENTS.md N19): with the FP16 route, each trailing update launches once
#: a route (fp16_storage.F16_SKIP, then F16_ONLY), and the launch for a route no matrix
#: takes exits at once but still holds its place on the chain (N16, N18: ~1.5 us each,
#: 468 of them at 2x4096). 1: in a CUDA graph capture, the FP32 route's launches go on a
#: side stream of the current one, beside the FP16 route's (the routes update different
#: matrices), joined after; 0: off; 3: as 1, for row-split updates only. Run 0819 (side
#: by side): 1 took 2x4096 10.69 -> 10.45 ms, 1x4096 8.71 -> 8.24, 1x3072 6.17 -> 5.75,
#: 2x4096 mixed 14.35 -> 11.54, 8x2048 unchanged; 2 (eager calls too, two event waits an
#: update in host time) was no better than 1 and was removed. Run 0840 (0 / 1 / 3 side by
#: side): 1 cost the tile updates of 60x1024 dense 5 % (3.76 / 3.95 / 3.77 ms) while 3
#: kept the row-split gains (2x4096 10.68 / 10.38 / 10.35, 1x3072 6.20 / 5.74 / 5.73);
#: 12-case geomean 2.407 / 2.403 / 2.394. Knob ``route_lanes``.
ROUTE_LANES = 3
#: The row-split updates' W in two buffers a stream, each update's W kernel zeroing the
#: next one's, instead of a zeroing launch before each update (row_split.WSlot). Side by
#: side (EXPERIMENTS.md T8, run 1620), ms, off / on: 8x2048 5.476 / 5.326, 2x4096 10.311 /
#: 10.140; batch 1 within 2 % (1x4096 8.096 / 8.029). Knob ``w_pingpong`` (0: off).
W_PINGPONG = True
#: The FP16-only update's column tile fitted to its columns (``min(fp16_bn, next_pow2)``),
#: as the FP32 launch's is (N10's ``fit_bn``): the look-ahead's update of the next group's
#: 64 columns then runs 64-wide tiles instead of half-masked 128-wide ones. Side by side
#: (EXPERIMENTS.md N21, run 0536), ms, off / on: 640x512 5.643 / 5.537, mixed 5.865 / 5.720,
#: 60x1024 3.879 / 3.561, mixed 4.731 / 4.603, 100x768 2.850 / 2.706. Knob ``fp16_fit``
#: (0: off).
FP16_FIT = True
#: The FP16 route's rest updates read their panels' reflectors from a float16 copy made
#: once an update (``trailing.v16_kernel``, on the rest update's stream before it) instead
#: of from Ht in float32, twice a column tile or row slice: 640x512's first rest update
#: moved 1.16 GB from DRAM for ~0.5 GB of tile traffic (ncu, run 0525); a row-split one
#: reads as many reflector bytes as tile bytes. The same bits. Side by side (EXPERIMENTS.md
#: N23: pairs of panels; N24: row-split updates; run 0741), ms, off / on: 8x2048 5.332 /
#: 5.000, 2x4096 10.14 / 9.49, 4x3072 8.381 / 7.815, 1x4096 8.058 / 7.900, 640x512 5.557 /
#: 5.451, 60x1024 3.565 / 3.540. Knob ``fp16_v16`` (0: off).
FP16_V16 = True
#: The FP16 pair rest update in two launches where the pair kernel has few programs: its
#: Y by column tiles of ``PAIR_SPLIT_BN``, then its read-update-write over row slices of
#: ``PAIR_SPLIT_ROWS`` rows a program (0: one launch, the pair kernel), for batches with
#: fewer than ``PAIR_SPLIT_MAX_PROGRAMS`` pair programs over a row of column tiles
#: (``householder.pair_splits``). Run 0811 (EXPERIMENTS.md N25), ms, pair kernel / split
#: at 64 columns and 128 rows: 60x1024 3.503 / 3.338, mixed 4.515 / 4.461, 160x512 1.705 /
#: 1.635, 100x768 2.634 / 2.579, 320x512 mixed 3.195 / 3.167, 24x1024 2.386 / 2.382; but
#: 640x512 5.097 / 5.252 (2560 programs: the rule keeps it on the pair kernel). Knob
#: ``pair_split`` (rows; 0: off).
PAIR_SPLIT_ROWS = 128
PAIR_SPLIT_BN = 64
PAIR_SPLIT_MAX_PROGRAMS = 1024
#: The row-split updates' W as each slice's own sums, added in slice order by the U kernel
#: (``row_split.WParts``), instead of one sum by atomics in the order the programs run: the
#: same bits every call, and no zeroing of W. None: exactly in the deterministic mode
#: (``Schedule.deterministic``), where the alternative is no row split at all. Measured
#: on the H200 (EXPERIMENTS.md N26, N26b; runs 1145, 1153), ms, atomics / partials /
#: the mode without a split / the mode with partials: 2x4096 9.53 / 10.75 / 21.09 /
#: 10.77, 1x4096 7.88 / 8.46 / 19.71 / 8.53, 4x3072 7.63 / 8.07 / 13.39 / 8.24, 8x2048
#: 5.07 / 5.30 / 6.90 / 5.31; 60x1024 and 65x512 within 3 % throughout. Knob
#: ``w_partials`` (0: off, 1: on, in and out of the mode).
W_PARTIALS = None
#: The FP32 route's update of a group's two panels (npan 2: the FP16 route offered, its
#: groups) in one pass over each streamed tile (trailing._apply_pair_f32), not two: half
#: its reads and writes of the trailing matrix. N13 rejected it under tf32x3 products (the
#: update was bound by its products, not its traffic); since T10 they are "f16x3", at twice
#: the rate. 0: off; else the pair's row chunk, 16 or 32 (triton 3.6, sm_90, 4 warps, BN
#: 64: 150 / 242 registers, no spill, against the two-pass launch's 209 at 64 rows; 64
#: spills, as N13's did). H100, ms, 0 / 32: run 1652, 640x512 rankdef 5.306 / 5.142,
#: clustered 5.857 / 5.670, 60x1024 nearrank 5.257 / 4.869; session 43's run 1900 (nine
#: cases, two unseen), rankdef 5.216 / 5.032, clustered 5.829 / 5.442, nearrank 5.207 /
#: 4.842, 48x1024 clustered 3.563 / 3.199, 100x768 rankdef 2.907 / 2.798, dense within
#: 0.3 %; 16 was slower than 0 throughout. Its taus as close to float64's as two passes'
#: (tests/gpu, test_fp32_pair_matches). EXPERIMENTS.md T13; knob ``fp32_pair``.
FP32_PAIR = 32
#: The FP32 route's pair update (``FP32_PAIR``) in "f16x3" from both panels' float16 halves
#: made once an update (:func:`~adaptqr.paths.kernels.trailing.v16_kernel` with ``LO``), as
#: Q formation's QF28 / QF29, instead of splitting every ``V`` chunk in every column tile's
#: program; the rest update only (its stream owns the copies, as N23's). H100, run 1202
#: (EXPERIMENTS.md T14; the 12 cases side by side, ms, split in every program / halves):
#: rankdef 5.012 / 4.799, nearrank 4.897 / 4.532, 640x512 mixed 5.631 / 5.561, clustered
#: 5.425 / 5.479, 60x1024 mixed 4.050 / 4.102 (the last two within the run's spread; the
#: cases without FP32 pair updates moved as much). Knob ``fp32_halves``.
FP32_HALVES = True


def _knob_or(knobs, name: str, constant):
    """The knob ``name`` of ``knobs`` (the current settings snapshot's where None), or
    ``constant`` where the knob is unset."""
    if knobs is None:
        from adaptqr import config

        knobs = config.snapshot().knobs
    return knobs.get(name, constant)


#: The experiment knobs the Householder schedule reads, by name (the ``Schedule`` field and
#: the ``adaptqr.config.Knobs`` field are the same): the constant that stands where the knob
#: is unset (its name in this module, read at each lookup, so that a measuring script may
#: set it between calls) and the value's type.
SCHEDULE_KNOBS = {
    "cuda_panel": ("CUDA_PANEL", bool),
    "cuda_panel_rows": ("CUDA_PANEL_MAX_ROWS", int),
    "cuda_panel_fuse": ("CUDA_PANEL_FUSE", bool),
    "gram_panel": ("GRAM_PANEL", bool),
    "gram_max_batch": ("GRAM_PANEL_MAX_BATCH", int),
    "gram_small_batch": ("GRAM_SMALL_PANEL_MAX_BATCH", int),
    "gram_mma": ("GRAM_MMA", bool),
    "cuda_panel_cluster": ("CUDA_PANEL_CLUSTER", int),
    "cluster_max": ("CUDA_PANEL_CLUSTER_MAX", int),
    "cluster_ctas": ("CLUSTER_SMALL_CTAS", int),
    "cluster_pair_ctas": ("CLUSTER_PAIR_CTAS", int),
    "lookahead": ("LOOKAHEAD", int),
    "route_lanes": ("ROUTE_LANES", int),
    "slice_min_rows": ("TRAILING_SLICE_MIN_ROWS", int),
    "tile_split_rows": ("ONE_TILE_SPLIT_ROWS", int),
    "fp16_group": ("FP16_GROUP", int),
    "small_n_nb": ("SMALL_N_NB", int),
    "w_pingpong": ("W_PINGPONG", bool),
    "fp16_fit": ("FP16_FIT", bool),
    "fp16_v16": ("FP16_V16", bool),
    "pair_split": ("PAIR_SPLIT_ROWS", int),
    "w_partials": ("W_PARTIALS", bool),
    "fp32_pair": ("FP32_PAIR", int),
    "fp32_halves": ("FP32_HALVES", bool),
}


def knob(name: str, knobs=None):
    """The ``SCHEDULE_KNOBS`` knob ``name`` of ``knobs`` (the current settings snapshot's
    where None), else its constant.

    >>> knob("cuda_panel_cluster") == CUDA_PANEL_CLUSTER
    True
    """
    constant, kind = SCHEDULE_KNOBS[name]
    value = _knob_or(knobs, name, globals()[constant])
    return None if value is None else kind(value)  # None: the resolver decides (W_PARTIALS)


def knob_constants() -> tuple:
    """The ``SCHEDULE_KNOBS`` constants' values now (a cache key's part)."""
    return tuple(globals()[constant] for constant, _ in SCHEDULE_KNOBS.values())


def split_min_rows() -> int:
    """``SPLIT_MIN_ROWS``, or the ``split_min_rows`` knob of the current settings snapshot
    (where no schedule gives ``Schedule.split_min_rows``)."""
    return _knob_or(None, "split_min_rows", SPLIT_MIN_ROWS)


#: Fewer trailing programs than this (about 2 per SM) -> narrower column tiles (bn = 32).
TRAILING_MIN_PROGRAMS = 264
#: Below this many (matrix, column tile) programs a one-panel update is split over rows
#: too (W summed with atomics): 2x4096 trailing took 25 ms with one program per column
#: tile sweeping all 4096 rows (EXPERIMENTS.md, run 2). 1024 was 1 % faster on 2x4096 and
#: 8x2048 (S2) but sends 60x1024's first panels (960 tiles) to the split update: 9.86 ->
#: 10.31 ms through the public call (run 1158); a threshold of 512 keeps them whole. Off
#: the GPU (no SM count) it is also the programs the row slices aim at.
TRAILING_SPLIT_PROGRAMS = 512
#: Fewest rows per row slice of the split update.
TRAILING_SPLIT_MIN_ROWS = 256
#: Fewest rows a slice of a row-split update takes where slices of
#: ``TRAILING_SPLIT_MIN_ROWS`` would not fill one wave (row_split.row_slices; 0: no
#: such floor). The look-ahead stream's update of the next panel's 32 columns at 2x4096
#: was 2 x 16 programs of 256 rows, 10.7 us (W) and 11.9 us (U) in ncu at 6 % occupancy
#: (run 0403), on that stream's chain before every panel. Against 0, same run
#: (EXPERIMENTS.md T4, run 0429), ms: 2x4096 14.90 -> 14.41, 8x2048 6.94 -> 6.73, 1x3072
#: 7.77 -> 7.01, 1x4096 11.30 -> 10.47, 1x1024 2.354 -> 2.273; 128 rows in between.
#: Knob ``slice_min_rows``.
TRAILING_SLICE_MIN_ROWS = 64
#: An update of one column tile (the look-ahead's next panel, a group's next panel) of at
#: most ``ONE_TILE_SPLIT_MAX_BATCH`` matrices is row-split from this many rows; others from
#: ``2 * TRAILING_SPLIT_MIN_ROWS`` (512). Below 512 rows 1x1024's look-ahead update was one
#: program, 21-27 us a step beside 44 us panels (run 0827's trace). Run 1216-1217
#: (EXPERIMENTS.md T6), geqrf ms, 512 / 128 / 256 rows: 1x512 0.875 / 0.829 / 0.817, 1x768
#: 1.390 / 1.318 / 1.322, 1x1024 1.919 / 1.863 / 1.862, 1x3072 6.97 / 6.86 / 6.89, 1x4096
#: 10.43 / 10.32 / 10.32; 8x2048 5.92 / 5.90 (128), 2x4096 14.33 / 14.31; but 40x352 0.623
#: / 0.669 (40 programs a one-tile update already): hence the batch bound (not measured
#: between 8 and 40). Batches of 16 / 32 gained nothing at 512 and 1024 rows (run 0014,
#: EXPERIMENTS.md T7). Knob ``tile_split_rows``.
ONE_TILE_SPLIT_ROWS = 256
ONE_TILE_SPLIT_MAX_BATCH = 8
#: Blocked factorizations (not the one-launch kernel) of an ``m x n`` (m >= n) matrix whose m
#: is not a multiple of ROW_ALIGN run on a copy padded with zero rows to one (a zero row
#: stays zero and adds nothing to any sum, so the reflectors, tau and R are the same): every
#: kernel's row stride is m, and Triton specializes an argument divisible by 16 (vector
#: loads, aligned rows). Run 0038 (EXPERIMENTS.md A1), ms: 2x3500 19.39 against 2x3504 8.39,
#: 60x1000 10.48 / 60x1008 3.85, 640x500 20.34 / 640x496 8.01, 40x350 0.951 / 40x352 0.624,
#: 1x1000 2.161 / 1x1008 1.558; 8x2000 (a multiple of 16) 5.49 / 8x2016 5.42. Padded (run
#: 0051): 2x3500 8.60, 60x1000 4.18, 640x500 9.07, 40x350 0.743, 1x1000 1.568.
ROW_ALIGN = 16
#: Panels a group on the FP16 route: 0, by the batch (householder.fp16_group): one where
#: the first update would be row-split (few matrices), else two, so that the FP16-only
#: update applies both in one pass over its tile (EXPERIMENTS.md N9). A pair update is
#: never row-split: at 8x2048 the rest update was 8 x 15 programs of 2048-row sweeps and
#: the look-ahead's next-group update 8 (trace run 0429: ~490 and ~240 us a group). One
#: panel a group against two, same run (N15, run 0435), ms: 8x2048 6.64 -> 5.94, but
#: 640x512 5.55 -> 6.65, 60x1024 3.90 -> 4.57, 640x512 mixed 6.22 -> 7.10; the FP32 route
#: at 8x2048 7.63. Knob ``fp16_group`` (1 or 2 for every batch).
FP16_GROUP = 0
#: Panel width where ``BLOCKED_BY_N`` gives 16 (n <= 384); 0: the table's. H7 chose 16 with
#: Triton panels (40x176 0.292 / 0.399 ms at 16 / 32); CUDA C panels take width 32 only
#: (H12), with one exchange a column step since H17. At 32 (run 0643, ms, 16 / 32): 40x352
#: 0.698 / 0.629, 40x176 0.250 / 0.253, the other ten cases within 1 %. Knob
#: ``small_n_nb`` (0: the table's 16; EXPERIMENTS.md H18).
SMALL_N_NB = 32
#: ``SMALL_N_NB`` only where n is a multiple of this; else the table's 16. Run 0828 and 0849
#: (EXPERIMENTS.md H19), ms, 32 / 16, no baseline: n a multiple of 16, 32 won or tied at
#: every batch (100x352 0.931 / 1.020, 300x320 1.475 / 1.750, 100x240 0.522 / 0.548,
#: 100x160 0.259 / 0.295, 100x208 0.448 / 0.445, 100x144 0.243 / 0.247); n not, 16 won
#: (100x200 0.673 / 0.590, 300x200 1.402 / 1.201, 100x512x200 0.679 / 0.586, 100x300
#: 1.287 / 1.129) or tied (100x100 0.206 / 0.207).
SMALL_N_NB_MULTIPLE = 16
#: Programs of the row-split W / U kernels an SM holds at once (ncu on the H200, 2x4096:
#: 173 and 207 registers a thread at 4 warps, so 2 blocks by registers), for the row
#: slices by whole waves (row_split.row_slices; path alone in a graph, EXPERIMENTS.md F2,
#: run 1547: 2x4096 22.63 -> 21.77 ms, 8x2048 11.52 -> 11.31, 60x1024 unchanged).
TRAILING_SPLIT_CTAS_PER_SM = 2
#: The separate T kernel (``Schedule.t_kernel``): one warp a matrix, [NB, 32] row chunks of
#: the stored panel for ``V^T V``. For sm_90 (ptxas, offline): 222 registers at NB = 32
#: (64-row chunks: 255 and a spill), so nine such warps share an SM.
T_KERNEL_WARPS = 1
T_KERNEL_ROWS = 32
#: A register panel of a batch with at least this many matrices per SM is throughput-bound
#: (several programs wait for each SM): there T goes to the separate one-warp kernel and
#: the panel kernel runs 4 warps. 640x512 (4.8 a SM) 13.77 -> 11.09 ms (T kernel alone
#: 12.28, 4 warps alone 13.30); below one a SM the extra launch and the longer column step
#: cost: 40x176 0.293 -> 0.337, 60x1024 9.56 -> 10.27 (path alone, EXPERIMENTS.md H9).
THROUGHPUT_MATRICES_PER_SM = 1
#: Register panel tiles up to this many elements run 4 warps whatever the batch: 40x352's
#: [16, 512] panels 0.996 -> 0.920 ms at 4 warps (H9's `warps4`).
PANEL_FEW_WARPS_TILE = 8192
#: Row-split panels pair their columns (two a grid barrier, ``Schedule.split_pairs``) when a
#: program holds at most this many rows: there the barrier is a large part of a column step.
#: Path alone in a graph (EXPERIMENTS.md S3, run 1405): 2x4096 (64 rows a program) 24.92 ->
#: 23.85 ms, 8x2048 (128 rows) 12.62 -> 12.37, but 60x1024 (512 rows, two programs a
#: matrix) 9.50 -> 10.01: the pair algebra on a [32, 512] tile costs more than a barrier.
PAIRS_MAX_RB = 128
#: Software-pipelining depth of the trailing kernel's row loops. Run 1627 (EXPERIMENTS.md
#: H30), ms, 3 / 2 / 4 / 5 stages: 2x4096 9.48-9.50 / 9.85 / 9.63 / 9.68; 1x4096, 8x2048,
#: 640x512 and 60x1024 within the 3-stage runs' spread.
TRAILING_STAGES = 3
#: Warps of the streamed (non-resident) and row-split trailing kernels. At 4 they spill for
#: sm_90 (triton 3.6, offline: 624 / 16 / 400 B of stack for the column-tile, W and U
#: kernels), at 8 hardly (72 / 0 / 0), yet 8 warps were 10-27 % slower on every benchmark
#: case (640x512 11.10 -> 14.14 ms, 2x4096 23.89 -> 29.47; EXPERIMENTS.md W1), and 8 for
#: the FP16-only launch too (N4). The row-split panel takes its warps by its tile
#: (householder._warps): 1 or 2 warps, intra-warp reductions, took 30.5 / 24.6 ms at 2x4096
#: against 23.1 at 4 (P11).
TRAILING_WARPS = 4
#: Trailing column tiles no wider than the columns they update (next power of two, at
#: least 32): the 32 columns of a group's second panel (fp16_group 2) otherwise take a
#: 64-column tile, half of it masked. Path alone (run 1857), FP16 route 640x512 / 60x1024 /
#: 640x512 mixed: 7.42 / 6.49 / 8.08 -> 7.32 / 6.47 / 8.01 ms; FP32 route unchanged.
FIT_MIN_BN = 32
#: Products of the trailing update (knob ``trailing_prec``). One-pass TF32 fails 640x512
#: mixed (docs/DESIGN.md); tf32x3 keeps FP32 accuracy on tensor cores, and so does "f16x3"
#: (float16 halves at twice tf32's rate, kernels.products._dot), given the operand range
#: the prescaling window keeps (detectors.classify.PRESCALE_MAX_EXP). Run 1906 (T10, the 12
#: cases, ms, tf32x3 / f16x3): geomean 2.404 / 2.205, 640x512 5.27 / 4.99, rankdef 5.77 /
#: 4.75, 60x1024 nearrank 5.89 / 4.73, 40x176 0.255 / 0.239; worst residuals the same.
DEFAULT_PREC = "f16x3"
#: Products for column tiles wholly in a matrix's negligible tail (past n_active): those
#: columns' norms are at most TAIL_BUDGET * eps32 * ||A||_1 * n / sqrt(m) (docs/DETECTORS.md),
#: so one-pass TF32 (truncated operands, relative error ~2^-10 a product, a few products a
#: panel) adds at most about 0.06 * TAIL_BUDGET to the scaled factor residual over the whole
#: factorization (docs/NUMERICS.md): one MMA pass instead of three there. Through the public
#: call (EXPERIMENTS.md T1, run 1405): 640x512 clustered 9.735 -> 9.109 ms and 9.806 -> 9.099
#: (another seed), 60x1024 clustered 7.834 -> 7.223; worst factor residual unchanged to three
#: digits (0.0116); dense and rankdef (no negligible tail) unchanged.
TAIL_PREC = "tf32"


@dataclass(frozen=True)
class Schedule:
    small: bool          # one launch of the register panel kernel does the whole QR
    nb: int              # panel width (columns per panel kernel launch)
    group: int           # panels per trailing group
    bn: int              # trailing kernel column tile
    bm: int              # trailing kernel row chunk (non-resident)
    prec: str = DEFAULT_PREC
    # Products of column tiles wholly past n_active; None: the tail_prec knob, else TAIL_PREC.
    tail_prec: str | None = None
    # Fewest rows a program of the row-split panel takes; 0: the split_min_rows knob, else
    # SPLIT_MIN_ROWS (both resolved once a call from its settings snapshot).
    split_min_rows: int = 0
    # Build each panel's T in a kernel of its own (one warp a matrix) instead of inside
    # the panel kernel: True / False for every panel; None: register panels of
    # throughput-bound batches only (register_panel_plan).
    t_kernel: bool | None = None
    # With the T kernel after a register panel: the panel stores its column steps'
    # ``w = P^T v_j`` (``V^T V``'s upper part, free there) and the T kernel reads them instead
    # of summing ``V^T V`` over the stored panel with one warp (EXPERIMENTS.md P5).
    t_from_panel: bool = True
    # Register panels that build their own T: from their column steps' w, by doubling
    # (log2 nb levels of two [nb, nb] products) instead of V V^T of the tile and the nb-step
    # recurrence across the warps. Path alone (EXPERIMENTS.md P8, run 1647): 40x176 0.289 ->
    # 0.266 ms, 40x352 0.894 -> 0.795, 60x1024 9.365 -> 9.040. (Not in the one-warp T
    # kernel: slower there.)
    t_doubling: bool = True
    # Row-split Householder panels with two columns a grid barrier (panel.split_columns_pairs):
    # True / False for every such panel; None: where a program holds at most PAIRS_MAX_RB rows.
    split_pairs: bool | None = None
    # The SCHEDULE_KNOBS fields below: None takes the knob, else the constant.
    # Register panels in CUDA C (CUDA_PANEL); None: the cuda_panel knob, else CUDA_PANEL.
    cuda_panel: bool | None = None
    # The tallest panel in CUDA C (CUDA_PANEL_MAX_ROWS).
    cuda_panel_rows: int | None = None
    # CUDA C column steps with one exchange where they can (CUDA_PANEL_FUSE); None: the
    # knob, else the constant.
    cuda_panel_fuse: bool | None = None
    # CUDA C panels tried as CholeskyQR2 first (GRAM_PANEL); None: the knob, else the constant.
    gram_panel: bool | None = None
    # The most matrices whose panels are tried as CholeskyQR2 (GRAM_PANEL_MAX_BATCH); None:
    # the knob, else the constant.
    gram_max_batch: int | None = None
    # The most matrices whose panels of at most GRAM_SMALL_PANEL_ROWS rows are tried as
    # CholeskyQR2 past gram_max_batch (GRAM_SMALL_PANEL_MAX_BATCH, 0: none); None: the knob,
    # else the constant.
    gram_small_batch: int | None = None
    # The Gram build's Grams on tensor cores (GRAM_MMA); None: the knob, else the constant.
    gram_mma: bool | None = None
    # The CTA rows of CUDA C clusters for the panels above cuda_panel_rows, up to 4096 rows
    # (CUDA_PANEL_CLUSTER, 0: off); None: the knob, else the constant.
    cuda_panel_cluster: int | None = None
    # The most CTAs a cluster panel takes (CUDA_PANEL_CLUSTER_MAX: 8 or 16); None: the
    # knob, else the constant.
    cluster_max: int | None = None
    # The most CTAs of a batch's clusters for its panels of 257 to cuda_panel_rows rows
    # (CLUSTER_SMALL_CTAS, 0: none); None: the knob, else the constant.
    cluster_ctas: int | None = None
    # The most CTAs of a batch's two-CTA clusters for its panels of 129-256 rows
    # (CLUSTER_PAIR_CTAS, 0: none); None: the knob, else the constant.
    cluster_pair_ctas: int | None = None
    # One group of look-ahead on a second stream (LOOKAHEAD: 0 or 1); None: the knob, else
    # the constant.
    lookahead: int | None = None
    # The FP32 route's update launches on a side stream (ROUTE_LANES: 0, 1 in graph
    # captures, 3 row-split updates in captures); None: the knob, else the constant.
    route_lanes: int | None = None
    # Fewest rows of a row-split update's slice (TRAILING_SLICE_MIN_ROWS, 0: the split
    # threshold's); None: the knob, else the constant.
    slice_min_rows: int | None = None
    # Fewest rows a one-tile update is row-split from (ONE_TILE_SPLIT_ROWS); None: the
    # knob, else the constant.
    tile_split_rows: int | None = None
    # Matrices the route probe sends to the FP16 route (features["fp16_scale"] > 0) keep
    # their trailing matrix in float16 (kernels/fp16_storage.py); False: every matrix FP32
    # (to compare the routes on the same input, as issue 8 asks).
    fp16: bool = True
    # Knobs of the FP16 route's streamed updates, path alone in a graph on the H200
    # (EXPERIMENTS.md N4, N5; 640x512 / 60x1024 dense, FP32 route 10.05 / 8.80 ms):
    # * one kernel a route, each with its own register allocation (7.85 / 6.94; both routes
    #   in one kernel, branching per matrix, 8.13 / 7.05 ms at fp16_bm 128, was removed);
    # * its row chunk at 128 (the FP32 launch's bm is 64): 8.20 / 7.13, at 32 8.37 / 7.37
    #   (removed: the FP32 launch's chunk);
    # * fp16_stages (of the FP16-only launch; 0: the FP32 launch's): 4 stages 8.40 / 7.33,
    #   2 stages 7.88 / 6.98; 8 warps 9.30 / 7.68 (removed: TRAILING_WARPS);
    # * fp16_bn (its column tile; 0: bn): 32 -> 9.01 / 7.56, 128 -> 7.82 / 7.05.
    # With two panels a pass (fp16_group 2, N9; runs 1847 and 1853, FP32 route 10.05 /
    # 8.78): bn 64 7.73 / 6.75, bn 128 7.41-7.44 / 6.50 (its reflector reads shared by twice
    # the columns; 255 registers and a little spill, one block an SM), bn 128 at 8 warps
    # 7.90 / 6.88, bn 256 at 8 or 16 warps 7.88-7.97 / 6.92-6.98, bm 32 slower everywhere.
    # At bn 128 with fitted tiles (run 1857): 3 stages 7.32 / 6.47, 2 stages 7.19 / 6.42,
    # 4 stages 7.40 / 6.50.
    fp16_stages: int = 2
    fp16_bn: int = 128
    # Panels a trailing group when the FP16 route is offered (features["fp16_scale"]; in
    # place of ``group`` for the whole batch): 1, 2, or 0 by the batch (FP16_GROUP); None:
    # the knob, else the constant.
    fp16_group: int | None = None
    # Panel width in place of the table's 16 (SMALL_N_NB, 0: the table's); None: the knob,
    # else the constant.
    small_n_nb: int | None = None
    # The row-split updates' W zeroed by the update before on the same stream (W_PINGPONG);
    # None: the knob, else the constant.
    w_pingpong: bool | None = None
    # The FP16-only update's column tile fitted to its columns (FP16_FIT); None: the knob,
    # else the constant.
    fp16_fit: bool | None = None
    # The FP16 rest updates' reflectors from a float16 copy a pair (FP16_V16); None: the
    # knob, else the constant.
    fp16_v16: bool | None = None
    # The FP16 pair rest update's second sweep over row slices of this many rows, in a
    # launch of its own (PAIR_SPLIT_ROWS; 0: one launch); None: the knob, else the constant.
    pair_split: int | None = None
    # The row-split updates' W as each slice's sums, added in slice order (W_PARTIALS);
    # None: the knob, else the constant, and where both are unset, the deterministic mode
    # (householder._resolved).
    w_partials: bool | None = None
    # The FP32 route's two-panel updates in one pass, in row chunks of this many rows
    # (FP32_PAIR; 0: two passes); None: the knob, else the constant.
    fp32_pair: int | None = None
    # That pair update's "f16x3" products from the reflectors' halves made once an update
    # (FP32_HALVES); None: the knob, else the constant.
    fp32_halves: bool | None = None
    # torch.use_deterministic_algorithms at the call (config.Settings.deterministic): no
    # update is split over rows with atomics (a row-split update sums W in no fixed order
    # that way); w_partials, on by default in the mode, keeps the split (householder._splits).
    deterministic: bool = False


def next_pow2(x: int) -> int:
    return 1 << max(0, int(x) - 1).bit_length()


#: Square sizes -> (nb, group, bn, bm). Keys are upper bounds on n; first match wins.
#: Run 2 (H200): group 1 was as fast or faster than 2, 4, 8 everywhere (2x4096: 30.8 ms
#: against 38.8 at group 4); bn 64 beat 32 and 128; nb 64 (panel no longer in registers)
#: lost everywhere (640x512: 47 ms against 14.7).
#: nb 16 against 32 on the H200, path alone in a graph (EXPERIMENTS.md H7): 40x176 0.292 /
#: 0.399 ms, 40x352 0.992 / 1.164, 640x512 13.85 / 13.77; with H6's kernels 60x1024 10.50 /
#: 9.62, 8x2048 15.0 / 13.8 (a panel column step reduces nb values a thread across the
#: warps, half as many at nb 16, while the trailing update's K halves too, which costs more
#: on the larger sizes).
BLOCKED_BY_N = (
    (384, (16, 1, 64, 64)),
    (1 << 62, (32, 1, 64, 64)),
)


def register_panel_plan(batch: int, sm_count: int, elements: int) -> tuple[int, bool]:
    """``(num_warps, separate_t)`` for a register panel tile of ``elements`` (``nb * MB``)
    on a batch of ``batch`` matrices over ``sm_count`` SMs (the measurements are at the
    constants above). Example: ``register_panel_plan(640, 132, 16384) == (4, True)``."""
    throughput = batch >= THROUGHPUT_MATRICES_PER_SM * sm_count
    few = elements <= PANEL_FEW_WARPS_TILE or throughput
    return (4 if few else 8 if elements <= 16384 else 16), throughput


def schedule_for(m: int, n: int) -> Schedule:
    """The schedule for one ``m x n`` (m >= n) float32 matrix shape."""
    if next_pow2(max(n, 16)) * next_pow2(m) <= SMALL_MAX_TILE:
        return Schedule(small=True, nb=next_pow2(max(n, 16)), group=1, bn=0, bm=0)
    for bound, (nb, group, bn, bm) in BLOCKED_BY_N:
        if n <= bound:
            return Schedule(small=False, nb=nb, group=group, bn=bn, bm=bm)
    raise AssertionError("unreachable: the last bound covers every n")
