"""The qr_v2 harness: input generator, acceptance check and case lists (spec/qr_v2.md).

Example::

    >>> import torch
    >>> from adaptqr.testing import generate, check_geqrf, test_cases, case_name
    >>> A = generate(4, 32, cond=1, seed=0, device="cpu")
    >>> check_geqrf(A, *torch.geqrf(A)).passes_bar
    True
    >>> case_name(test_cases()[0])
    '20x32 dense cond=1'
"""

from adaptqr.testing.cases import bench_cases, case_name, load_cases, test_cases
from adaptqr.testing.check import CheckResult, check_geqrf, check_householder_product, check_qr
from adaptqr.testing.determinism import deterministic
from adaptqr.testing.generators import EXPECTED_N_ACTIVE, generate, inputs_per_case, make_inputs

__all__ = [
    "EXPECTED_N_ACTIVE",
    "generate", "make_inputs", "inputs_per_case",
    "check_geqrf", "check_qr", "check_householder_product", "CheckResult",
    "test_cases", "bench_cases", "load_cases", "case_name", "deterministic",
]
