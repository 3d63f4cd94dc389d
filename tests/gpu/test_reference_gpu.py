"""The reference path on every qr_v2 test case at full batch, on the GPU, at the half-gate bar.

Run with ``pytest -s tests/gpu/test_reference_gpu.py`` to see the worst residuals per case.
"""

import pytest
import torch

from adaptqr.paths.reference import geqrf_reference
from adaptqr.testing import case_name, check_geqrf, generate
from adaptqr.testing import test_cases as qr_v2_test_cases

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

CASES = qr_v2_test_cases()


def _run(c):
    A = generate(c["batch"], c["n"], c["cond"], c["seed"], c["case"], device="cuda")
    A0 = A.clone()
    H, tau = geqrf_reference(A)
    assert torch.equal(A, A0), "the reference path modified its input"
    assert H.stride()[-2:] == (1, c["n"]) and tau.is_contiguous()
    return check_geqrf(A, H, tau)


@pytest.mark.parametrize("c", CASES, ids=[f"{i:02d}-{case_name(c)}".replace(" ", "_") for i, c in enumerate(CASES)])
def test_reference_on_qr_v2_case(c):
    res = _run(c)
    print(f"\n{case_name(c)}: {res.summary}")
    assert res.passes_bar, f"{case_name(c)}: {res.summary}"


def test_reference_with_tf32_allowed_globally():
    # The path must not trust a TF32 global flag a user may have set: it switches its
    # matmuls to float64 instead. Set and restore the flag only inside this test.
    c = {"batch": 16, "n": 512, "cond": 2, "seed": 32530, "case": "mixed"}
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        res = _run(c)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    print(f"\n{case_name(c)} with allow_tf32=True: {res.summary}")
    assert res.passes_bar, res.summary
