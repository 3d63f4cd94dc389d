"""The Triton Q formation (householder_product's CUDA route) under the interpreter (issue 25)."""

import pytest
import torch
from _support import launch_spy  # tests/interpret/ is on sys.path

from adaptqr import originals, qform
from adaptqr.qform import QFormTiles, triton_householder_product

pytestmark = pytest.mark.interpret

TILES = {
    "default": None,
    "chunked": QFormTiles(16, 16, False, 4),   # several row chunks and column tiles
    "resident": QFormTiles(16, 128, True, 4),
    "narrow": QFormTiles(32, 32, False, 4),
    "nb16": QFormTiles(16, 32, False, 4, 16),
}


def _factors(shape, k=None, seed=25):
    g = torch.Generator().manual_seed(seed)
    h, tau = originals.geqrf(torch.randn(*shape, generator=g))
    return h, (tau if k is None else tau[..., :k].contiguous())


@pytest.mark.parametrize("tiles", TILES)
@pytest.mark.parametrize("shape,k", [
    ((2, 40, 24), None),      # tall, a partial panel
    ((2, 70, 70), None),      # square: three panels, the last partial
    ((1, 90, 50), 20),        # k < n: the columns past k are the identity's, reflected
    ((2, 2, 33, 17), None),   # two batch dims
    ((3, 9, 9), 0),           # k = 0: the identity's columns
])
def test_equals_torch(tiles, shape, k):
    h, tau = _factors(shape, k)
    if TILES[tiles] is not None and TILES[tiles].resident and TILES[tiles].bm < shape[-2]:
        pytest.skip("the resident tile must hold a whole column")
    h0, t0 = h.clone(), tau.clone()
    got = triton_householder_product(h, tau, TILES[tiles])
    want = originals.householder_product(h, tau)
    assert got.shape == want.shape and got.stride() == want.stride()
    torch.testing.assert_close(got, want, rtol=0, atol=2e-6)
    assert torch.equal(h, h0) and torch.equal(tau, t0)


@pytest.mark.parametrize("knobs", [
    {"qform_prec": "tf32x3"},
    {"qform_prec": "f16x3"},   # QF22: float16 halves hold float32 accuracy (high halves alone: 5e-4 off)
    {"qform_group": 2},        # QF26: programs in groups of matrices, the last group partial
    {"qform_group": 4},
    {"qform_halves": 1},       # QF29: f16x3 from V's halves made once by the T kernel
], ids=lambda k: "-".join(f"{a}={b}" for a, b in k.items()))
@pytest.mark.parametrize("tiles", ["chunked", "resident", "nb16"])
@pytest.mark.parametrize("shape,k", [((5, 60, 50), None), ((1, 90, 50), 20)])
def test_strip_kernel_knobs_equal_torch(knobs, tiles, shape, k):
    # The strip kernel's variants, each matrix's every strip formed once, k < n included.
    # The resident tile takes tf32x3 whatever the knobs say, and builds T itself.
    from adaptqr import config

    h, tau = _factors(shape, k)
    if TILES[tiles].resident and TILES[tiles].bm < shape[-2]:
        pytest.skip("the resident tile must hold a whole column")
    with config.experiment(**knobs):
        got = triton_householder_product(h, tau, TILES[tiles])
    torch.testing.assert_close(got, originals.householder_product(h, tau), rtol=0, atol=2e-6)


def _launches(monkeypatch, name, what):
    """:func:`_support.launch_spy` on ``adaptqr.qform``'s kernel ``name``."""
    return launch_spy(monkeypatch, qform, name, what)


@pytest.mark.parametrize("prec,warps", [("ieee", 1), ("tf32x3", 4), (None, None)])
def test_t_kernel_variants_equal_torch(prec, warps, monkeypatch):
    # QF16 (knobs qform_t_prec, qform_t_warps): the T kernel's V^T V in IEEE or tf32x3
    # (the default), on 1, 2 (the default) or 4 warps; torch's Q, with the knobs seen at
    # the launch.
    from adaptqr import config

    seen = _launches(monkeypatch, "qform_t_kernel", lambda kw: (kw["PREC"], kw["num_warps"]))
    h, tau = _factors((2, 130, 70))
    with config.experiment(qform_t_prec=prec, qform_t_warps=warps):
        got = triton_householder_product(h, tau, TILES["chunked"])
    assert seen == [(prec or "tf32x3", warps or 2)]
    torch.testing.assert_close(got, originals.householder_product(h, tau), rtol=0, atol=2e-6)


def test_zero_tau_columns_are_identity_reflectors():
    h, tau = _factors((2, 48, 40))
    tau[:, 5] = 0.0
    tau[1, 33:] = 0.0
    torch.testing.assert_close(triton_householder_product(h, tau),
                               originals.householder_product(h, tau), rtol=0, atol=2e-6)


def test_row_major_input_is_read_as_is():
    h, tau = _factors((2, 36, 20))
    hr = h.contiguous()  # row-major, where geqrf's output is column-major
    torch.testing.assert_close(triton_householder_product(hr, tau),
                               originals.householder_product(h, tau), rtol=0, atol=2e-6)


@pytest.mark.parametrize("shape,k", [((2, 100, 70), None), ((1, 90, 50), 20), ((2, 2, 33, 17), None),
                                     ((2, 50, 50), None)])
def test_rows_padded_to_the_alignment(shape, k, monkeypatch):
    # QF15 (knob qform_row_align, on by default): reflectors of m rows, m not a multiple of
    # 16, padded with zero rows before Q is formed; Q's first m rows are torch's. The rows
    # the kernels ran on are recorded: padded by default, m as it is with the knob at 0.
    from adaptqr import config

    h, tau = _factors(shape, k)
    h0, t0 = h.clone(), tau.clone()
    seen = []
    real = qform._form
    monkeypatch.setattr(qform, "_form", lambda *a: seen.append(a[3]) or real(*a))
    got = triton_householder_product(h, tau)
    want = originals.householder_product(h, tau)
    assert seen == [-(-shape[-2] // 16) * 16]
    assert got.shape == want.shape and got.stride() == want.stride()
    torch.testing.assert_close(got, want, rtol=0, atol=2e-6)
    assert torch.equal(h, h0) and torch.equal(tau, t0)
    with config.experiment(qform_row_align=0):
        triton_householder_product(h, tau)
    assert seen[1:] == [shape[-2]]


def test_default_tiles():
    # Short columns whole in registers; narrower column tiles when the wide ones leave SMs
    # idle (2x4096 on 132 SMs: 128 programs of 64 columns).
    assert qform.qform_tiles(20, 32, 32, 132).resident
    assert not qform.qform_tiles(40, 65, 40, 132).resident
    assert qform.qform_tiles(2, 4096, 4096, 132).bn == qform.QFORM_NARROW_BN
    assert qform.qform_tiles(4, 4096, 4096, 132).bn == qform.QFORM_BN


@pytest.mark.parametrize("B,m,nc", [(2, 40, 50), (1, 70, 33), (3, 16, 100)])
def test_apply_qt_equals_torch(B, m, nc):
    g = torch.Generator().manual_seed(26)
    A = torch.randn(B, m, m + nc, generator=g).mT.contiguous().mT  # column-major, as geqrf's
    h, tau = originals.geqrf(A[..., :m].contiguous().mT.contiguous().mT)
    C = A[..., m:]
    want = originals.householder_product(h, tau).mT @ C
    qform.apply_qt(h, tau, C)  # the Triton kernels: column-major h, contiguous columns of C
    torch.testing.assert_close(C, want, rtol=0, atol=5e-6)


def _unbounded(h, tau):
    """Reflectors past column 40 made non-orthogonal (``tau = 200``: Q's entries grow past
    1e6, float16's range is 65504) and column 44's an identity reflector (``tau = 0``) over
    entries of 1e6."""
    h, tau = h.clone(), tau.clone()
    tau[:, 40:] = 200.0
    tau[:, 44] = 0.0
    h[:, 50:, 44] = 1e6
    return h, tau


@pytest.mark.parametrize("tiles", ["chunked", "resident"])
def test_unbounded_reflectors_take_tf32x3(tiles):
    # torch's householder_product takes any tau. A matrix with a panel that is not
    # bounded_reflectors is formed by the tf32x3 launch: torch's Q, finite (f16x3's
    # operands would overflow to inf and NaN). The resident tile is tf32x3 anyway.
    h, tau = _unbounded(*_factors((2, 64, 48)))
    want = originals.householder_product(h, tau)
    assert want.abs().max() > 1e6 and torch.isfinite(want).all()
    got = triton_householder_product(h, tau, TILES[tiles])
    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5 * float(want.abs().max()))


def test_panel_flags():
    # The T kernel's flags (FLAGS): 1 for geqrf's panels, 0 for one with a tau = 200
    # reflector or an identity reflector over large entries.
    h, tau = _factors((2, 64, 48))
    _, ok, _ = qform._panel_ts(h.mT, tau, 64, 48, 3, 16, qform.config.snapshot().knobs, flags=True)
    assert ok.tolist() == [[1, 1, 1], [1, 1, 1]]
    h2, tau2 = _unbounded(h, tau)
    tau2[1, 40:] = tau[1, 40:]
    _, ok, _ = qform._panel_ts(h2.mT, tau2, 64, 48, 3, 16, qform.config.snapshot().knobs, flags=True)
    assert ok.tolist() == [[1, 1, 0], [1, 1, 0]]


@pytest.fixture
def small_wide_tiles(monkeypatch):
    """The wide route's tiles shrunk, so that the interpreter's small shapes still take
    several column tiles, row chunks and row tiles."""
    monkeypatch.setattr(qform, "QFORM_WIDE_BC", 16)
    monkeypatch.setattr(qform, "QFORM_WIDE_BK", 16)
    monkeypatch.setattr(qform, "QFORM_WIDE_BR", 16)


@pytest.mark.parametrize("prec", ["f16x3", "tf32x3"])
@pytest.mark.parametrize("nbw", [64, 128])
@pytest.mark.parametrize("shape,k", [
    ((2, 150, 130), None),    # three wide panels at 64, the last partial
    ((1, 200, 140), 90),      # k < n: the second panel's second sub-panel past k
    ((2, 2, 70, 41), None),   # two batch dims, one panel of two sub-panels
])
def test_wide_panels_equal_torch(shape, k, nbw, prec, small_wide_tiles, monkeypatch):
    # QF25 (knob qform_wide): Q by wide panels, each sub-panel's Y by the recurrence through
    # V^T V. In f16x3 the W launch runs twice a wide panel (f16x3 for the bounded matrices,
    # from the operands' halves made once (QF28), tf32x3 for the others).
    from adaptqr import config

    h, tau = _factors(shape, k)
    h0, t0 = h.clone(), tau.clone()
    seen = _launches(monkeypatch, "wide_w_kernel", lambda kw: kw["NBW"])
    with config.experiment(qform_wide=nbw, qform_wide_prec=prec):
        got = triton_householder_product(h, tau)
    want = originals.householder_product(h, tau)
    kk = tau.shape[-1]
    assert seen == [nbw] * (2 if prec == "f16x3" else 1) * -(-kk // nbw)
    assert got.shape == want.shape and got.stride() == want.stride()
    torch.testing.assert_close(got, want, rtol=0, atol=2e-6)
    assert torch.equal(h, h0) and torch.equal(tau, t0)


def test_wide_panels_zero_tau_columns(small_wide_tiles):
    # Identity reflectors (tau = 0) inside a wide panel: their columns of T are zero, so
    # whatever their V, they add nothing.
    from adaptqr import config

    h, tau = _factors((2, 100, 80))
    tau[:, 5] = 0.0
    tau[1, 33:] = 0.0
    with config.experiment(qform_wide=64):
        got = triton_householder_product(h, tau)
    torch.testing.assert_close(got, originals.householder_product(h, tau), rtol=0, atol=2e-6)


@pytest.mark.parametrize("flags", [0, 1])
@pytest.mark.parametrize("wide", [0, 64])
def test_unbounded_matrix_beside_a_bounded_one(wide, flags, small_wide_tiles, monkeypatch):
    # A matrix whose reflectors are not bounded (tau = 200; its first panel bounded, its
    # second not: Q's entries past 1e6 would overflow float16) takes the tf32x3 launch
    # beside the f16x3 launch of the bounded one, in the strip kernel and in the same wide
    # panels (QF25; operands' halves, QF28); QF31 (knob qform_flag_block): each program
    # reads its matrix's flags in one vector load.
    from adaptqr import config

    h, tau = _factors((2, 100, 48))
    h2, tau2 = _unbounded(h, tau)
    h2[0], tau2[0] = h[0], tau[0]
    seen = _launches(monkeypatch, "wide_update_kernel" if wide else "qform_kernel",
                     lambda kw: (kw["PREC"], kw["BOUNDED"], kw["NTW"]))
    with config.experiment(qform_wide=wide, qform_flag_block=flags):
        got = triton_householder_product(h2, tau2, None if wide else TILES["chunked"])
    assert [v[:2] for v in seen] == [("f16x3", 1), ("tf32x3", 2)]
    assert all((v[2] >= 16) if flags else (v[2] == 0) for v in seen)
    want = originals.householder_product(h2, tau2)
    assert want[1].abs().max() > 1e6 and want[0].abs().max() < 2 and torch.isfinite(want).all()
    torch.testing.assert_close(got[0], want[0], rtol=0, atol=2e-6)
    torch.testing.assert_close(got[1], want[1], rtol=2e-5, atol=2e-5 * float(want[1].abs().max()))


