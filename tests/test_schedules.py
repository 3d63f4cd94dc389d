"""Schedules of the householder path: the row-split sizing and its experiment override."""

import pytest

from adaptqr.paths import schedules
from adaptqr.paths.householder import split_rows

H200_SMS = 132


def test_split_rows_default_sizes(monkeypatch):
    monkeypatch.delenv("ADAPTQR_SPLIT_MIN_ROWS", raising=False)
    assert schedules.split_min_rows() == schedules.SPLIT_MIN_ROWS
    assert split_rows(2, 4096, 32, H200_SMS) == (64, 64)    # 2 x 64 programs, all resident
    assert split_rows(8, 2048, 32, H200_SMS) == (128, 16)
    assert split_rows(640, 512, 32, H200_SMS) is None       # the panel fits one program
    assert split_rows(200, 1024, 32, H200_SMS) is None      # 400 programs would not be resident


def test_split_min_rows_override(monkeypatch):
    monkeypatch.setenv("ADAPTQR_SPLIT_MIN_ROWS", "256")
    assert split_rows(2, 4096, 32, H200_SMS) == (256, 16)
    assert split_rows(8, 2048, 32, H200_SMS) == (256, 8)
    for bad in ("100", "8", "x"):
        monkeypatch.setenv("ADAPTQR_SPLIT_MIN_ROWS", bad)
        with pytest.raises(ValueError, match="ADAPTQR_SPLIT_MIN_ROWS"):
            schedules.split_min_rows()
    monkeypatch.setenv("ADAPTQR_SPLIT_MIN_ROWS", "")
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


def test_tail_prec_knob(monkeypatch):
    from adaptqr import config

    monkeypatch.delenv("ADAPTQR_TAIL_PREC", raising=False)
    assert config.tail_prec() is None and schedules.schedule_for(512, 512).tail_prec is None
    monkeypatch.setenv("ADAPTQR_TAIL_PREC", "tf32")
    assert config.tail_prec() == "tf32"
    monkeypatch.setenv("ADAPTQR_TAIL_PREC", "fp8")
    with pytest.raises(ValueError, match="ADAPTQR_TAIL_PREC"):
        config.tail_prec()


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
