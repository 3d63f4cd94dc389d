"""Issue 22's degenerate inputs on the GPU, through the public API (dispatcher, probes,
routes, graphs). Sizes and batches select every kernel: the small path's (n <= 48 in
batches of at most 64), householder's fused small kernel (n = 64; n = 32 in batches of 140),
register panels (one warp's T kernel from 132 matrices on), the row-split panel (few large
matrices), the FP16 route (512 <= n <= 2048, the dense neighbours) and the low-rank route
(the rank-deficient structures). ``DEGENERATE_EXAMPLES=2000`` on the H200."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA device", allow_module_level=True)

from degenerate_suite import check_batch, property_test  # noqa: E402

test_small_batches = property_test((16, 32, 64, 96, 176, 352, 512, 1024, 2048), (1, 2, 3, 8),
                                   "cuda", examples=200)
# Batches of 140 (the one-warp T kernel): 20 examples whatever DEGENERATE_EXAMPLES says.
test_throughput_batches = property_test((32, 96, 176), (140,), "cuda", examples=20, follow_env=False)
# Issue 25: the same structures through linalg.qr (the dispatcher, then the Triton Q
# formation: resident short columns, chunked strips, narrow strips for small batches).
# Batches of 1-8 take the narrow strips, of 140 the 64-column ones.
test_linalg_qr_batches = property_test((16, 64, 176, 512, 1024), (1, 3, 8), "cuda",
                                       examples=200, follow_env=False, op="qr")
test_linalg_qr_throughput = property_test((16, 96, 176), (140,), "cuda", examples=20,
                                          follow_env=False, op="qr")
# Q in wide panels (16x1024 and 2x2048; QF25, QF28) and the strip kernel from V's halves
# (2x1024; QF29).
test_linalg_qr_wide = property_test((1024, 2048), (2, 16), "cuda", examples=12,
                                    follow_env=False, op="qr")


@pytest.mark.parametrize("n", [16, 96, 512, 2048])
@pytest.mark.parametrize("structure", ["repeated", "subnormal", "huge", "nan"])
def test_issue_cases(structure, n):
    # The issue's reports: torch.ones-like repeated columns, randn * 1e-40, near the top.
    check_batch(structure, n, 2, 0, n, "cuda")
