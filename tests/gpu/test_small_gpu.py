"""H37's ``small`` path on the GPU (named: it is not chosen automatically yet): every matrix
at the half gate against the public check, LAPACK's conventions (tau against float64's),
the caller's strided and expanded tensors read where they lie, the input untouched, a
user's CUDA graph capture, and the degenerate-input suite through it."""

from __future__ import annotations

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.variant]
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA device", allow_module_level=True)

import adaptqr  # noqa: E402
from adaptqr import originals  # noqa: E402
from adaptqr.paths.kernels import geqrf_small_cuda  # noqa: E402
from adaptqr.testing import check_geqrf  # noqa: E402

if not geqrf_small_cuda.available():
    pytest.skip("needs cupy", allow_module_level=True)

from degenerate_suite import property_test  # noqa: E402


def _id(shape):
    return "x".join(str(s) for s in shape)


@pytest.mark.parametrize("shape", [(20, 32, 32), (640, 32, 32), (40, 64, 64), (7, 50, 30),
                                   (3, 20, 20), (2, 3, 2), (5, 40, 1), (4, 10, 30), (3, 32, 64),
                                   (2, 3, 33, 33), (1, 64, 17)], ids=_id)
def test_small_path_at_the_half_gate(shape):
    g = torch.Generator(device="cuda").manual_seed(7)
    A = torch.randn(*shape, device="cuda", generator=g)
    keep = A.clone()
    a, tau = adaptqr.geqrf(A, path="small")
    assert torch.equal(A, keep)
    ref_a, ref_tau = originals.geqrf(A)
    assert a.stride() == ref_a.stride() and tau.shape == ref_tau.shape
    m, n = shape[-2:]
    r = check_geqrf(A.reshape(-1, m, n), a.reshape(-1, m, n), tau.reshape(-1, min(m, n)))
    assert r.passes_bar, r.summary
    # LAPACK's conventions: tau as float64 geqrf's, to float32's conditioning (LAPACK's own
    # float32 tau is 3.5e-5 off it on 640 random 32 x 32 matrices; a wrong sign or scale
    # is off by 0.1 or more).
    tau64 = originals.geqrf(A.double().cpu())[1]
    torch.testing.assert_close(tau.double().cpu(), tau64, rtol=0, atol=2e-4)


def test_small_path_reads_strided_inputs_as_they_are():
    A = torch.randn(12, 24, 24, device="cuda")
    ref = adaptqr.geqrf(A[::2].contiguous(), path="small")
    for view in (A[::2], A.mT.contiguous().mT[::2]):
        a, tau = adaptqr.geqrf(view, path="small")
        assert torch.equal(a, ref[0]) and torch.equal(tau, ref[1])
    one = torch.randn(1, 24, 24, device="cuda")
    a, tau = adaptqr.geqrf(one.expand(4, 24, 24), path="small")
    assert all(torch.equal(a[i], a[0]) for i in range(4))


def test_small_path_in_a_users_graph():
    A = torch.randn(20, 32, 32, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        adaptqr.geqrf(A, path="small")
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ga, gtau = adaptqr.geqrf(A, path="small")
    A.copy_(torch.randn(20, 32, 32, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    a, tau = adaptqr.geqrf(A, path="small")
    assert torch.equal(ga, a) and torch.equal(gtau, tau)


# 60 examples: the variant call's test step has 150 s for several candidates' tests (the
# host shim's test runs every structure at n = 24 and 64 on the CPU).
test_small_path_degenerate = property_test((4, 16, 32, 48, 64), (1, 3, 20), "cuda",
                                           path="small", examples=60, follow_env=False)
