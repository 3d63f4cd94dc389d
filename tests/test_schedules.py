"""Schedules of the householder path: the row-split sizing, its workspace capacity and its
experiment override."""

import dataclasses

import pytest
import torch

from adaptqr.paths import householder as hh
from adaptqr.paths import schedules
from adaptqr.paths.householder import split_capacity, split_rows
from adaptqr.paths.row_split import WSlot, splits_rows

H200_SMS = 132


def _knob_resolves(name, default, other, bad, n=512):
    """The schedule knob ``name`` resolves to ``default`` unset and to ``other`` under the
    knob, and ``bad`` raises a ValueError that names it."""
    from adaptqr import config

    s = schedules.schedule_for(n, n)
    assert schedules.knob(name) == default and getattr(hh._with_knobs(s, None), name) == default
    with config.experiment(**{name: other}):
        assert getattr(hh._with_knobs(s, None), name) == other
    with pytest.raises(ValueError, match=name):
        with config.experiment(**{name: bad}):
            pass


def test_split_rows_default_sizes():
    assert schedules.split_min_rows() == schedules.SPLIT_MIN_ROWS
    assert split_rows(2, 4096, 32, H200_SMS) == (64, 64)    # 2 x 64 programs, all resident
    assert split_rows(8, 2048, 32, H200_SMS) == (128, 16)
    assert split_rows(640, 512, 32, H200_SMS) is None       # the panel fits one program
    assert split_rows(200, 1024, 32, H200_SMS) is None      # 400 programs would not be resident


def test_split_min_rows_knob():
    from adaptqr import config

    with config.experiment(split_min_rows=256):
        assert split_rows(2, 4096, 32, H200_SMS) == (256, 16)
        assert split_rows(8, 2048, 32, H200_SMS) == (256, 8)
    assert split_rows(2, 4096, 32, H200_SMS, min_rows=256) == (256, 16)  # a schedule's own
    for bad in (100, 8):
        with pytest.raises(ValueError, match="split_min_rows"):
            with config.experiment(split_min_rows=bad):
                pass
    assert schedules.split_min_rows() == schedules.SPLIT_MIN_ROWS


def test_one_launch_kernel_only_up_to_n_64():
    # The one-launch kernel spills past 64 x 64 (EXPERIMENTS.md H10): n = 65..128 go blocked.
    assert schedules.schedule_for(64, 64).small
    assert schedules.schedule_for(256, 16).small
    for n in (65, 80, 96, 128):
        s = schedules.schedule_for(n, n)
        assert not s.small and s.nb == 16, (n, s)


def test_register_panel_plan_by_batch_and_tile():
    # Throughput-bound batches (at least one matrix an SM): separate T kernel, 4 warps.
    assert schedules.register_panel_plan(640, H200_SMS, 32 * 512) == (4, True)
    assert schedules.register_panel_plan(H200_SMS, H200_SMS, 32 * 512) == (4, True)
    # Latency-bound: T inside the panel kernel; 8 warps only past PANEL_FEW_WARPS_TILE.
    assert schedules.register_panel_plan(60, H200_SMS, 32 * 512) == (8, False)
    assert schedules.register_panel_plan(131, H200_SMS, 32 * 512) == (8, False)
    assert schedules.register_panel_plan(40, H200_SMS, 16 * 512) == (4, False)
    assert schedules.register_panel_plan(40, H200_SMS, 16 * 256) == (4, False)


def test_tail_prec_knob():
    from adaptqr import config

    assert config.tail_prec() is None and schedules.schedule_for(512, 512).tail_prec is None
    with config.experiment(tail_prec="tf32"):
        assert config.tail_prec() == "tf32"
    with pytest.raises(ValueError, match="tail_prec"):
        with config.experiment(tail_prec="fp8"):
            pass
    with pytest.raises(ValueError, match="unknown experiment knobs"):
        with config.experiment(tailprec="tf32"):
            pass


@pytest.mark.parametrize("waves_sm", [0, H200_SMS])
@pytest.mark.parametrize("B,tiles,rows,bm", [(2, 63, 4032, 64), (8, 31, 1984, 64), (2, 10, 700, 64),
                                             (3, 5, 512, 32), (60, 8, 544, 64)])
def test_row_slices_cover_the_rows(B, tiles, rows, bm, waves_sm):
    from adaptqr.paths.householder import row_slices

    nsplit, per = row_slices(B, tiles, rows, bm, waves_sm)
    # Slices of a whole number of row chunks; every row in exactly one, none empty.
    assert per % bm == 0 and nsplit * per >= rows > (nsplit - 1) * per, (nsplit, per)
    # No slice thinner than the floor (unless the rows are fewer than it).
    assert per >= min(rows, schedules.TRAILING_SPLIT_MIN_ROWS), per


def test_row_slices_whole_waves():
    from adaptqr.paths.householder import row_slices

    slots = schedules.TRAILING_SPLIT_CTAS_PER_SM * H200_SMS

    def cost(B, tiles, ns, per):
        return -(-B * tiles * ns // slots) * per

    for B, tiles, rows in ((2, 63, 4032), (2, 40, 2600), (8, 62, 1984), (8, 20, 1300)):
        d = row_slices(B, tiles, rows, 64)
        w = row_slices(B, tiles, rows, 64, H200_SMS)
        # The wave rule never costs more whole-wave rows than the default slicing.
        assert cost(B, tiles, *w) <= cost(B, tiles, *d), (d, w)
    # 2x4096's first update: 630 programs (2.4 waves of 264) by the program-count rule, one
    # wave by waves.
    assert row_slices(2, 63, 4032, 64) == (5, 832)
    assert row_slices(2, 63, 4032, 64, H200_SMS) == (2, 2048)


def test_row_slices_floor_knob():
    # T4: a lower floor gives the look-ahead's one-tile update (2x4096: 2 matrices, one
    # column tile) more, shorter slices; the rest update's whole-wave choice is unchanged.
    from adaptqr.paths.householder import row_slices

    assert row_slices(2, 1, 4032, 64, H200_SMS) == (16, 256)
    assert row_slices(2, 1, 4032, 64, H200_SMS, 64) == (63, 64)
    assert row_slices(2, 63, 4032, 64, H200_SMS, 64) == (2, 2048)
    assert schedules.TRAILING_SLICE_MIN_ROWS == 64
    _knob_resolves("slice_min_rows", 64, 0, 32, 4096)


def test_one_tile_updates_split_from_the_knobs_rows():
    # EXPERIMENTS.md T6: one column tile splits from tile_split_rows rows, several tiles
    # (and the FP16 route's group choice) keep 2 * TRAILING_SPLIT_MIN_ROWS.
    from adaptqr.paths.householder import fp16_group

    assert schedules.ONE_TILE_SPLIT_ROWS < 2 * schedules.TRAILING_SPLIT_MIN_ROWS
    assert [splits_rows(1, 1, 1, r, 128, 8) for r in (127, 128, 511)] == [False, True, True]
    assert not splits_rows(1, 1, 2, 511, 128, 8) and not splits_rows(2, 1, 1, 511, 128, 8)
    assert splits_rows(1, 1, 1, 600, 1024, 8)  # a higher knob never raises the rule's floor
    # Batches above ONE_TILE_SPLIT_MAX_BATCH keep the rule (40x352 lost 7 % at 128 rows).
    top = schedules.ONE_TILE_SPLIT_MAX_BATCH
    assert top == 8
    assert splits_rows(1, top, 1, 300, 256, top) and not splits_rows(1, top + 1, 1, 300, 256, top)
    s = hh._with_knobs(schedules.schedule_for(300, 300), None)
    from adaptqr import config

    with config.experiment(tile_split_rows=128):
        s128 = hh._with_knobs(schedules.schedule_for(300, 300), None)
    assert s128.tile_split_rows == 128 and fp16_group(s128, 4, 300, 300) == fp16_group(s, 4, 300, 300)
    _knob_resolves("tile_split_rows", 256, 512, 64)


def _npow2(x):
    return 1 << (x - 1).bit_length()


@pytest.mark.parametrize("sms", [H200_SMS, 114, 78])
def test_split_capacity_covers_every_panel(monkeypatch, sms):
    # The partials' workspace is sized once a call: it must hold every panel's PMAX, not
    # only the first's (H11: 4x4096 went from 32 programs to 33 at row 1984 and wrote past it).
    grew = 0
    for B in range(1, 17):
        for n in (1024, 1536, 2048, 3072, 4096, 8192):
            cap = split_capacity(B, n, n, 32, sms)
            first = split_rows(B, n, 32, sms)
            worst = max((_npow2(rp[1]) for k in range(0, n, 32)
                         if (rp := split_rows(B, n - k, 32, sms)) is not None), default=0)
            assert cap == worst, (B, n, sms)
            grew += first is not None and worst > _npow2(first[1])
    assert grew > 0  # shapes where the first panel's count was too small do exist


def test_split_capacity_examples_and_workspace(monkeypatch):
    from adaptqr import config

    assert split_rows(4, 4096, 32, H200_SMS) == (128, 32)
    assert split_rows(4, 4096 - 1984, 32, H200_SMS) == (64, 33)
    assert split_capacity(4, 4096, 4096, 32, H200_SMS) == 64
    assert split_capacity(2, 4096, 4096, 32, H200_SMS) == 64   # the benchmark's: unchanged
    assert split_capacity(8, 2048, 2048, 32, H200_SMS) == 16
    assert split_capacity(640, 512, 512, 32, H200_SMS) == 0    # no row-split panel at all
    from adaptqr.paths import panel_plan

    monkeypatch.setattr(panel_plan, "_sm_count", lambda device: H200_SMS)
    work = hh._SplitWork(torch.empty(4, 4096, 4096, device="meta"), 32, 0)
    WS, SP, CNT = work.get(32)  # the first panel's PMAX
    assert WS.shape[2] == 64 and SP.shape[1] == 64 and CNT.shape == (4, 3 * 4096)
    with config.experiment(split_min_rows=256):  # part of the cache key
        assert split_capacity(4, 4096, 4096, 32, H200_SMS) == _npow2(split_rows(4, 4096, 32, H200_SMS)[1])


def test_cuda_panel_choice(monkeypatch):
    # EXPERIMENTS.md H12: register panels of width 32 run in CUDA C where cupy and a
    # CUDA device are there; the knob turns them off (or on) per call.
    from adaptqr import config
    from adaptqr.paths.kernels import panel_cuda

    assert schedules.knob("cuda_panel") is schedules.CUDA_PANEL
    with config.experiment(cuda_panel=0):
        assert schedules.knob("cuda_panel") is False
        s = hh._with_knobs(schedules.schedule_for(512, 512), None)
        assert s.cuda_panel is False
    with config.experiment(cuda_panel=1):
        assert schedules.knob("cuda_panel") is True
    with pytest.raises(ValueError, match="cuda_panel"):
        with config.experiment(cuda_panel=2):
            pass
    cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)
    monkeypatch.setattr(panel_cuda, "available", lambda: True)
    assert hh._cuda_panels(True, 32, gpu)
    assert not hh._cuda_panels(True, 16, gpu)       # no such width compiled (no gain, H12)
    assert not hh._cuda_panels(False, 32, gpu)
    assert not hh._cuda_panels(True, 32, cpu)       # the interpreter: Triton's kernel
    monkeypatch.setattr(panel_cuda, "available", lambda: False)
    assert not hh._cuda_panels(True, 32, gpu)
    # Only register panels change kernel; a tall panel still streams or splits.
    assert hh._panel_kind(640, 512, 0, 32, None, 64, cuda=True)[0] == "register-cuda"
    assert hh._panel_kind(640, 512, 0, 32, None, 64)[0] == "register"
    assert hh._panel_kind(2, 4096, 0, 32, None, 64, cuda=True)[0] == "streamed"
    # H13 (the default, 1024): panels of 513-1024 rows too, not taller ones; the knob
    # cuda_panel_rows=512 restores H12's bound.
    assert hh._panel_kind(60, 1024, 0, 32, None, 64, True)[0] == "register-cuda"
    assert hh._panel_kind(60, 1024, 0, 32, None, 64, True, 512)[0] == "streamed"
    assert hh._panel_kind(8, 2048, 0, 32, None, 64, True, 1024)[0] == "streamed"
    assert hh._panel_kind(8, 2048, 1024, 32, None, 64, True, 1024)[0] == "register-cuda"
    assert schedules.knob("cuda_panel_rows") == schedules.CUDA_PANEL_MAX_ROWS
    with config.experiment(cuda_panel_rows=512):
        assert hh._with_knobs(schedules.schedule_for(1024, 1024), None).cuda_panel_rows == 512
    for bad in (128, 2048):
        with pytest.raises(ValueError, match="cuda_panel_rows"):
            with config.experiment(cuda_panel_rows=bad):
                pass


def test_cuda_panel_threads():
    from adaptqr.paths.kernels import panel_cuda

    # one row a thread up to 256 rows, then two rows a thread
    assert [panel_cuda.threads_rows(mb) for mb in (16, 64, 256, 512, 1024)] == [
        (32, 1), (64, 1), (256, 1), (256, 2), (512, 2)]
    for mb in (16, 32, 64, 128, 256, 512, 1024):
        nt, r = panel_cuda.threads_rows(mb)
        assert nt * r >= mb and nt % 32 == 0


def test_cuda_panel_fuse():
    # H17: CUDA C column steps with one exchange where they can (the default).
    assert schedules.CUDA_PANEL_FUSE is True and schedules.knob("cuda_panel_fuse") is True
    _knob_resolves("cuda_panel_fuse", True, False, 3)


def test_gram_panel():
    # H22, H23: CUDA C panels tried as CholeskyQR2 first (the default, batches of at most 32), on
    # CTAs of 64-256 threads and panels of the full width only.
    from adaptqr import config
    from adaptqr.paths.kernels import panel_cuda

    assert schedules.GRAM_PANEL is True and schedules.knob("gram_panel") is True
    assert schedules.GRAM_PANEL_MAX_BATCH == 64
    _knob_resolves("gram_panel", True, False, 3)
    _knob_resolves("gram_max_batch", 64, 8, 5)
    assert [panel_cuda.gram_build(nt, 32, 32) for nt in (32, 64, 128, 256, 512)] == [
        False, True, True, True, False]
    assert not panel_cuda.gram_build(128, 31, 32)
    # each warp's 32 staged rows of 36 floats
    assert panel_cuda.gram_smem(64) == 2 * 32 * 36 * 4
    _knob_resolves("gram_mma", True, False, 3)  # H52 (run 1149): the Grams on tensor cores
    # H51b, H51c, H51e: past 64 matrices, panels of at most 256 rows (one row a thread) up
    # to 512 matrices.
    _knob_resolves("gram_small_batch", 512, 0, 100)
    base = schedules.schedule_for(352, 352)
    s = hh._with_knobs(base, None)
    reg = hh.PANEL_REGISTER_CUDA
    # launch's gram mode: 2, the Gram build with its Grams on tensor cores (H52)
    assert [hh._gram(s, B, reg, mb, 32) for B, mb in ((64, 512), (65, 512), (100, 256), (512, 128),
                                                       (513, 256), (640, 256), (128, 256))] == [2, 0, 2, 2, 0, 0, 2]
    assert not hh._gram(s, 100, reg, 256, 16)  # a narrow last panel: column steps
    with config.experiment(gram_small_batch=0):
        assert not hh._gram(hh._with_knobs(base, None), 100, reg, 256, 32)
    with config.experiment(gram_mma=0):  # launch's gram mode 1: the scalar Grams
        m1 = hh._with_knobs(base, None)
        assert hh._gram(m1, 100, reg, 256, 32) == 1 and hh._gram(m1, 100, reg, 256, 16) == 0


def test_cuda_panel_cluster(monkeypatch):
    # H16, H25: panels taller than the one-CTA CUDA C panel's in clusters of CTAs of 256
    # rows by default; only with CUDA C panels, and only where the cluster build compiles.
    from adaptqr import config
    from adaptqr.paths.kernels import panel_cuda

    assert schedules.CUDA_PANEL_CLUSTER == 256
    _knob_resolves("cuda_panel_cluster", 256, 0, 1, 2048)
    s = schedules.schedule_for(2048, 2048)
    # (CTAs a cluster, threads, rows a thread): CTAs of the rows asked for, at most 8.
    shape = panel_cuda.cluster_shape
    assert [shape(2048, c) for c in (256, 512, 1024)] == [(8, 256, 1), (4, 256, 2), (2, 512, 2)]
    assert [shape(4096, c) for c in (256, 512, 1024)] == [(8, 256, 2), (8, 256, 2), (4, 512, 2)]
    # H33 (knob cluster_max): at most 16 CTAs, where 8 would take more than the CTA rows.
    assert schedules.CUDA_PANEL_CLUSTER_MAX == 16
    _knob_resolves("cluster_max", 16, 8, 12, 2048)
    assert [shape(4096, c, 16) for c in (256, 512)] == [(16, 256, 1), (8, 256, 2)]
    assert [shape(2048, c, 16) for c in (128, 256)] == [(16, 128, 1), (8, 256, 1)]
    for mb in (512, 1024, 2048, 4096):
        for c in (128, 256, 512, 1024):
            cl, nt, r = shape(mb, c)
            assert cl * nt * r == mb and cl <= panel_cuda.MAX_CLUSTER and nt * r <= 1024
    monkeypatch.setattr(panel_cuda, "cluster_available", lambda: True)
    rows = hh._cluster_rows(512, True)
    assert rows == 4096 and hh._cluster_rows(0, True) == 0 and hh._cluster_rows(512, False) == 0

    def kind(B, m, k, cuda_rows=1024):
        return hh._panel_kind(B, m, k, 32, 132, 64, True, cuda_rows, rows)[0]

    assert [kind(2, 4096, k) for k in (0, 2048, 3072)] == ["cluster-cuda", "cluster-cuda", "register-cuda"]
    assert kind(8, 2048, 0) == "cluster-cuda" and kind(1, 8192, 0) != "cluster-cuda"
    assert kind(60, 1024, 0, cuda_rows=512) == "cluster-cuda"
    assert kind(1, 512, 0, cuda_rows=256) == "cluster-cuda" and kind(1, 256, 0, cuda_rows=256) == "register-cuda"

    # Panels of 129-1024 rows in clusters of 128-row CTAs too, while the batch's CTAs fit
    # a budget (CLUSTER_SMALL_CTAS, CLUSTER_PAIR_CTAS for two-CTA panels).
    def small(B, m, k, ctas=schedules.CLUSTER_SMALL_CTAS, pair=schedules.CLUSTER_PAIR_CTAS):
        return hh._panel_kind(B, m, k, 32, 132, 64, True, 1024, rows, ctas, pair)[0]

    assert [small(1, 1024, k) for k in (0, 512, 768, 896, 992)] == [
        "cluster-cuda", "cluster-cuda", "cluster-cuda", "register-cuda", "register-cuda"]
    assert small(32, 1024, 0) == "cluster-cuda" and small(33, 1024, 0) == "register-cuda"
    assert small(1, 1024, 0, ctas=0) == "register-cuda" and small(8, 2048, 0) == "cluster-cuda"
    assert small(32, 176, 0, pair=0) == "register-cuda" and small(32, 176, 0) == "cluster-cuda"
    assert small(32, 176, 64) == "register-cuda"  # 128 rows: one CTA
    assert [hh._cta_rows(mb, 1024, 512) for mb in (512, 1024, 2048, 4096)] == [128, 128, 512, 512]
    assert panel_cuda.cluster_shape(256, hh._cta_rows(256, 1024, 512)) == (2, 128, 1)
    # CLUSTER_SMALL_CTAS (EXPERIMENTS.md H48): larger batches too while B * MB / 128 CTAs
    # fit it: 40x352's 512-row panels (160) and 60x1024's (240), not its 1024-row ones (480).
    _knob_resolves("cluster_ctas", 256, 0, 100)
    r = hh._with_knobs(s, None)
    assert hh._kind_given(40, 352, 0, r, 132, True, rows)[0] == "cluster-cuda"
    assert [hh._kind_given(60, 1024, k, r, 132, True, rows)[0] for k in (0, 512, 896)] == [
        "register-cuda", "cluster-cuda", "register-cuda"]
    assert hh._kind_given(64, 512, 0, r, 132, True, rows)[0] == "cluster-cuda"
    assert hh._kind_given(65, 512, 0, r, 132, True, rows)[0] == "register-cuda"
    with config.experiment(cluster_ctas=0):
        assert hh._kind_given(40, 352, 0, hh._with_knobs(s, None), 132, True, rows)[0] == "register-cuda"
    # CLUSTER_PAIR_CTAS (H48b): panels of 129-256 rows in two CTAs while 2 B fits 128.
    _knob_resolves("cluster_pair_ctas", 128, 0, 100)
    assert [hh._kind_given(B, 176, 0, r, 132, True, rows)[0] for B in (64, 65)] == [
        "cluster-cuda", "register-cuda"]
    assert hh._kind_given(40, 176, 64, r, 132, True, rows)[0] == "register-cuda"  # 128 rows
    assert hh._kind_given(100, 512, 0, r, 132, True, rows)[0] == "register-cuda"  # 400 CTAs
    with config.experiment(cluster_pair_ctas=0):
        assert hh._kind_given(40, 176, 0, hh._with_knobs(s, None), 132, True, rows)[0] == "register-cuda"
    monkeypatch.setattr(panel_cuda, "cluster_available", lambda: False)
    assert hh._cluster_rows(512, True) == 0


def test_lookahead_knobs():
    # L2 / L3 (on where no panel is row-split): the knob and the rule on which
    # factorizations take it.
    assert schedules.LOOKAHEAD == 1
    _knob_resolves("lookahead", 1, 0, 2)
    cuda = {0: "cluster-cuda", 32: "register-cuda"}
    triton_panels = {0: "register", 16: "register"}
    split_later = {0: "streamed", 32: "row-split", 64: "register"}
    applies = hh.lookahead_applies
    assert [applies(1, k.get, k) for k in (cuda, triton_panels, split_later)] == [True, True, False]
    assert not applies(0, cuda.get, cuda)
    # The per-shape answer the blocked loop asks (cached): each panel's kind as _kind_of
    # gives it. Triton panels past REG_PANEL_MAX_TILE are row-split with an SM count (no
    # look-ahead), streamed without one; CUDA C clusters take them whole.
    s = hh._with_knobs(schedules.schedule_for(4096, 4096), None)
    fits = hh._lookahead_fits
    assert fits(2, 4096, 4096, s, None, False, 0) and not fits(2, 4096, 4096, s, 132, False, 0)
    assert fits(2, 4096, 4096, s, 132, True, 4096)
    from adaptqr import config

    with config.experiment(lookahead=0):
        assert not fits(2, 4096, 4096, hh._with_knobs(schedules.schedule_for(4096, 4096), None),
                        None, True, 4096)


def test_lookahead_w_only_where_updates_can_split_rows():
    # The look-ahead allocates its second W before the fork only where some update can be
    # row-split: the test is a superset of _trailing's (no allocation may happen later).
    from types import SimpleNamespace as F

    may = hh._may_split_rows
    s = F(tile_split_rows=512, deterministic=False)
    assert [may(F(B=b, m=m, s=s)) for b, m in ((640, 512), (2, 4096), (60, 1024), (40, 352))] == [
        False, True, True, False]
    # T6: from 128 rows a one-tile update of few matrices splits: 1x300's needs its W.
    s = F(tile_split_rows=128, deterministic=False)
    assert [may(F(B=b, m=m, s=s)) for b, m in ((640, 512), (40, 352), (1, 300), (1, 100))] == [
        False, False, True, False]
    # Under torch.use_deterministic_algorithms no update splits, so none needs a W, unless
    # each slice's sums are added in slice order (N26).
    s = F(tile_split_rows=128, deterministic=True, w_partials=False)
    assert not any(may(F(B=b, m=m, s=s)) for b, m in ((2, 4096), (60, 1024), (1, 300)))
    s = F(tile_split_rows=128, deterministic=True, w_partials=True)
    assert all(may(F(B=b, m=m, s=s)) for b, m in ((2, 4096), (60, 1024), (1, 300)))


def test_schedule_knobs_table():
    # Each knob the schedule reads is a Knobs field and a Schedule field left to the knob
    # (None), and resolves to the constant's type (to the constant itself, unless that is
    # None: then the resolver picks, as W_PARTIALS's deterministic mode).
    import dataclasses

    from adaptqr import config

    knob_fields = {f.name for f in dataclasses.fields(config.Knobs)}
    sched_fields = {f.name: f.default for f in dataclasses.fields(schedules.Schedule)}
    s = hh._with_knobs(schedules.schedule_for(512, 512), None)
    for name, (constant, kind) in schedules.SCHEDULE_KNOBS.items():
        assert name in knob_fields and sched_fields[name] is None, name
        if getattr(schedules, constant) is not None:
            assert getattr(s, name) == getattr(schedules, constant)
        assert type(getattr(s, name)) is kind, name


def test_fp16_group_by_batch():
    # N15: one panel a group on the FP16 route where the first update is row-split (few
    # matrices), two elsewhere; the knob sets it for every batch.
    from adaptqr import config
    from adaptqr.paths.householder import _with_knobs, fp16_group

    assert schedules.FP16_GROUP == 0
    _knob_resolves("fp16_group", 0, 2, 3)
    shapes = ((8, 2048), (4, 1024), (60, 1024), (640, 512))
    s = _with_knobs(schedules.schedule_for(1024, 1024), None)
    assert [fp16_group(s, B, n, n) for B, n in shapes] == [1, 1, 2, 2]
    for g in (1, 2):
        with config.experiment(fp16_group=g):
            s = _with_knobs(schedules.schedule_for(1024, 1024), None)
            assert [fp16_group(s, B, n, n) for B, n in shapes] == [g] * 4


def test_small_n_nb_knob():
    # H18: panels of 32 columns where the table gives 16 (n <= 384), only there; the knob's
    # 0 gives the table's 16 back.
    import dataclasses

    from adaptqr import config
    from adaptqr.paths.householder import _with_knobs

    small, big = schedules.schedule_for(352, 352), schedules.schedule_for(1024, 1024)
    assert small.nb == 16 and schedules.SMALL_N_NB == 32
    _knob_resolves("small_n_nb", 32, 0, 64, 352)
    assert (_with_knobs(small, None).nb, _with_knobs(big, None).nb) == (32, 32)
    # H19: only where n is a whole number of SMALL_N_NB_MULTIPLE columns.
    assert schedules.SMALL_N_NB_MULTIPLE == 16
    assert [_with_knobs(small, None, n).nb for n in (352, 208, 200, 300, 100)] == [32, 32, 16, 16, 16]
    with config.experiment(small_n_nb=0):
        assert (_with_knobs(small, None).nb, _with_knobs(big, None).nb) == (16, 32)
    assert _with_knobs(dataclasses.replace(small, small_n_nb=0), None).nb == 16


def test_route_lanes_knob():
    # EXPERIMENTS.md N19: 3 (row-split updates in graph captures) by default; 0 and 1 (every
    # update in captures) under the knob; 2 (eager calls too) was removed.
    _knob_resolves("route_lanes", schedules.ROUTE_LANES, 1, 2)
    assert schedules.ROUTE_LANES == 3


class _Tensor:
    is_cuda = True
    device = torch.device("cuda", 0)


@pytest.mark.parametrize("mode,two_routes,capturing", [
    (0, True, True),        # off
    (1, False, True),       # no FP16 route: one launch a kernel, nothing beside it
    (1, True, False),       # 1 outside a capture: eager calls keep one stream
    (3, True, False),       # 3 outside a capture
    (3, True, True),        # 3: row-split updates only; this one is a tile update
    (None, True, True),     # a schedule the knobs never resolved
])
def test_route_lanes_stay_on_the_current_stream(mode, two_routes, capturing, monkeypatch):
    # Where route lanes do not apply, no stream is touched (this runs without CUDA) and the
    # launches of both routes stay in issue order: `on` gives no stream context.
    import contextlib

    from adaptqr.paths.lanes import RouteLanes

    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: capturing)
    lanes = RouteLanes(mode, _Tensor(), two_routes)
    assert lanes.side is None
    for m in (0, 1, 2):
        assert isinstance(lanes.on(m), contextlib.nullcontext)
    lanes.join()


def test_route_lanes_off_the_gpu():
    from adaptqr.paths.lanes import RouteLanes

    assert RouteLanes(1, torch.zeros(1), True).side is None


def test_w_pingpong_knob():
    # T8: on by default, off under the knob.
    assert schedules.W_PINGPONG is True
    _knob_resolves("w_pingpong", True, False, 2)


def test_fp16_fit_knob():
    # N21: on by default, off under the knob.
    assert schedules.FP16_FIT is True
    _knob_resolves("fp16_fit", True, False, 2)


@pytest.mark.parametrize("pingpong", [False, True])
def test_w_slot_hands_out_zeros(pingpong):
    # T8: every W handed out is zero from the update's first column on, where the W kernel
    # of the update before zeroed the buffer it hands out next (simulated here). Plain: one
    # buffer, zeroed at each take.
    slot = WSlot((2, 12, 4), torch.device("cpu"), pingpong)
    assert len(slot.bufs) == (2 if pingpong else 1)
    seen = set()
    for c_start in (0, 4, 4, 8, 2, 10):
        W, WZ = slot.take(c_start)
        assert not W[:, c_start:].any(), c_start
        assert (WZ is None) == (not pingpong)
        if pingpong:
            assert WZ is not W
            WZ[:, c_start:] = 0.0  # what the launch's ZERO does
        W.fill_(7.0)  # the update's sums (and stale columns left of c_start)
        seen.add(W.data_ptr())
    assert len(seen) == len(slot.bufs)


def test_deterministic_mode_splits_rows_only_with_partials():
    # docs/NUMERICS.md "Determinism": torch.use_deterministic_algorithms reaches the
    # resolved schedule through the settings snapshot. There a row-split update (2x4096's
    # first, 8x2048's groups) keeps each slice's sums (N26b); with the knob w_partials=0
    # it would sum them by atomics, so the mode then splits no update's rows.
    from adaptqr import config
    from adaptqr.testing import deterministic

    s = schedules.schedule_for(4096, 4096)
    with deterministic():
        assert config.snapshot().deterministic
        r = hh._with_knobs(s, None)
        assert r.deterministic and r.w_partials and hh._splits(r, 1, 2, 63, 4032)
        assert hh.fp16_group(r, 8, 2048, 2048) == 1
        with config.experiment(w_partials=0):
            r = hh._with_knobs(s, None)
            assert r.deterministic and not hh._splits(r, 1, 2, 63, 4032)
            assert hh.fp16_group(r, 8, 2048, 2048) == 2
    r = hh._with_knobs(s, None)
    assert not config.snapshot().deterministic and not r.deterministic and not r.w_partials
    assert hh._splits(r, 1, 2, 63, 4032) and hh.fp16_group(r, 8, 2048, 2048) == 1


def test_group_panels_update_between_panels(monkeypatch):
    # A group's panels in order, each applied by a trailing launch to the group's later
    # columns before the next panel (EXPERIMENTS.md H28, the update inside the next panel's
    # kernel, was rejected).
    from types import SimpleNamespace as F

    s = hh._with_knobs(schedules.schedule_for(512, 512), None)
    calls = []
    monkeypatch.setattr(hh, "_panel", lambda f, k, pw: calls.append(("panel", k)))
    monkeypatch.setattr(hh, "_trailing", lambda f, k0, npan, c0, c1, f16, w=0:
                        calls.append(("update", k0, c0, c1)))
    hh._group_panels(F(s=s, B=640, m=512, n=512, after_panels=None), 64, 128, 1)
    assert calls == [("panel", 64), ("update", 64, 96, 128), ("panel", 96)]


def test_fp16_v16_knob():
    # N23, N24: on (run 0741), off under the knob.
    assert schedules.FP16_V16 is True
    _knob_resolves("fp16_v16", True, False, 2)


def test_pair_split_knob():
    # N25: slices of 128 rows (run 0811), other rows or 0 (the pair kernel) under the knob.
    assert schedules.PAIR_SPLIT_ROWS == 128
    _knob_resolves("pair_split", 128, 0, 100)


def test_w_partials_knob():
    # N26, N26b: ordered partials exactly in the deterministic mode (4-11 % slower than the
    # atomics outside it, up to 2.5x faster than no split inside it); the knob either way.
    import contextlib

    from adaptqr import config
    from adaptqr.testing import deterministic

    assert schedules.W_PARTIALS is None
    s = schedules.schedule_for(4096, 4096)
    assert hh._with_knobs(s, None).w_partials is False
    with deterministic():
        assert hh._with_knobs(s, None).w_partials is True
    for value in (0, 1):
        with config.experiment(w_partials=value):
            for mode in (contextlib.nullcontext, deterministic):
                with mode():
                    assert hh._with_knobs(s, None).w_partials is bool(value)
    with pytest.raises(ValueError, match="w_partials"):
        with config.experiment(w_partials=2):
            pass


def test_w_partials_split_rows_in_deterministic_mode():
    # A row split sums W with atomics in no fixed order, so the deterministic mode does not
    # split; with each slice's sums added in slice order (N26) it may.
    s = dataclasses.replace(hh._with_knobs(schedules.schedule_for(4096, 4096), None), deterministic=True)
    assert not hh._splits(s, 1, 2, 63, 4032)
    assert hh._splits(dataclasses.replace(s, w_partials=True), 1, 2, 63, 4032)


@pytest.mark.parametrize("B,m,n", [(1, 4096, 4096), (2, 4096, 4096), (8, 2048, 2048), (4, 3072, 3072),
                                   (1, 1024, 1024), (6, 768, 768), (16, 1024, 1024), (2, 5000, 700)])
def test_partial_slots_hold_every_row_split(B, m, n):
    # WParts is sized once, before the look-ahead's fork: its bound must hold every update
    # row_slices can plan (any column tiles, any rows, the look-ahead's thin slices included),
    # so that WParts.fit never has to thin the slices.
    from adaptqr.paths.row_split import partial_slots, row_slices

    s = hh._with_knobs(schedules.schedule_for(m, n), None)
    for sm in (132, 78, 16):
        slots = partial_slots(B, m, n, s.bn, sm, s.slice_min_rows or 0)
        for tiles in range(1, -(-n // s.bn) + 1):
            for rows in range(s.bm, m + 1, s.bm):
                nsplit, _ = row_slices(B, tiles, rows, s.bm, sm, s.slice_min_rows or 0)
                assert B * tiles * nsplit <= slots, (sm, tiles, rows, nsplit)
