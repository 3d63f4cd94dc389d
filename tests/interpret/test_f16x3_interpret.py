"""T10's "f16x3" products (``paths/kernels/products._dot``) under the interpreter: float32
accuracy from float16 halves, in the trailing updates of every kind (streamed, resident,
row-split), against tf32x3's (knob ``trailing_prec``), and the prescaling window that keeps
their operands in float16's range."""

from __future__ import annotations

import dataclasses

import pytest
import torch

pytestmark = pytest.mark.interpret


def _factor(A, s, prec):
    from adaptqr import config
    from adaptqr.paths.householder import factor_householder

    H = A.mT.contiguous().mT.clone()
    tau = A.new_empty(A.shape[0], A.shape[-1])
    with config.experiment(trailing_prec=prec):
        factor_householder(H, tau, None, schedule=s)
    return H, tau


@pytest.mark.parametrize("kind", ["streamed", "resident", "row split"])
def test_f16x3_has_tf32x3_accuracy(kind):
    # The same factorization to float32's rounding, accumulated over the panels (float16
    # operands alone move it by ~1e-3 of its scale: N12), both at the bar.
    from adaptqr.paths import schedules
    from adaptqr.testing import check_geqrf

    B, m, n, s = {"streamed": (2, 96, 96, schedules.Schedule(False, 16, 1, 32, 16)),
                  "resident": (2, 96, 96, schedules.Schedule(False, 16, 1, 16, 16)),
                  "row split": (1, 640, 40, schedules.Schedule(False, 16, 1, 16, 64))}[kind]
    s = dataclasses.replace(s, small_n_nb=0)
    A = torch.randn(B, m, n, generator=torch.Generator().manual_seed(10))
    H1, t1 = _factor(A, s, "tf32x3")
    H2, t2 = _factor(A, s, "f16x3")
    assert float((H1 - H2).abs().max() / H1.abs().max()) < 5e-5
    assert float((t1 - t2).abs().max()) < 5e-5
    assert check_geqrf(A, H2, t2).passes_bar


@pytest.mark.parametrize("k", [-100, -30, -8, 14, 30, 100])
def test_f16x3_outside_the_window(k):
    # A matrix far from the window [2^-2, 2^12) is prescaled by a power of two into it, as
    # the unscaled one (largest column norm ~10) sits: every rounding falls where it falls
    # for that one, so V and tau are the same bits and R is the same times 2^k.
    from adaptqr.paths import schedules

    s = dataclasses.replace(schedules.Schedule(False, 16, 1, 32, 16), small_n_nb=0)
    A = torch.randn(2, 96, 96, generator=torch.Generator().manual_seed(11))
    H1, t1 = _factor(A, s, "f16x3")
    H2, t2 = _factor(A * 2.0 ** k, s, "f16x3")
    assert torch.equal(t1, t2)
    assert torch.equal(H1.tril(-1), H2.tril(-1))
    assert torch.equal(H1.triu() * 2.0 ** k, H2.triu())
