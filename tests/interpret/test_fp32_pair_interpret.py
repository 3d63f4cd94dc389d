"""T13: the FP32 route's two-panel update in one pass over each streamed tile
(``trailing._apply_pair_f32``, knob ``fp32_pair``: its row chunk) under the interpreter,
against the two passes it replaces: the same factorization to float32's rounding, both at the bar, for
matrices that take the FP32 route beside one on the FP16 route (the launch that runs the
pair), with ``n_active`` inside and at the edge of a pair, a negligible tail (the tail
precision's tiles) and a zero tail (tiles skipped)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from _support import Info, launch_spy  # tests/interpret/ is on sys.path

pytestmark = pytest.mark.interpret


def _factor(A, s, feats):
    from adaptqr.paths.householder import factor_householder

    H = A.mT.contiguous().mT.clone()
    tau = A.new_empty(A.shape[0], A.shape[-1])
    factor_householder(H, tau, Info(feats), schedule=s)
    return H, tau


def _mixed_batch():
    """``(A, feats, schedule)``: matrix 0 on the FP16 route, so that updates come in groups
    of two panels and the FP32 launch (F16_SKIP) takes the others: a zero tail (n_nonzero
    100), a negligible tail past n_active 70, and n_active 48 at a pair's edge."""
    from adaptqr.paths import schedules

    B, m, n = 5, 160, 144
    g = torch.Generator().manual_seed(13)
    A = torch.randn(B, m, n, generator=g)
    A[2, :, 100:] = 0
    A[3, :, 70:] *= 2.0 ** -40
    A[4, :, 48:] *= 2.0 ** -40
    na = torch.tensor([n, n, 100, 70, 48], dtype=torch.int32)
    nz = torch.tensor([n, n, 100, n, n], dtype=torch.int32)
    sc = torch.tensor([2.0 ** 10, 0.0, 0.0, 0.0, 0.0])
    feats = {"n_active": na, "n_nonzero": nz, "fp16_scale": sc}
    s = dataclasses.replace(schedules.Schedule(False, 16, 1, 32, 16), small_n_nb=0,
                            fp16_group=2, lookahead=0)
    return A, feats, s


def _same_factorization(A, H1, t1, H2, t2):
    """Matrix 0 (FP16 route) to the bit, the others to float32's rounding and at the bar;
    the zero tail still zero, the taus past n_active zero."""
    from adaptqr.testing import check_geqrf

    assert torch.equal(H1[0], H2[0]) and torch.equal(t1[0], t2[0])
    for i in range(1, A.shape[0]):
        scale = float(H1[i].abs().max())
        assert float((H1[i] - H2[i]).abs().max()) < 5e-5 * scale, i
        assert float((t1[i] - t2[i]).abs().max()) < 5e-5, i
    assert torch.equal(H2[2, :, 100:], torch.zeros(A.shape[1], A.shape[2] - 100))
    assert (t2[3, 70:] == 0).all() and (t2[4, 48:] == 0).all()
    r = check_geqrf(A[1:], H2[1:], t2[1:])
    assert r.passes_bar, r.summary()


@pytest.mark.parametrize("rows", [16, 32])
def test_fp32_pair_matches_two_passes(rows):
    # The FP16-routed matrix never sees the pair; the others took it (other arithmetic,
    # other bits). A pair whose second panel lies past n_active is not a pair: the tail
    # stays as the two-pass update leaves it.
    A, feats, base = _mixed_batch()
    H1, t1 = _factor(A, dataclasses.replace(base, fp32_pair=0), feats)
    H2, t2 = _factor(A, dataclasses.replace(base, fp32_pair=rows), feats)
    assert not torch.equal(H1[1], H2[1])
    _same_factorization(A, H1, t1, H2, t2)


def test_fp32_pair_from_halves_matches_the_pair(monkeypatch):
    # T14 (knob fp32_halves): the pair rest update's f16x3 products from the reflectors'
    # float16 halves made once an update (v16_kernel's LO), the FP16-routed matrix's rest
    # updates reading the same high halves; against the pair that splits them in each
    # program.
    from adaptqr.paths import householder

    A, feats, base = _mixed_batch()
    base = dataclasses.replace(base, fp32_pair=16, prec="f16x3", fp16_v16=True)
    H1, t1 = _factor(A, dataclasses.replace(base, fp32_halves=False), feats)
    seen = launch_spy(monkeypatch, householder, "trailing_kernel", lambda kw: kw["HALVES32"])
    H2, t2 = _factor(A, dataclasses.replace(base, fp32_halves=True), feats)
    assert True in seen     # the halves' launches ran
    _same_factorization(A, H1, t1, H2, t2)


@pytest.mark.parametrize("structure", ["repeated", "cancel", "rank1", "subnormal", "huge",
                                       "mixed_scale", "nan", "inf"])
def test_fp32_pair_on_degenerate_inputs(structure, monkeypatch):
    # The degenerate suite's verdicts (tests/degenerate_suite.py: the bar, finite outputs,
    # NaN kept in its matrix, the input untouched) through the public call with the pair
    # on: the FP16 route offered at n = 96 (its floor lowered) and its groups of two, so
    # the degenerate matrix and its random neighbour take the FP32 launch's pairs.
    import importlib

    from degenerate_suite import check_batch

    from adaptqr import config
    from adaptqr.paths import householder

    classify = importlib.import_module("adaptqr.detectors.classify")
    monkeypatch.setattr(classify, "FP16_MIN_N", 64)
    kernel, pairs = householder.trailing_kernel, []

    class Spy:  # notes each launch's PAIR32 and runs the kernel
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                pairs.append(kwargs.get("PAIR32", False))
                return kernel[grid](*args, **kwargs)
            return launch

    monkeypatch.setattr(householder, "trailing_kernel", Spy())
    with config.experiment(fp32_pair=16, fp16_group=2):
        check_batch(structure, 96, 3, 1, 17, "cpu", path="householder")
    assert any(pairs), pairs
