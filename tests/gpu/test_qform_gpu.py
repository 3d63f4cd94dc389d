"""Issue 25 on the GPU: adaptqr.householder_product (blocked compact WY, CUDA float32) and
adaptqr.linalg.qr against float64 references, at the qr_v2 half gate's scale, on the
benchmark's square shapes and the optimizer shapes.

Bounds: orthogonality ``||Q^T Q - I||_max`` and the factor residual ``||A - Q R||_max /
||A||_max`` in units of ``n eps32``, at most 50 (half of qr_v2's orthogonality gate of 100).
"""

import pytest
import torch

import adaptqr
from adaptqr import originals

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

EPS32 = torch.finfo(torch.float32).eps
HALF_GATE = 50.0
SHAPES = [(20, 32, 32), (40, 176, 176), (40, 352, 352), (64, 512, 512), (8, 2048, 2048),
          (64, 1024, 256), (16, 768, 768), (2, 3072, 3072), (4, 100, 37)]


def _ortho(Q):
    Qd = Q.double()
    k = Qd.shape[-1]
    return ((Qd.mT @ Qd - torch.eye(k, dtype=torch.float64, device=Q.device)).abs().amax()
            / (max(Qd.shape[-2:]) * EPS32)).item()


def _shape_id(s):
    return "x".join(map(str, s)) if isinstance(s, tuple) else str(s)


@pytest.mark.parametrize("shape", SHAPES, ids=_shape_id)
def test_householder_product_matches_float64(shape):
    g = torch.Generator(device="cuda").manual_seed(25)
    A = torch.randn(*shape, device="cuda", generator=g)
    h, tau = originals.geqrf(A)
    h0, t0 = h.clone(), tau.clone()
    Q = adaptqr.householder_product(h, tau)
    assert torch.equal(h, h0) and torch.equal(tau, t0)
    ref = originals.householder_product(h.double(), tau.double())
    n = max(shape[-2:])
    assert ((Q.double() - ref).abs().amax() / (n * EPS32)).item() <= HALF_GATE
    assert _ortho(Q) <= HALF_GATE


@pytest.mark.variant
@pytest.mark.parametrize("nb", [64, 128, 256, 512, 1024])
@pytest.mark.parametrize("shape,k", [((2, 4096, 4096), None), ((1, 1024, 1024), None),
                                     ((1, 3072, 3072), None), ((1, 768, 768), None),
                                     ((64, 1024, 256), None), ((3, 700, 500), 300),
                                     ((40, 176, 176), None)],
                         ids=_shape_id)
def test_blas_formation_at_the_half_gate(shape, k, nb):
    # EXPERIMENTS.md QF7: Q by cuBLAS products in panels of nb columns, under a global TF32
    # setting (the products set full float32 precision themselves), k < n included.
    _q_at_the_half_gate(shape, k, qform_blas_nb=nb)


@pytest.mark.variant
@pytest.mark.parametrize("shape,k", [((60, 1000, 1000), None), ((40, 350, 350), None),
                                     ((3, 700, 500), 300), ((16, 1000, 250), None)],
                         ids=_shape_id)
def test_unpadded_rows_at_the_half_gate(shape, k):
    # EXPERIMENTS.md QF15 pads the rows by default; the knob's other value, Q formed with
    # the rows as they are, on the Triton route.
    _q_at_the_half_gate(shape, k, qform_row_align=0)


@pytest.mark.variant
@pytest.mark.parametrize("knobs", [{"qform_t_prec": "ieee"}, {"qform_t_warps": 1},
                                   {"qform_t_warps": 4}],
                         ids=lambda k: "-".join(f"{a}={b}" for a, b in k.items()))
@pytest.mark.parametrize("shape,k", [((640, 512, 512), None), ((60, 1000, 1000), None),
                                     ((3, 700, 500), 300), ((40, 176, 176), None)],
                         ids=_shape_id)
def test_q_kernel_variants_at_the_half_gate(shape, k, knobs):
    # EXPERIMENTS.md QF16: the T kernel's V^T V in IEEE (the default: tf32x3), on 1 or 4
    # warps (the default: 2).
    _q_at_the_half_gate(shape, k, **knobs)


@pytest.mark.variant
@pytest.mark.parametrize("nbw", [64, 128])
@pytest.mark.parametrize("shape,k", [((640, 512, 512), None), ((60, 1000, 1000), None),
                                     ((8, 2048, 2048), None), ((3, 700, 500), 300),
                                     ((64, 1024, 256), None), ((40, 176, 176), None),
                                     ((2, 200, 130), 70)],
                         ids=_shape_id)
def test_wide_panels_at_the_half_gate(shape, k, nbw):
    # EXPERIMENTS.md QF25: Q in wide panels by GEMM-shaped launches, k < n and a last
    # panel partly past k included.
    _q_at_the_half_gate(shape, k, qform_wide=nbw)


@pytest.mark.variant
@pytest.mark.parametrize("shape,k", [((640, 512, 512), None), ((60, 1000, 1000), None),
                                     ((3, 700, 500), 300), ((64, 1024, 256), None),
                                     ((40, 176, 176), None), ((5, 70, 70), 0)],
                         ids=_shape_id)
def test_strip_halves_at_the_half_gate(shape, k):
    # EXPERIMENTS.md QF29: the strip kernel's f16x3 products from V's halves made once.
    _q_at_the_half_gate(shape, k, qform_halves=1, qform_wide=0)


@pytest.mark.parametrize("knobs", [{"qform_wide": 128}, {"qform_wide": 0, "qform_halves": 1}],
                         ids=["wide", "strip-halves"])
@pytest.mark.parametrize("kind", ["rankdef", "tiny", "huge", "repeated"])
def test_q_routes_on_degenerate_input(kind, knobs):
    # QF25's route (forced: its shapes by default are large batches), and the strip
    # kernel's with V's halves (QF29), on rank-deficient input (zero trailing columns: tau
    # = 0 reflectors), entries near float32's ends, and repeated columns: torch's float64
    # Q at the half gate.
    from adaptqr import config

    g = torch.Generator(device="cuda").manual_seed(2525)
    A = torch.randn(3, 1100, 1024, device="cuda", generator=g)
    if kind == "rankdef":
        A[..., 700:] = 0.0
    elif kind == "tiny":
        A *= 1e-30
    elif kind == "huge":
        A *= 1e30
    else:
        A[..., 1::2] = A[..., 0::2]
    h, tau = originals.geqrf(A)
    with config.experiment(**knobs):
        Q = adaptqr.householder_product(h, tau)
    ref = originals.householder_product(h.double(), tau.double())
    assert torch.isfinite(Q).all()
    assert ((Q.double() - ref).abs().amax() / (1100 * EPS32)).item() <= HALF_GATE
    assert _ortho(Q) <= HALF_GATE


@pytest.mark.variant
@pytest.mark.parametrize("shape,k", [((20, 32, 32), None), ((40, 64, 64), None), ((7, 50, 30), 12),
                                     ((3, 20, 20), None), ((2, 3, 2), None), ((5, 9, 5), 0),
                                     ((2, 3, 33, 33), None)], ids=_shape_id)
def test_small_q_by_cuda_c_at_the_half_gate(shape, k):
    # EXPERIMENTS.md QF24: Q of at most 64 rows by the CUDA C kernel (one cupy launch, a
    # warp a pair of columns), k < n, k = 0 and two batch dims included; and the linalg.qr
    # that forms its Q so.
    from adaptqr import config
    from adaptqr.paths.kernels import qform_small_cuda

    if not qform_small_cuda.available():
        pytest.skip("needs cupy")
    _q_at_the_half_gate(shape, k, qform_small_cuda=1)
    A = torch.randn(*shape, device="cuda")
    with config.experiment(qform_small_cuda=1):
        _qr_at_the_half_gate(A, "reduced")


@pytest.mark.variant
def test_small_q_by_cuda_c_strided_and_captured():
    # QF24's kernel reads its inputs through their strides (the same bits from a row-major
    # copy and a strided tau), and a CUDA graph of the call replays on new inputs.
    from adaptqr import config
    from adaptqr.paths.kernels import qform_small_cuda

    if not qform_small_cuda.available():
        pytest.skip("needs cupy")
    h, tau = originals.geqrf(torch.randn(20, 32, 32, device="cuda"))
    with config.experiment(qform_small_cuda=1):
        eager = adaptqr.householder_product(h, tau)
        strided = adaptqr.householder_product(h.contiguous(), torch.stack([tau, tau], -1)[..., 0])
        assert torch.equal(strided, eager)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            adaptqr.householder_product(h, tau)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            Qg = adaptqr.householder_product(h, tau)
        h2, tau2 = originals.geqrf(torch.randn(20, 32, 32, device="cuda"))
        h.copy_(h2)
        tau.copy_(tau2)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(Qg, adaptqr.householder_product(h, tau))
    assert _ortho(Qg) <= HALF_GATE


def _q_at_the_half_gate(shape, k, **knobs):
    from adaptqr import config

    g = torch.Generator(device="cuda").manual_seed(257)
    h, tau = originals.geqrf(torch.randn(*shape, device="cuda", generator=g))
    if k is not None:
        tau = tau[..., :k].contiguous()
    was = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        with config.experiment(**knobs):
            Q = adaptqr.householder_product(h, tau)
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(was)
    ref = originals.householder_product(h.double(), tau.double())
    n = max(shape[-2:])
    assert ((Q.double() - ref).abs().amax() / (n * EPS32)).item() <= HALF_GATE
    assert _ortho(Q) <= HALF_GATE


def test_householder_product_ignores_a_global_tf32_setting():
    was = torch.get_float32_matmul_precision()
    A = torch.randn(16, 512, 512, device="cuda")
    h, tau = originals.geqrf(A)
    try:
        torch.set_float32_matmul_precision("high")
        Q = adaptqr.householder_product(h, tau)
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(was)
    assert _ortho(Q) <= HALF_GATE


@pytest.mark.parametrize("shape", [(3, 200, 160), (5, 512, 512)], ids=_shape_id)
def test_unbounded_matrices_beside_bounded_ones(shape):
    # QF22: the f16x3 launch forms the matrices whose panels are all bounded, the tf32x3
    # launch the others, in one batch. Matrix 1's reflectors 40-45 get tau = 200 (Q's
    # entries past 1e6, float16's range is 65504; six of them stay in float32's) and column
    # 44 an identity reflector over entries of 1e6: either in the f16x3 launch gives inf or
    # NaN.
    g = torch.Generator(device="cuda").manual_seed(37)
    h, tau = originals.geqrf(torch.randn(*shape, device="cuda", generator=g))
    tau[1, 40:46] = 200.0
    tau[1, 44] = 0.0
    h[1, 50:, 44] = 1e6
    Q = adaptqr.householder_product(h, tau)
    ref = originals.householder_product(h.double(), tau.double())
    assert torch.isfinite(Q).all()
    err = (Q.double() - ref).abs().amax(dim=(-2, -1)) / ref.abs().amax(dim=(-2, -1))
    n = shape[-1]
    assert (err / (n * EPS32)).max().item() <= HALF_GATE, err.tolist()
    keep = [b for b in range(shape[0]) if b != 1]
    assert _ortho(Q[keep]) <= HALF_GATE


# One matrix of 512-2048 columns: QF9's single cuBLAS panel (complete 1x2048x1500: Q 2048 wide).
@pytest.mark.parametrize("shape", [(64, 512, 512), (8, 2048, 2048), (64, 1024, 256), (4, 64, 200),
                                   (1, 512, 512), (1, 768, 768), (1, 2048, 1500)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_linalg_qr_at_the_half_gate(shape, mode):
    g = torch.Generator(device="cuda").manual_seed(52)
    _qr_at_the_half_gate(torch.randn(*shape, device="cuda", generator=g), mode)


@pytest.mark.variant
@pytest.mark.parametrize("shape", [(1, 512, 512), (1, 768, 768), (1, 1024, 1024), (8, 512, 512),
                                   (4, 700, 600), (2, 600, 900), (1, 2048, 1500)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("mode", ["reduced", "complete"])
@pytest.mark.parametrize("kind", ["dense", "rankdef", "tiny", "huge"])
def test_augmented_qr_at_the_half_gate(shape, mode, kind, monkeypatch):
    # EXPERIMENTS.md QF14: Q from the wide path's geqrf of [A | c I] (complete Q of a tall
    # matrix stays on the Q-formation route).
    from adaptqr import config, linalg

    calls = []
    real = linalg._qr_augmented
    monkeypatch.setattr(linalg, "_qr_augmented", lambda A: calls.append(A.shape) or real(A))
    g = torch.Generator(device="cuda").manual_seed(141)
    A = torch.randn(*shape, device="cuda", generator=g)
    if kind == "rankdef":
        A = A[..., :, : shape[-1] // 8].repeat_interleave(8, dim=-1)[..., :shape[-1]].contiguous()
    A = A * {"dense": 1.0, "rankdef": 1.0, "tiny": 1e-40, "huge": 1e30}[kind]
    with config.experiment(qr_augmented=8):
        # Past the rank the reflectors are made of rounding errors, and R's signs after
        # them are any: signs are compared on full-rank matrices only.
        _qr_at_the_half_gate(A, mode, signs=kind != "rankdef")
    assert len(calls) == (0 if mode == "complete" and shape[-2] > shape[-1] else 1)


def _qr_at_the_half_gate(A, mode, signs=True):
    shape = A.shape
    Q, R = adaptqr.linalg.qr(A, mode=mode)
    # The float64 reference: torch's float32 QR of a subnormal matrix is itself inexact.
    Qt, Rt = originals.linalg_qr(A.double(), mode=mode)
    assert Q.shape == Qt.shape and R.shape == Rt.shape
    n = max(shape[-2:])
    res = ((A.double() - Q.double() @ R.double()).abs().amax() / (A.abs().amax() * n * EPS32)).item()
    assert res <= HALF_GATE
    assert _ortho(Q) <= HALF_GATE
    if not signs:
        return
    # LAPACK's signs, as torch's: R's diagonal agrees in sign with torch's.
    d, dt = R.diagonal(dim1=-2, dim2=-1), Rt.diagonal(dim1=-2, dim2=-1)
    big = dt.abs() > 1e-3 * dt.abs().amax()
    assert torch.equal(torch.sign(d)[big], torch.sign(dt)[big])


def test_linalg_qr_gradients_agree_with_torch():
    A = torch.randn(8, 128, 64, device="cuda", dtype=torch.float32)
    gs = []
    for fn in (adaptqr.linalg.qr, originals.linalg_qr):
        X = A.clone().requires_grad_(True)
        Q, R = fn(X)
        (Q.sum() + (R * R).sum()).backward()
        gs.append(X.grad.double())
    scale = gs[1].abs().amax()
    assert ((gs[0] - gs[1]).abs().amax() / scale).item() < 1e-3


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
@pytest.mark.parametrize("shape", [(8, 64, 64), (4, 700, 600)])  # graph-cached and eager sizes
def test_a_device_that_is_not_current(shape):
    # Triton launches on the current device: the library's calls set the tensors' device.
    assert torch.cuda.current_device() == 0
    A = torch.randn(*shape, device="cuda:1")
    h, tau = adaptqr.geqrf(A)
    Q = adaptqr.householder_product(h, tau)
    Q2, R = adaptqr.linalg.qr(A)
    assert Q.device == Q2.device == R.device == A.device
    assert _ortho(Q) <= HALF_GATE and _ortho(Q2) <= HALF_GATE
    torch.testing.assert_close(Q2 @ R, A, rtol=0, atol=1e-4 * A.abs().amax().item())
