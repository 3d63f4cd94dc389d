"""The prescaling kernel (paths/kernels/scale.py) under the interpreter, against the torch
ops of paths/prescale.py: the whole matrix, then R alone, with exponents of both signs and
beyond float32's exponent range for one factor (two products), and 0 (untouched)."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.interpret


def test_scale_kernel_matches_torch_ops():
    from adaptqr.paths import prescale as ps
    from adaptqr.paths.kernels.scale import scale_kernel

    B, m, n = 4, 37, 70
    A = torch.randn(B, m, n)
    A[1] = (A[1].double() * 1e-40).float()
    e = torch.tensor([0, 140, -90, 3], dtype=torch.int32)
    for sign, upper in ((1, False), (-1, True)):
        H1 = A.mT.contiguous().mT.clone()
        H2 = H1.clone()
        scale_kernel[(B, 2)](H1.mT, e, m, n, SIGN=sign, UPPER=upper, BLOCK_C=ps.BLOCK_C,
                             BLOCK_M=ps.BLOCK_M)
        ps._apply(H2, e, sign, upper)  # CPU: the torch-ops branch
        assert torch.equal(H1, H2), (sign, upper)
        assert torch.equal(H1[0], A[0])  # e = 0: not touched
