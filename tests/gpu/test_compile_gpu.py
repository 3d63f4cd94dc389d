"""Issue 26 on the GPU: adaptqr.geqrf and adaptqr.linalg.qr inside torch.compile
(fullgraph=True, and mode="reduce-overhead", whose CUDA graphs capture the op's kernels),
on every benchmark shape, at the half gate, with no graph break. (Speed: adaptqr bench, not
here.)"""

import pytest
import torch

import adaptqr
from adaptqr.testing import bench_cases, case_name, check_geqrf, check_qr, generate

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

CASES = bench_cases()


def _step(x):
    a, tau = adaptqr.geqrf(x)
    Q, R = adaptqr.linalg.qr(x)
    return a, tau, Q, R


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
@pytest.mark.parametrize("c", CASES, ids=[case_name(c).replace(" ", "_") for c in CASES])
def test_compiled_step_at_the_half_gate(c, mode):
    A = generate(c["batch"], c["n"], c["cond"], c["seed"], c["case"], device="cuda")
    f = torch.compile(_step, fullgraph=True, mode=mode)
    for _ in range(3 if mode else 1):  # reduce-overhead records, then replays
        a, tau, Q, R = f(A)
    torch.cuda.synchronize()
    assert check_geqrf(A, a, tau).passes_bar
    assert check_qr(A, Q, R).passes_bar


def test_no_graph_break_on_cuda():
    A = torch.randn(8, 256, 256, device="cuda")
    assert torch._dynamo.explain(_step)(A).graph_break_count == 0
