"""The host shim's float16 and WMMA stand-ins (:mod:`adaptqr.testing.cuda_host`), which
let CUDA C kernels on tensor cores run on the CPU: conversions bit for bit as torch's
(round to nearest even, subnormals, overflow, NaN), and a WMMA product with A row-major and
B column-major or row-major, against torch on the same float16 operands."""

from __future__ import annotations

import pytest
import torch

from adaptqr.testing import cuda_host

pytestmark = pytest.mark.skipif(not cuda_host.available(), reason="needs a C++20 compiler")

SRC = r"""
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void kern(const float* x, float* y, const float* A, const float* Bc,
                                float* C, int nx)
{
    extern __shared__ __align__(16) float sm[];
    for (int i = threadIdx.x; i < nx; i += 64) y[i] = __half2float(__float2half_rn(x[i]));
    __half* Ah = (__half*)sm;            /* A, 16 x 16 row-major */
    __half* Bch = Ah + 256;              /* B, 16 x 32 column-major (ld 16) */
    __half* Brh = Bch + 512;             /* B, 16 x 32 row-major (ld 32) */
    for (int i = threadIdx.x; i < 256; i += 64) Ah[i] = __float2half_rn(A[i]);
    for (int i = threadIdx.x; i < 512; i += 64) {
        Bch[i] = __float2half_rn(Bc[i]);
        Brh[(i % 16) * 32 + i / 16] = Bch[i];
    }
    __syncthreads();
    const int w = threadIdx.x / 32;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.5f);
    wmma::load_matrix_sync(a, Ah, 16);
    if (w == 0) {  /* columns 0-15 of C from the column-major copy */
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
        wmma::load_matrix_sync(b, Bch, 16);
        wmma::mma_sync(c, a, b, c);
        wmma::store_matrix_sync(C, c, 32, wmma::mem_row_major);
    } else {       /* columns 16-31 from the row-major copy, stored column-major */
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
        wmma::load_matrix_sync(b, Brh + 16, 32);
        wmma::mma_sync(c, a, b, c);
        wmma::store_matrix_sync(C + 512, c, 16, wmma::mem_col_major);
    }
}
"""

MAIN = r"""
int main(int argc, char** argv) {
    const int nx = std::atoi(argv[1]);
    std::vector<float> y = read_floats(argv[2], nx), C = read_floats(argv[3], 768);
    std::vector<float> x = read_floats(argv[4], nx);
    std::vector<float> A = read_floats(argv[5], 256), Bc = read_floats(argv[6], 512);
    gridDim = {1, 1, 1};
    run_grid<64>(4 * 1280, [&] { kern(x.data(), y.data(), A.data(), Bc.data(), C.data(), nx); });
    write_floats(argv[2], y);
    write_floats(argv[3], C);
    return 0;
}
"""


def test_half_conversions_and_wmma_match_torch():
    g = torch.Generator().manual_seed(3)
    specials = torch.tensor([0.0, -0.0, 1.0, 65504.0, 65519.0, 65520.0, 1e6, -1e6, 2.0 ** -14,
                             2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -26, 1e-30,
                             1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, float("inf"),
                             float("-inf"), float("nan"), 6.1e-5, -3.3e-6])
    scale = 10.0 ** torch.randint(-8, 5, (200,), generator=g)
    x = torch.cat([specials, torch.randn(200, generator=g) * scale])
    y = torch.zeros_like(x)
    A = torch.randn(16, 16, generator=g)
    B = torch.randn(16, 32, generator=g)
    C = torch.zeros(768)
    exe = cuda_host.build(SRC, MAIN, ())
    cuda_host.run(exe, [x.numel()], (y, C, x, A, B.mT.contiguous()), [], 2)
    ref = x.half().float()
    assert torch.equal(torch.isnan(y), torch.isnan(ref))
    assert torch.equal(y[~torch.isnan(y)], ref[~torch.isnan(ref)])
    want = 0.5 + A.half().float() @ B.half().float()
    torch.testing.assert_close(C[:512].view(16, 32)[:, :16], want[:, :16], rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(C[512:].view(16, 16).mT, want[:, 16:], rtol=1e-6, atol=1e-5)
