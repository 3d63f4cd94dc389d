"""Issue 22's degenerate inputs through the public API on the CPU: ``path="householder"``
under TRITON_INTERPRET=1 runs the Triton kernels themselves. Sizes pick the fused small
kernel (n <= 64, one launch) and the register panel with its trailing updates (n = 72, 96);
a shrunken register budget sends n = 40 to the row-chunked panel."""

from __future__ import annotations

import pytest
from degenerate_suite import check_batch, property_test

pytestmark = pytest.mark.interpret

test_fused_and_register_panels = property_test((8, 16, 40, 72), (1, 2, 3), "cpu",
                                               path="householder", examples=30)


@pytest.mark.parametrize("structure", ["repeated", "subnormal", "cancel", "rank1", "nan"])
def test_chunked_panel(structure, monkeypatch):
    from adaptqr.paths import schedules

    # A [16, 64] tile no longer fits: every panel of n = 40 streams its rows.
    monkeypatch.setattr(schedules, "REG_PANEL_MAX_TILE", 16 * 32)
    monkeypatch.setattr(schedules, "SMALL_MAX_TILE", 16 * 16)
    check_batch(structure, 40, 2, 0, 7, "cpu", path="householder")


def test_every_structure_at_a_panel_boundary():
    from adaptqr.testing.degenerate import STRUCTURES

    for structure in STRUCTURES:  # n = 96: six panels of 16, every trailing variant
        check_batch(structure, 96, 2, 1, 11, "cpu", path="householder")


@pytest.fixture
def qr_dispatched(monkeypatch):
    """linalg.qr through the dispatcher and the Triton Q formation on CPU tensors (off CUDA
    it is torch's own call otherwise)."""
    import adaptqr

    monkeypatch.setattr(adaptqr.linalg, "dispatched", lambda A: True)


@pytest.mark.parametrize("structure", ["repeated", "subnormal", "huge", "rank0", "single", "nan"])
@pytest.mark.parametrize("n", [16, 72])
def test_linalg_qr(structure, n, qr_dispatched):
    from adaptqr import log

    log.enable()
    try:
        log.clear_decisions()
        check_batch(structure, n, 3, 1, 25, "cpu", op="qr")
        last = log.decisions()[-1]
    finally:
        log.disable()
    assert last["op"] == "qr" and "householder" in str(last["plan"]), last


@pytest.mark.parametrize("structure", ["subnormal", "huge"])
def test_linalg_qr_augmented(structure):
    # linalg.qr's [A | c I] on the wide path (batch 1 on the GPU): c's exponent is clamped,
    # so A's block may sit far below the identity's columns. The block takes its own
    # prescaling exponents, which the "f16x3" products need (with H's: factor 7e3 here,
    # 1.99e3 on the H200 at 1x512, run 1928).
    from adaptqr import linalg
    from adaptqr.testing.check import check_qr
    from adaptqr.testing.degenerate import degenerate

    A = degenerate(structure, 72, seed=1, device="cpu").unsqueeze(0)
    Q, R = linalg._qr_augmented(A)
    assert check_qr(A, Q, R).passes_bar
