"""adaptqr.householder_product and its blocked compact-WY route (issue 25), on the CPU.

The blocked route serves CUDA float32 only; here it runs on CPU tensors directly
(``blocked_householder_product``) and, for the public function's checks and ``out=``,
with the route forced on (``_blocked_applies`` patched)."""

from __future__ import annotations

import pytest
import torch

import adaptqr
from adaptqr import originals, qform
from adaptqr.qform import blocked_householder_product, panel_t


def _factors(shape, k=None, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(*shape, generator=g, dtype=dtype)
    h, tau = originals.geqrf(A)
    if k is not None:
        tau = tau[..., :k].contiguous()
    return h, tau


@pytest.mark.parametrize("shape,k,nb", [
    ((5, 3), None, 32),          # one panel, unbatched
    ((2, 70, 70), None, 32),     # square, a partial last panel
    ((3, 40, 24), 10, 8),        # k < n: columns past k still get the reflectors
    ((2, 3, 33, 17), None, 4),   # two batch dims, many panels
    ((4, 9, 9), 0, 4),           # k = 0: the identity's columns
    ((1, 64, 64), None, 64),     # kp = m = n
    ((2, 300, 260), None, 128),  # QF7's widths: panels of 128, 128 and 4
    ((1, 280, 200), 150, 256),   # one panel wider than k
    ((2, 300, 230), None, 1024), # QF9: one panel, capped at 256 columns
])
def test_blocked_equals_torch(shape, k, nb):
    h, tau = _factors(shape, k)
    got = blocked_householder_product(h, tau, nb=nb)
    want = originals.householder_product(h, tau)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def test_blocked_float32_is_orthonormal_and_matches():
    h, tau = _factors((8, 96, 80), dtype=torch.float32, seed=3)
    Q = blocked_householder_product(h, tau)
    want = originals.householder_product(h.double(), tau.double())
    eye = torch.eye(80, dtype=torch.float64)
    assert (Q.double().mT @ Q.double() - eye).abs().max() < 80 * 2e-7
    assert (Q.double() - want).abs().max() < 80 * 2e-7


def test_arbitrary_tau_and_zero_tau_columns():
    g = torch.Generator().manual_seed(5)
    h = torch.randn(3, 20, 12, generator=g, dtype=torch.float64)
    tau = torch.rand(3, 12, generator=g, dtype=torch.float64) * 2
    tau[:, 3] = 0.0
    tau[1] = 0.0
    got = blocked_householder_product(h, tau, nb=4)
    torch.testing.assert_close(got, originals.householder_product(h, tau), rtol=0, atol=1e-12)
    torch.testing.assert_close(got[1], torch.eye(20, 12, dtype=torch.float64))


def test_panel_t_gives_the_product_of_reflectors():
    g = torch.Generator().manual_seed(7)
    V = torch.randn(2, 10, 4, generator=g, dtype=torch.float64).tril(-1)
    V = V + torch.eye(10, 4, dtype=torch.float64)
    tau = torch.rand(2, 4, generator=g, dtype=torch.float64)
    tau[0, 2] = 0.0
    T = panel_t(V, tau)
    prod = torch.eye(10, dtype=torch.float64).expand(2, 10, 10).clone()
    for i in range(4):
        v = V[:, :, i:i + 1]
        prod = prod @ (torch.eye(10, dtype=torch.float64) - tau[:, i, None, None] * (v @ v.mT))
    torch.testing.assert_close(torch.eye(10, dtype=torch.float64) - V @ T @ V.mT, prod)
    assert torch.equal(T, T.triu())


def test_inputs_are_not_modified():
    h, tau = _factors((2, 12, 8))
    h0, t0 = h.clone(), tau.clone()
    blocked_householder_product(h, tau, nb=4)
    assert torch.equal(h, h0) and torch.equal(tau, t0)


def test_public_cpu_call_is_torchs():
    h, tau = _factors((3, 7, 5), dtype=torch.float32)
    assert torch.equal(adaptqr.householder_product(h, tau), originals.householder_product(h, tau))
    out = torch.empty(0)
    r = adaptqr.householder_product(h, tau, out=out)
    assert r is out and torch.equal(out, originals.householder_product(h, tau))


@pytest.fixture
def forced_route(monkeypatch):
    # The route on CPU tensors, of any one dtype (on CUDA: float32 both).
    monkeypatch.setattr(qform, "_blocked_applies", lambda A, tau: A.dtype == tau.dtype)


@pytest.mark.parametrize("A,tau", [
    (torch.randn(2, 3, 5), torch.randn(2, 3)),     # m < n
    (torch.randn(2, 5, 3), torch.randn(3, 3)),     # batch dims differ
    (torch.randn(2, 5, 3), torch.randn(2, 4)),     # k > n
    (torch.randn(2, 5, 3).double(), torch.randn(2, 3)),  # dtypes differ
])
def test_blocked_route_errors_are_torchs(forced_route, A, tau):
    with pytest.raises(RuntimeError) as theirs:
        originals.householder_product(A, tau)
    with pytest.raises(RuntimeError, match="householder_product") as ours:
        adaptqr.householder_product(A, tau)
    assert str(ours.value) == str(theirs.value)


def test_blocked_route_out(forced_route):
    h, tau = _factors((2, 9, 6))
    want = originals.householder_product(h, tau)
    out = torch.empty(0, dtype=torch.float64)
    assert adaptqr.householder_product(h, tau, out=out) is out
    torch.testing.assert_close(out, want, rtol=0, atol=1e-12)
    with pytest.raises(RuntimeError, match="dtype"):
        adaptqr.householder_product(h, tau, out=torch.empty(0, dtype=torch.float32))


def test_blas_knob_picks_the_blocked_product(forced_route, monkeypatch):
    # QF7: the knob qform_blas_nb routes Q formation to the blocked product in panels of
    # that width; unset, the kernels (here, off the GPU, the blocked product at QFORM_NB).
    from adaptqr import config

    seen = []
    real = qform.blocked_householder_product
    monkeypatch.setattr(qform, "blocked_householder_product",
                        lambda A, tau, nb=qform.QFORM_NB: seen.append(nb) or real(A, tau, nb))
    h, tau = _factors((2, 300, 260))
    want = originals.householder_product(h, tau)
    torch.testing.assert_close(adaptqr.householder_product(h, tau), want, rtol=0, atol=1e-12)
    with config.experiment(qform_blas_nb=128):
        torch.testing.assert_close(adaptqr.householder_product(h, tau), want, rtol=0, atol=1e-12)
    assert seen == [qform.QFORM_NB, 128]
    with pytest.raises(ValueError, match="qform_blas_nb"):
        with config.experiment(qform_blas_nb=100):
            pass


def test_small_q_picks_the_cuda_c_kernel_within_its_bounds(monkeypatch):
    # QF24: Q of few matrices of few columns that the CUDA C kernel takes (made to look so
    # here) goes to it; more matrices, more columns or more than its 64 rows, the Triton
    # kernels. The knob qform_small_cuda forces it off (0) or on wherever it takes the rows.
    from adaptqr import config
    from adaptqr.paths.kernels import qform_small_cuda

    monkeypatch.setattr(qform_small_cuda, "available", lambda: True)
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    small = qform.small_householder_product

    def picks(*shape):
        return qform._formation(torch.empty(*shape, device="meta"), False,
                                config.snapshot().knobs) is small

    assert picks(20, 32, 32) and picks(64, 64, 16) and picks(3, 20, 20, 20)
    assert not picks(65, 32, 32) and not picks(4, 20, 20, 20) and not picks(2, 48, 48)
    assert not picks(2, 65, 32)
    with config.experiment(qform_small_cuda=0):
        assert not picks(20, 32, 32)
    with config.experiment(qform_small_cuda=1):
        assert picks(640, 32, 32) and picks(2, 64, 64) and not picks(2, 65, 32)


def test_small_q_path_hands_the_kernel_views(monkeypatch):
    # small_householder_product: a column-major Q of the input's batch shape, the kernel
    # given (B, m, n) and (B, k) views of the caller's own tensors (no copy where the batch
    # dims merge), nothing launched for an empty batch.
    from adaptqr.paths.kernels import qform_small_cuda

    seen = []
    monkeypatch.setattr(qform_small_cuda, "launch", lambda H, tau, Q: seen.append((H, tau, Q)))
    h, tau = originals.geqrf(torch.randn(2, 3, 10, 6))
    Q = qform.small_householder_product(h, tau[..., :4])
    assert Q.shape == (2, 3, 10, 6) and Q.mT.is_contiguous()
    (H3, t2, Q3), = seen
    assert H3.shape == (6, 10, 6) and H3.data_ptr() == h.data_ptr()
    assert t2.shape == (6, 4) and t2.data_ptr() == tau.data_ptr()
    assert Q3.shape == (6, 10, 6) and Q3.data_ptr() == Q.data_ptr()
    assert Q3.stride() == (60, 1, 10)
    qform.small_householder_product(h[:0], tau[:0])
    assert len(seen) == 1
    # A 3-D input: the caller's tensors themselves, Q allocated column-major.
    h3, tau3 = originals.geqrf(torch.randn(5, 12, 7))
    Q = qform.small_householder_product(h3, tau3)
    (H3, t2, Q3) = seen[-1]
    assert H3 is h3 and t2 is tau3 and Q3 is Q and Q.shape == (5, 12, 7)
    assert Q.stride() == (84, 1, 12)
    # A 2-D input: one matrix, whose views the launch takes (a size-1 batch dim's stride
    # is the view's own).
    h2, tau2 = originals.geqrf(torch.randn(10, 6))
    monkeypatch.setattr(qform_small_cuda, "launch",
                        lambda H, tau, Q: seen.append(qform_small_cuda.launch_args(H, tau, Q)))
    assert qform.small_householder_product(h2, tau2).shape == (10, 6)
    assert seen[-1][:2] == (32, 3)


def test_grad_goes_to_torch(monkeypatch):
    # The blocked route is for inputs that need no gradient; with one, torch's autograd.
    h, tau = _factors((2, 6, 4))
    h.requires_grad_(True)
    assert not qform._blocked_applies(h, tau)
    adaptqr.householder_product(h, tau).sum().backward()
    assert h.grad is not None and torch.isfinite(h.grad).all()


def test_full_fp32_matmul_restores_the_callers_precision():
    was = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        with qform.full_fp32_matmul():
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(was)


def test_blocked_q_is_column_major_as_torchs():
    h, tau = _factors((3, 9, 6))
    assert blocked_householder_product(h, tau).stride() == originals.householder_product(h, tau).stride()


def test_wide_path_hands_on_the_calls_settings(monkeypatch):
    # The wide path's householder call reads the knobs of the call's snapshot
    # (info.settings), not whatever the environment holds by the time it runs.
    from adaptqr import config
    from adaptqr.paths import householder, wide

    seen = {}
    monkeypatch.setattr(householder, "factor_householder",
                        lambda H, tau, info=None: seen.update(settings=info.settings))
    monkeypatch.setattr(wide, "apply_qt", lambda H, tau, C, knobs: None)

    class Info:
        with config.experiment(tail_prec="ieee"):
            settings = config.snapshot()

    H = torch.randn(2, 3, 5).mT.contiguous().mT
    wide.factor_wide(H, torch.empty(2, 3), Info())
    assert seen["settings"] is Info.settings and seen["settings"].knobs.tail_prec == "ieee"
    wide.factor_wide(H, torch.empty(2, 3))  # no info: the current snapshot
    assert seen["settings"] == config.snapshot() and seen["settings"].knobs.tail_prec is None


@pytest.mark.parametrize("B,n,queued,nb", [
    (2, 4096, False, 256), (4, 4096, False, 256), (8, 2048, False, 256),  # QF7: cuBLAS won
    (1, 3072, False, 256), (2, 2048, False, 256), (1, 4096, True, 256),   # 512 lost (QF9)
    (1, 1024, False, 512), (1, 2048, False, 512), (1, 1024, True, 512),   # QF9: 512 won
    (1, 512, True, 512), (1, 768, True, 512),  # QF9: in linalg.qr, behind the factorization
    (1, 512, False, 0), (1, 768, False, 0),    # alone, the kernel
    (16, 1024, False, 0), (640, 512, False, 0), (2, 1024, True, 0),
    (16, 2048, False, 0),  # 512 strips on 132 SMs: unmeasured, the kernel's side of the rule
])
def test_blas_width_rule(B, n, queued, nb):
    assert qform.blas_width(B, n, 132, queued) == nb

