"""``torch.use_deterministic_algorithms`` on the Householder path, under the Triton
interpreter (docs/NUMERICS.md "Determinism", EXPERIMENTS.md L4, N26, N26b). A row-split
update sums ``W`` with atomics outside the mode, whose order on a GPU changes from run to
run; in the mode each slice keeps its sums, added in slice order, so the mode keeps the
same launches (and, here, where the interpreter runs the atomics in slice order, the same
bits). With the knob ``w_partials=0`` the mode splits no update over rows instead; both
factorizations agree to float32 rounding and pass the bar.
"""

from __future__ import annotations

import pytest
from _support import Info  # tests/interpret/ is on sys.path

pytestmark = pytest.mark.interpret


def _w_launches(monkeypatch):
    """The grids of the row-split W launches the Householder path makes from now on."""
    from adaptqr.paths import householder

    launches = []
    real = householder.trailing_w_kernel

    class _Counted:
        def __getitem__(self, grid):
            launches.append(grid)
            return real[grid]

    monkeypatch.setattr(householder, "trailing_w_kernel", _Counted())
    return launches


def _factor(A, **knobs):
    """``(H, tau)`` of ``A`` (2 x 640 x 40) under test_fp16's "row split" schedule, whose
    updates split over rows, and the experiment ``knobs``."""
    from adaptqr import config
    from adaptqr.paths import householder, schedules

    s = schedules.Schedule(False, 16, 1, 16, 64, small_n_nb=0)
    H = A.mT.contiguous().mT.clone()
    tau = A.new_empty(2, 40)
    with config.experiment(**knobs):
        householder.factor_householder(H, tau, Info(), schedule=s)
    return H, tau


def test_no_row_split_update_when_deterministic_without_partials(monkeypatch):
    import torch

    from adaptqr import config
    from adaptqr.testing import check_geqrf, deterministic

    launches = _w_launches(monkeypatch)
    A = torch.randn(2, 640, 40, generator=torch.Generator().manual_seed(5))
    H0, t0 = _factor(A)
    assert launches, "the default schedule should split this batch's updates over rows"
    launches.clear()
    with deterministic():
        assert config.snapshot().deterministic
        # Without ordered partials (N26b's default in the mode) the mode splits no rows.
        H1, t1 = _factor(A, w_partials=0)
    assert not launches
    assert not config.snapshot().deterministic
    assert check_geqrf(A, H1, t1).passes_bar
    torch.testing.assert_close(H1, H0, rtol=1e-4, atol=1e-4 * float(H0.abs().max()))
    torch.testing.assert_close(t1, t0, rtol=1e-4, atol=1e-4)


def test_deterministic_mode_splits_rows_with_partial_sums(monkeypatch):
    # N26: with each slice's W sums added in slice order (knob w_partials), a row split is
    # deterministic, so the mode keeps it: the same launches as without the mode, and the
    # same bits as the atomics give here (the interpreter adds them in slice order).
    import torch

    from adaptqr.testing import deterministic

    launches = _w_launches(monkeypatch)
    A = torch.randn(2, 640, 40, generator=torch.Generator().manual_seed(5))
    H0, t0 = _factor(A, w_partials=0)
    plain = list(launches)
    launches.clear()
    with deterministic():
        H1, t1 = _factor(A, w_partials=1)
    assert plain and launches == plain
    assert torch.equal(H0, H1) and torch.equal(t0, t1)
    launches.clear()
    with deterministic():  # the mode's default (N26b): the same
        H2, t2 = _factor(A)
    assert launches == plain
    assert torch.equal(H0, H2) and torch.equal(t0, t2)
