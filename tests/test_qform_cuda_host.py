"""The CUDA C Q-formation kernel (paths/kernels/qform_cuda.py, EXPERIMENTS.md QF20, QF21) on the
CPU, through :mod:`adaptqr.testing.cuda_host` (its source under a host-thread shim: the
kernel's indexing, masks, chunking and barriers run as written; the GPU variant test runs
it on the device). Every panel's T here is the blocked route's ``panel_t`` (larft's);
tests/interpret/test_qform_interpret.py takes the production T kernel's."""

from __future__ import annotations

import pytest
import torch

from adaptqr import originals
from adaptqr.qform import panel_t, reflector_panels
from adaptqr.testing import cuda_host

pytestmark = pytest.mark.skipif(not cuda_host.available(), reason="needs a C++20 compiler")


def _kernel_q(h, tau, bn):
    """Q by the kernel: ``h`` ``(B, m, n)`` float32 geqrf output, ``tau`` ``(B, k)``."""
    B, m, n = h.shape
    k = tau.shape[-1]
    n_tw = -(-k // 32)
    T = panel_t(*reflector_panels(h.double(), tau.double(), 32)).float()
    Qt = torch.full((B, n, m), float("nan"))
    cuda_host.qform_launch(h.transpose(-2, -1).contiguous(), T, Qt, m, n, k, n_tw, bn)
    return Qt.mT


@pytest.mark.parametrize("bn", [32, 16])
@pytest.mark.parametrize("shape,k", [
    ((2, 72, 72), None),     # square: three panels, the last partial; strips of both widths
    ((1, 300, 40), None),    # tall: three chunks of V, the last partial
    ((2, 92, 50), 20),       # k < n: the columns past k are the identity's, reflected
    ((1, 36, 36), 0),        # k = 0: the identity
])
def test_emulated_kernel_equals_torch(shape, k, bn):
    g = torch.Generator().manual_seed(20)
    h, tau = originals.geqrf(torch.randn(*shape, generator=g))
    if k is not None:
        tau = tau[..., :k].contiguous()
    got = _kernel_q(h, tau, bn)
    want = originals.householder_product(h.double(), tau.double())
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got.double(), want, rtol=0, atol=2e-5)


def test_rows_not_a_multiple_of_four_are_refused():
    # The kernel reads rows four at a time; Q formation pads them to 16 (QFORM_ROW_ALIGN).
    from adaptqr.paths.kernels import qform_cuda

    assert qform_cuda.fits(512, 32) and qform_cuda.fits(1024, 16)
    assert not qform_cuda.fits(510, 32) and not qform_cuda.fits(512, 8)
