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
