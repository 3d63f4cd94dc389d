"""The decisions log's panel kinds for the Triton householder path under the interpreter: per
matrix, its panels by kernel, those at or past its n_active (the route probe's) skipped."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.interpret


def test_householder_panels_in_the_log():
    import adaptqr
    from adaptqr import log
    from adaptqr.testing import check_geqrf

    A = torch.randn(2, 160, 96)
    A[1, :, 40:] = 0  # n_active 40: panels of 32 (schedules.SMALL_N_NB); the one at 64 exits
    log.enable()
    try:
        adaptqr.clear_decisions()
        a, tau = adaptqr.geqrf(A, path="householder")
        (rec,) = adaptqr.decisions()
    finally:
        log.disable()
    assert check_geqrf(A, a, tau).passes_bar
    assert rec["probed"] and rec["plan"]["dense"] == "householder"
    assert rec["panels"] == [{"register": 3}, {"register": 2, "skipped": 1}]
    assert rec["panel_counts"] == {"register": 5, "skipped": 1}
