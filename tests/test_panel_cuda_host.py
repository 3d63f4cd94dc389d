"""The CUDA C register panel (paths/kernels/panel_cuda.py, the default panel on the GPU;
EXPERIMENTS.md H12, H17) on the CPU, through :mod:`adaptqr.testing.cuda_host`: its source
under the host-thread shim (each warp's shuffles an exchange among 32 host threads), one
CTA a matrix. The panel's reflectors, R and tau against LAPACK's geqrf of the same
columns, and its T against larft's; the Gram build's too (and its fall back to the column
steps); and clusters of CTAs, whose CTAs the shim runs at once."""

from __future__ import annotations

import pytest
import torch

from adaptqr import originals
from adaptqr.qform import panel_t, reflector_panels
from adaptqr.testing import cuda_host

pytestmark = pytest.mark.skipif(not cuda_host.available(), reason="needs a C++20 compiler")


def _panel(X, k, pw, fuse, na=None, gram=False, gram_out=None, cta_rows=0, max_cluster=8,
           defines=()):
    """Factor columns ``[k, k + pw)`` of ``X`` ``(B, m, n)`` by the kernel, as the blocked
    path calls it: ``(H, tau, T)`` with the panel's T at ``TW[:, k // 32]``; ``na``: one
    ``n_active`` for all, or one a matrix; ``cta_rows``: clusters of CTAs of that many rows;
    ``gram`` 2: the Grams on tensor cores (H52); ``defines``: more macros for the build."""
    B, m, n = X.shape
    n_tw = -(-n // 32)
    Ht = X.transpose(-2, -1).contiguous()
    tau = torch.full((B, n), float("nan"))
    TW = torch.zeros(B, n_tw, 32, 32)
    nav = torch.full((B,), float(n)) if na is None else torch.tensor(na, dtype=torch.float32).expand(B).clone()
    mb = max(16, 1 << (m - k - 1).bit_length())
    cuda_host.panel_launch(Ht, tau, TW, nav, k, m, n, pw, k // 32, n_tw, mb, na is not None,
                           0.0, fuse, gram, gram_out, cta_rows, max_cluster, defines)
    return Ht.transpose(-2, -1), tau, TW[:, k // 32]


def _larft(h, tau):
    """larft's T of the reflectors below the diagonal of ``h`` ``(B, r, pw)``, padded to 32."""
    return panel_t(*reflector_panels(h, tau, 32))[:, 0]


@pytest.mark.parametrize("fuse", [False, True])
@pytest.mark.parametrize("m,n,k,pw", [
    (100, 64, 0, 32),     # 128 padded rows, one row a thread
    (300, 70, 32, 32),    # a later panel: 268 rows, 512 padded, two rows a thread
    (90, 40, 32, 8),      # the last, partial panel
])
def test_emulated_panel_equals_lapack(m, n, k, pw, fuse):
    g = torch.Generator().manual_seed(m + k)
    X = torch.randn(2, m, n, generator=g)
    X[1, :, k + 3] = 0.0          # a zero column: tau 0
    X[1, :, k + 5] *= 1e-30       # a tiny one: the scaled sum of squares
    H, tau, T = _panel(X, k, pw, fuse)
    h, t = originals.geqrf(X[:, k:, k:k + pw].double())
    got = H[:, k:, k:k + pw].double()
    torch.testing.assert_close(got.triu(), h.triu(), rtol=1e-5, atol=1e-5 * h.abs().amax())
    torch.testing.assert_close(got.tril(-1), h.tril(-1), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(tau[:, k:k + pw].double(), t, rtol=1e-5, atol=1e-6)
    assert float(tau[1, k + 3]) == 0.0
    torch.testing.assert_close(T.double(), _larft(h, t), rtol=1e-4, atol=1e-4)
    # Outside the panel's columns and rows, the matrix is as it was.
    assert torch.equal(H[:, :, k + pw:], X[:, :, k + pw:])
    assert torch.equal(H[:, :k, k:k + pw], X[:, :k, k:k + pw])


def test_emulated_panel_past_n_active_writes_zero_taus():
    X = torch.randn(1, 80, 64, generator=torch.Generator().manual_seed(3))
    H, tau, _ = _panel(X, 32, 32, False, na=20)
    assert torch.equal(tau[:, 32:], torch.zeros(1, 32))
    assert torch.equal(H, X)


@pytest.mark.parametrize("m,k", [(100, 0), (300, 32)])
def test_emulated_gram_panel(m, k):
    # EXPERIMENTS.md H22: the Gram build (CholeskyQR2 rebuilt into Householder form) takes a
    # well-conditioned panel: LAPACK's reflectors, R and tau, and T, by other arithmetic than
    # the column steps (its bits differ from theirs). A panel with a repeated column fails
    # its pivot test and is factored by the column steps from the untouched input: their
    # bits exactly.
    from adaptqr.paths.kernels.panel_gram import gram_build

    g = torch.Generator().manual_seed(m)
    X = torch.randn(2, m, 64, generator=g)
    X[1, :, k + 7] = X[1, :, k + 2]
    mb = max(16, 1 << (m - k - 1).bit_length())
    from adaptqr.paths.kernels import panel_cuda

    assert gram_build(panel_cuda.threads_rows(mb)[0], 32, 32)
    gout = torch.full((2, 2), -1, dtype=torch.int32)
    H, tau, T = _panel(X, k, 32, True, gram=True, gram_out=gout)
    # The decisions log's outcomes: this panel's column only, 1 where the Gram build held.
    assert gout[:, k // 32].tolist() == [1, 0] and gout[:, 1 - k // 32].tolist() == [-1, -1]
    H0, tau0, T0 = _panel(X, k, 32, True)
    h, t = originals.geqrf(X[:1, k:, k:k + 32].double())
    got = H[:1, k:, k:k + 32].double()
    torch.testing.assert_close(got.triu(), h.triu(), rtol=1e-5, atol=1e-5 * h.abs().amax())
    torch.testing.assert_close(got.tril(-1), h.tril(-1), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(tau[:1, k:k + 32].double(), t, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(T[:1].double(), _larft(h, t), rtol=1e-4, atol=1e-4)
    assert not torch.equal(H[0], H0[0])
    assert torch.equal(H[1], H0[1]) and torch.equal(T[1], T0[1])
    assert torch.equal(tau[1, k:k + 32], tau0[1, k:k + 32])


@pytest.mark.parametrize("fuse,cta_rows", [(False, 0), (True, 0), (True, 64)])
def test_emulated_steps_stop_at_n_active(fuse, cta_rows):
    # H53: a panel that n_active cuts runs its column steps up to n_active only (the
    # default of the builds without the Gram build): the same bits as every step run
    # (STEPS_TO_NA=0), whose steps past n_active are identities; on one CTA and on a
    # cluster of CTAs. Matrix 0 keeps 2 of the panel's columns, matrix 1 all, matrix 2 one,
    # matrix 3 seventeen.
    X = torch.randn(4, 300, 64, generator=torch.Generator().manual_seed(53))
    na = [34, 64, 33, 49]
    got = _panel(X, 32, 32, fuse, na=na, cta_rows=cta_rows)
    ref = _panel(X, 32, 32, fuse, na=na, cta_rows=cta_rows, defines=(("STEPS_TO_NA", 0),))
    for a, b in zip(got, ref):
        assert torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))
    H, tau, T = got
    assert torch.equal(tau[0, 34:], torch.zeros(30)) and float(tau[0, 33]) != 0.0
    assert torch.equal(T[0, 2:], torch.zeros(30, 32)) and torch.equal(T[0, :, 2:], torch.zeros(32, 30))


def test_emulated_gram_outcome_at_n_active():
    # A panel that n_active cuts (k + 32 > n_active) takes the column steps (outcome 0); one
    # at or past it exits before any work and writes no outcome (the log counts it skipped).
    X = torch.randn(3, 100, 64, generator=torch.Generator().manual_seed(5))
    gout = torch.full((3, 2), -1, dtype=torch.int32)
    _panel(X, 32, 32, True, na=[64, 40, 32], gram=True, gram_out=gout)
    assert gout[:, 1].tolist() == [1, 0, -1] and gout[:, 0].tolist() == [-1, -1, -1]


def _panel_residual(X, H, tau, k, b, c=32):
    """Backward error of matrix ``b``'s panel (its first ``c`` columns) in float64: the
    reflectors' Q times R against the input, relative to the input's norm."""
    A = X[b, k:, k:k + c].double()
    Hp = H[b, k:, k:k + c].double()
    Q = torch.linalg.householder_product(Hp, tau[b, k:k + c].double())
    return float((Q @ Hp[:c].triu() - A).norm() / A.norm())


@pytest.mark.parametrize("mma", [False, True])
@pytest.mark.parametrize("m,k", [(100, 0), (300, 32)])
def test_emulated_gram_outcomes_on_hard_panels(m, k, mma):
    # EXPERIMENTS.md H22, H32: the Gram build on panels it takes (plain, graded, tiny, huge,
    # orthogonal, correlated columns whose R has off-diagonal entries as large as its
    # diagonal) and ones its tests send to the column steps (a repeated column, a NaN, a
    # sub-column that nearly vanishes: tau near 2). Each outcome, and each factor's backward
    # error at float32's level. With ``mma`` (H52's build, GRAM_MMA) the Grams are 3xTF32
    # tensor-core products, here the shim's emulation of mma.sync's fragments.
    g = torch.Generator().manual_seed(m + 1)
    X = torch.randn(9, m, 64, generator=g)
    X[1] *= torch.logspace(0, -3, 64)                      # graded columns
    X[2] *= 1e-12                                          # small and large, in the Gram's range
    X[3] *= 1e12
    X[4, :, k + 7] = X[4, :, k + 2]                         # rejected by the first Cholesky
    X[5, 50, k + 4] = float("nan")
    # Nearly upper triangular: Q_top near the identity, tau near 2 (the LU's test).
    X[6, k:k + 32, k:k + 32] = X[6, k:k + 32, k:k + 32].triu() + 5.0 * torch.eye(32)
    X[6, k + 32:, k:k + 32] *= 1e-6
    X[7, :, k:k + 32] = torch.linalg.qr(X[7, :, k:k + 32])[0] * 3.0  # orthogonal columns
    X[8] = X[8] * 0.5 + torch.randn(m, 1, generator=g)
    gout = torch.full((9, 2), -1, dtype=torch.int32)
    H, tau, T = _panel(X, k, 32, True, gram=2 if mma else 1, gram_out=gout)
    assert gout[:, k // 32].tolist() == [1, 1, 1, 1, 0, 0, 0, 1, 1]
    for b in (0, 1, 2, 3, 4, 6, 7, 8):
        assert _panel_residual(X, H, tau, k, b) < 1e-5, b
    assert bool(H[5, k:, k + 4].isnan().any())
    h, t = originals.geqrf(X[:, k:, k:k + 32].double())
    torch.testing.assert_close(T[:4].double(), _larft(h[:4], t[:4]), rtol=1e-4, atol=1e-4)
    if mma:  # the tensor-core Grams move the factors only at rounding level
        H0 = _panel(X, k, 32, True, gram=True)[0]
        for b in (0, 1, 7, 8):
            assert float((H[b] - H0[b]).norm() / H0[b].norm()) < 1e-5, b


@pytest.mark.parametrize("cta_rows,max_cluster,gram,mma", [(256, 8, False, False), (128, 8, True, False),
                                                            (64, 16, True, False), (128, 8, True, True)])
def test_emulated_cluster_panel(cta_rows, max_cluster, gram, mma):
    # EXPERIMENTS.md H16, H22, H33: a 568-row panel (1024 padded) on a cluster of 4 CTAs of
    # 256 rows (column steps), 8 of 128 and 16 of 64 (the Gram build): each CTA's sums meet
    # through the other CTAs' shared memory. LAPACK's reflectors, R, tau and larft's T; a
    # zero column and a repeated one send their matrices' panels to the column steps
    # (outcome 0), the third takes the Gram build (1); the other columns untouched. ``mma``:
    # the Grams on tensor cores (H52), emulated.
    m, n, k = 600, 64, 32
    X = torch.randn(3, m, n, generator=torch.Generator().manual_seed(cta_rows))
    X[1, :, k + 3] = 0.0
    X[2, :, k + 7] = X[2, :, k + 2]
    gout = torch.full((3, 2), -1, dtype=torch.int32)
    H, tau, T = _panel(X, k, 32, True, gram=(2 if mma else 1) if gram else 0, gram_out=gout,
                       cta_rows=cta_rows, max_cluster=max_cluster)
    assert gout[:, 1].tolist() == ([1, 0, 0] if gram else [-1, -1, -1])
    h, t = originals.geqrf(X[:, k:, k:k + 32].double())
    got = H[:, k:, k:k + 32].double()
    # The repeated column's matrix: LAPACK's up to the column that repeats (after it, the
    # reflectors are rounding noise's, in any order of summation).
    for b, c in ((0, 32), (1, 32), (2, 7)):
        g_, h_ = got[b, :, :c], h[b, :, :c]
        torch.testing.assert_close(g_.triu(), h_.triu(), rtol=1e-5, atol=1e-5 * h_.abs().amax())
        torch.testing.assert_close(g_.tril(-1), h_.tril(-1), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(tau[b, k:k + c].double(), t[b, :c], rtol=1e-5, atol=1e-6)
    assert float(tau[1, k + 3]) == 0.0
    torch.testing.assert_close(T[:2].double(), _larft(h[:2], t[:2]), rtol=1e-4, atol=1e-4)
    assert torch.equal(H[:, :, k + 32:], X[:, :, k + 32:])
    assert torch.equal(H[:, :k, k:k + 32], X[:, :k, k:k + 32])


def test_emulated_cluster_gram_at_n_active():
    # The Gram build on a cluster of 16 CTAs (H33): every CTA runs the chains on the
    # cluster's Gram; n_active cuts one matrix's panel (the column steps take it).
    X = torch.randn(2, 600, 64, generator=torch.Generator().manual_seed(16))
    gout = torch.full((2, 2), -1, dtype=torch.int32)
    H, tau, T = _panel(X, 32, 32, True, na=[64, 40], gram=True, gram_out=gout, cta_rows=64,
                       max_cluster=16)
    assert gout[:, 1].tolist() == [1, 0]
    assert _panel_residual(X, H, tau, 32, 0) < 1e-5
    assert _panel_residual(X, H, tau, 32, 1, 8) < 1e-5
