"""The wide path (m < n) through the Triton kernels under the interpreter (issue 26)."""

import pytest
import torch

import adaptqr
from adaptqr import originals
from adaptqr.testing import check_geqrf, check_qr

pytestmark = pytest.mark.interpret


@pytest.mark.parametrize("shape", [(3, 8, 20), (2, 16, 17), (1, 40, 100)])
def test_wide_matches_lapack_at_the_bar(shape):
    g = torch.Generator().manual_seed(26)
    A = torch.randn(*shape, generator=g)
    A0 = A.clone()
    a, tau = adaptqr.geqrf(A, path="wide")
    assert torch.equal(A, A0)
    ra, rt = originals.geqrf(A)
    assert a.shape == ra.shape and a.stride() == ra.stride() and tau.shape == rt.shape
    res = check_geqrf(A, a, tau)
    assert res.passes_bar, res.summary
    # LAPACK's signs: the same R up to rounding.
    torch.testing.assert_close(a.triu(), ra.triu(), rtol=0, atol=1e-4)


def test_wide_subnormal_matrix_is_prescaled():
    g = torch.Generator().manual_seed(262)
    A = torch.randn(2, 24, 40, generator=g) * 1e-40
    a, tau = adaptqr.geqrf(A, path="wide")
    assert torch.isfinite(a).all() and torch.isfinite(tau).all()
    res = check_geqrf(A, a, tau)
    assert res.passes_bar, res.summary


def test_blocked_call_without_the_probe_prescales_itself(monkeypatch):
    # ADAPTQR_DETECT=0 or a direct call: no "prescale" feature; the blocked schedule takes
    # the exponents from the max-abs itself. (The interpreter keeps subnormal products, so
    # the residual alone would pass without it: the exponents are watched as well.)
    from adaptqr.paths import householder
    from adaptqr.paths.schedules import schedule_for

    seen = []
    real = householder.prescale
    monkeypatch.setattr(householder, "prescale", lambda H, e: seen.append(e.tolist()) or real(H, e))
    m = n = 160
    assert not schedule_for(m, n).small
    g = torch.Generator().manual_seed(263)
    A = torch.randn(2, m, n, generator=g) * torch.tensor([1e-40, 1.0]).view(2, 1, 1)
    H = A.mT.contiguous().mT
    tau = A.new_empty(2, n)
    householder.factor_householder(H, tau, None)
    assert len(seen) == 1 and seen[0][0] > 100 and seen[0][1] == 0
    res = check_geqrf(A, H, tau)
    assert res.passes_bar, res.summary


def test_overlapped_q_t_gives_the_one_launch_result(monkeypatch):
    # W3: Q^T applied a few panels at a time as the leading block's factorization makes them
    # (here in issue order: no streams off the GPU) against one launch after it (the
    # knob's 0).
    from adaptqr import config
    from adaptqr.paths import wide

    g = torch.Generator().manual_seed(264)
    A = torch.randn(2, 96, 130, generator=g)
    calls = []
    real = wide.apply_qt_panels
    monkeypatch.setattr(wide, "apply_qt_panels",
                        lambda H, tau, C, TW, p0, p1, knobs: calls.append((p0, p1))
                        or real(H, tau, C, TW, p0, p1, knobs))
    with config.experiment(wide_chunk=0):
        a1, t1 = adaptqr.geqrf(A, path="wide")
    assert calls == []
    with config.experiment(wide_chunk=2):
        a2, t2 = adaptqr.geqrf(A, path="wide")
    assert calls == [(0, 2), (2, 3)]  # 96 columns: panels of 32, the last range at the end
    torch.testing.assert_close(a2, a1, rtol=0, atol=1e-6)
    torch.testing.assert_close(t2, t1, rtol=0, atol=1e-6)
    assert check_geqrf(A, a2, t2).passes_bar


def test_overlapped_route_copies_the_block_back():
    # W5: the overlapped route copies the factored block back before the side stream's
    # join (here in issue order): the block equals the one-launch route's bit for bit.
    from adaptqr import config

    g = torch.Generator().manual_seed(265)
    A = torch.randn(2, 96, 130, generator=g)
    with config.experiment(wide_chunk=0):
        a1, t1 = adaptqr.geqrf(A, path="wide")
    a2, t2 = adaptqr.geqrf(A, path="wide")
    assert torch.equal(a1[..., :96], a2[..., :96]) and torch.equal(t1, t2)
    torch.testing.assert_close(a2, a1)
    assert check_geqrf(A, a2, t2).passes_bar


@pytest.mark.parametrize("scale", [1.0, 1e-40, 1e30])
@pytest.mark.parametrize("shape", [(2, 40, 40), (1, 24, 60), (2, 48, 20)])
def test_augmented_qr_through_the_wide_path(shape, scale, monkeypatch):
    # QF14: linalg.qr's Q from the wide path's geqrf of [A | c I] (Q^T applied to the
    # identity beside the factorization), square, wide and tall, at extreme scales.
    from adaptqr.linalg import _qr_augmented

    monkeypatch.setenv("ADAPTQR_PATH", "wide")
    g = torch.Generator().manual_seed(141)
    A = torch.randn(*shape, generator=g) * scale
    Q, R = _qr_augmented(A)
    res = check_qr(A, Q, R)  # finite, orthonormal and Q R = A at the half gate
    assert res.passes_bar, res.summary
    Qt, _ = originals.linalg_qr(A.double())
    torch.testing.assert_close(Q.double(), Qt, rtol=0, atol=1e-4)


@pytest.mark.parametrize("shape", [(2, 64, 150), (1, 96, 192)])
def test_probed_block_skips_its_tail(shape, monkeypatch):
    # W6 (the default; the knob off skips the probe): a rank-deficient leading block takes
    # the probe's n_active: its later reflectors are identities (tau = 0) for the other
    # columns too, and the result stays at the bar; a full-rank matrix of the batch keeps
    # every reflector.
    from adaptqr import config, linalg
    from adaptqr.paths import wide

    B, m, n = shape
    g = torch.Generator().manual_seed(266)
    A = torch.randn(B, m, n, generator=g)
    A[0, :, 16:m] = 0.0  # the block's rank is 16 (the probe sees zero trailing columns)
    seen = []
    real = wide.finish_tail
    monkeypatch.setattr(wide, "finish_tail",
                        lambda H, tau, na, **counts: seen.append(na.tolist()) or real(H, tau, na, **counts))
    assert wide.WIDE_PROBE == 1  # the default since run 0023
    with config.experiment(wide_probe=0):
        adaptqr.geqrf(A, path="wide")
    assert seen == []
    a, tau = adaptqr.geqrf(A, path="wide")
    monkeypatch.setenv("ADAPTQR_PATH", "wide")
    Q, R = linalg._qr_augmented(A[:, :, :m])
    assert seen == [[16] + [m] * (B - 1)] * 2
    assert (tau[0, 16:] == 0).all()
    res = check_geqrf(A, a, tau)
    assert res.passes_bar, res.summary
    res = check_qr(A[:, :, :m], Q, R)
    assert res.passes_bar, res.summary
