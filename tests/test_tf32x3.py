"""adaptqr.tf32x3 on the CPU: the split is exact and TF32-shaped, and the products
(plain float32 products off the GPU) are the float32 ones."""

from __future__ import annotations

import pytest
import torch

from adaptqr import tf32x3


def test_split_is_exact_and_the_head_fits_tf32():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1000, generator=g) * torch.logspace(-30, 30, 1000)
    x = torch.cat([x, torch.tensor([0.0, -0.0, 1e-40, -3e-39, 3e38, 1.0 + 2.0 ** -23])])
    h, t = tf32x3.split(x)
    assert torch.equal(h + t, x)
    assert not (h.view(torch.int32) & ((1 << 13) - 1)).any()
    # The tail is what the head could not hold: below 2^-10 of x.
    big = x.abs() > 1e-30
    assert (t[big].abs() <= x[big].abs() * 2.0 ** -10).all()


def test_split_reads_strided_views():
    x = torch.randn(6, 8).mT[1:, ::2]
    h, t = tf32x3.split(x)
    assert torch.equal(h + t, x)


@pytest.mark.parametrize("B,n,k,p", [(2, 40, 24, 8), (1, 5, 300, 7)])
def test_products_are_float32_products(B, n, k, p):
    g = torch.Generator().manual_seed(B * n + k)
    a, b = torch.randn(B, n, k, generator=g), torch.randn(B, k, p, generator=g)
    want = a.double() @ b.double()
    tol = 4 * k * torch.finfo(torch.float32).eps * (a.abs().double() @ b.abs().double())
    assert ((tf32x3.matmul(a, b).double() - want).abs() <= tol).all()
    c = torch.randn(B, n, p, generator=g)
    c0 = c.clone()
    out = tf32x3.sub_matmul_(c, a, b)
    assert out is c
    assert ((c.double() - (c0.double() - want)).abs() <= tol + 1e-6).all()


def test_products_leave_the_precision_setting_as_it_was():
    was = torch.get_float32_matmul_precision()
    a = torch.randn(1, 4, 4)
    tf32x3.matmul(a, a)
    tf32x3.sub_matmul_(a.clone(), a, a)
    assert torch.get_float32_matmul_precision() == was


def test_matmul_takes_any_batch_dims():
    # blocked_householder_product's V^T V and V T are 4-D: (B, panels, rows, nb).
    g = torch.Generator().manual_seed(11)
    a, b = torch.randn(2, 3, 9, 5, generator=g), torch.randn(2, 3, 5, 4, generator=g)
    got = tf32x3.matmul(a.mT.mT, b)
    torch.testing.assert_close(got.double(), a.double() @ b.double(), rtol=0, atol=1e-5)

