"""Issue 28 on the GPU: a SOAP-shaped list of statistics (60 of 768x768, 12 of 3072x3072, in
parameter order) through adaptqr.foreach_geqrf / linalg.foreach_qr, each member at the half
gate of its own check."""

import pytest
import torch

import adaptqr
from adaptqr.testing import check_geqrf, check_qr

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def _statistics():
    g = torch.Generator(device="cuda").manual_seed(2828)
    out = []
    for block in range(6):
        for _ in range(10):
            x = torch.randn(768, 64, device="cuda", generator=g)
            out.append(x @ x.mT)           # rank-deficient PSD, as Shampoo/SOAP statistics
        if block % 3 == 0:
            for _ in range(6):
                out.append(torch.randn(3072, 3072, device="cuda", generator=g))
    return out


def test_foreach_geqrf_members_pass():
    xs = _statistics()
    copies = [x.clone() for x in xs]
    outs = adaptqr.foreach_geqrf(xs)
    for x, c, o in zip(xs, copies, outs):
        assert torch.equal(x, c)
        res = check_geqrf(x.unsqueeze(0), o.a.unsqueeze(0), o.tau.unsqueeze(0))
        assert res.passes_bar, res.summary


def test_foreach_qr_members_pass():
    xs = _statistics()[:24]
    for x, o in zip(xs, adaptqr.linalg.foreach_qr(xs)):
        res = check_qr(x.unsqueeze(0), o.Q.unsqueeze(0), o.R.unsqueeze(0))
        assert res.passes_bar, res.summary
