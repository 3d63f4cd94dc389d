"""The wide path (m < n) through the Triton kernels under the interpreter (issue 26)."""

import pytest
import torch

import adaptqr
from adaptqr import originals
from adaptqr.testing import check_geqrf

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
