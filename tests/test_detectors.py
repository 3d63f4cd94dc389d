"""CPU tests of adaptqr.detectors: probe, classifier thresholds, finish_tail, the low-rank flow.

The Triton kernels are compared with the torch fallback under TRITON_INTERPRET=1 in a
subprocess (the variable must be set before triton is imported).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from adaptqr.detectors import TAIL_BUDGET, classify, finish_tail, probe, route_codes
from adaptqr.testing import EXPECTED_N_ACTIVE, check_geqrf, generate

CODES = route_codes()
DENSE, LOWRANK, UPPER = CODES["dense"], CODES["lowrank"], CODES["upper"]
EPS32 = 2.0 ** -23


def colmajor(A: torch.Tensor) -> torch.Tensor:
    """A copy of A with column-major matrices, as the dispatcher holds H."""
    return A.mT.contiguous().mT


def lowrank_flow(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """The whole low-rank flow in torch ops: probe, factor the active prefix, finish_tail."""
    from adaptqr.paths.reference import factor_reference

    H = colmajor(A).clone()
    f = probe(H)
    classify(f)
    B, m, n = A.shape
    tau = torch.empty(B, min(m, n), dtype=A.dtype)
    factor_reference(H, tau, SimpleNamespace(features=f))
    finish_tail(H, tau, f["n_active"])
    return H, tau, f


# ------------------------------------------------------------------------------------ probe


def test_probe_features_match_float64_definitions():
    torch.manual_seed(0)
    A = torch.randn(4, 23, 17)
    A[1] = torch.triu(A[1])
    A[2, :, 11:] = 0
    A[3, 5:, :] = 0
    f = probe(colmajor(A))
    D = A.double()
    torch.testing.assert_close(f["col_norm1"].double(), D.abs().sum(1), rtol=1e-5, atol=0)
    torch.testing.assert_close(f["col_norm2"].double(), D.norm(dim=1), rtol=1e-5, atol=0)
    torch.testing.assert_close(f["col_maxabs"].double(), D.abs().amax(1), rtol=0, atol=0)
    torch.testing.assert_close(f["row_norm2"].double(), D.norm(dim=2), rtol=1e-5, atol=0)
    torch.testing.assert_close(f["norm1"].double(), D.abs().sum(1).amax(1), rtol=1e-5, atol=0)
    assert f["lower_zero"].tolist() == [False, True, False, False]
    # matrix 3: rows 5.. are zero, so the lower bandwidth is 4 (column 0, row 4).
    assert f["lower_bandwidth"][3].item() == 4
    assert f["lower_bandwidth"][1].item() == 0
    assert f["col_last_nz"][2, 11:].tolist() == [-1] * 6
    rn = D.norm(dim=2)
    expected_row_range = rn.amax(1) / torch.where(rn > 0, rn, math.inf).amin(1)
    torch.testing.assert_close(f["row_range"].double(), expected_row_range, rtol=1e-5, atol=0)
    assert not f["nonfinite"].any()
    for name, t in f.items():
        assert t.shape[0] == 4, name


@pytest.mark.parametrize("scale", [1e30, 1e-30, 1e-40])
def test_probe_norms_scaled_no_overflow_or_underflow(scale):
    torch.manual_seed(1)
    A = torch.randn(2, 33, 9, dtype=torch.float64)
    f = probe(colmajor((A * scale).float()))
    Af = (A * scale).float().double()  # what float32 holds (1e-40 is subnormal)
    for name, ref in (("col_norm2", Af.norm(dim=1)), ("row_norm2", Af.norm(dim=2))):
        got = f[name].double()
        assert torch.isfinite(got).all() and (got > 0).all(), name
        # float32 1e-40 keeps only ~6 significant bits
        torch.testing.assert_close(got, ref, rtol=1e-5 if scale > 1e-38 else 1e-2, atol=0)


def test_probe_nonfinite_gives_nan_norms_and_flags():
    A = torch.randn(3, 8, 8)
    A[0, 2, 5] = float("nan")
    A[1, 7, 0] = float("inf")
    f = probe(colmajor(A))
    assert f["nonfinite"].tolist() == [True, True, False]
    assert f["col_nonfinite"][0].tolist() == [j == 5 for j in range(8)]
    assert torch.isnan(f["col_norm2"][0, 5]) and torch.isnan(f["norm1"][0]) and torch.isnan(f["norm1"][1])
    assert torch.isnan(f["row_range"][:2]).all() and torch.isfinite(f["row_range"][2])


def test_probe_rejects_bad_input_naming_it():
    with pytest.raises(ValueError, match=r"\(4, 4\)"):
        probe(torch.zeros(4, 4))
    with pytest.raises(TypeError, match="int32"):
        probe(torch.zeros(1, 4, 4, dtype=torch.int32))
    with pytest.raises(TypeError, match="float64"):
        probe(torch.zeros(1, 4, 4, dtype=torch.float64), backend="triton")


def test_probe_empty_shapes():
    for shape in [(0, 4, 4), (2, 0, 3), (2, 3, 0)]:
        f = probe(torch.zeros(shape))
        assert f["n_active"].shape == (shape[0],)
        assert (f["n_active"] == 0).all()


_INTERP_SCRIPT = r"""
import torch
import adaptqr.detectors.probe  # noqa: F401  (module, not the function of the same name)
import sys
probe_mod = sys.modules["adaptqr.detectors.probe"]
from adaptqr.detectors import probe, finish_tail

def same(a, b, name):
    if a.dtype.is_floating_point:
        ok = torch.allclose(a, b, rtol=2e-6, atol=0, equal_nan=True)
    else:
        ok = torch.equal(a, b)
    assert ok, (name, a, b)

torch.manual_seed(0)
cases = []
for B, m, n in [(2, 32, 32), (1, 512, 512), (3, 40, 37), (2, 130, 70), (2, 20, 50), (1, 1, 1), (2, 129, 33)]:
    A = torch.randn(B, m, n)
    cases.append(A)
A = edge_batch(6)
cases.append(A)
A = torch.randn(2, 64, 48, dtype=torch.float16)
cases.append(A)

for min_programs in (probe_mod.MIN_PROGRAMS, 0):   # 16- and 32-column tiles
    probe_mod.MIN_PROGRAMS = min_programs
    for A in cases:
        H = A.mT.contiguous().mT
        ft = probe(H, backend="triton")
        fr = probe(H, backend="torch")
        assert ft.keys() == fr.keys()
        for k in fr:
            same(ft[k], fr[k], (tuple(A.shape), k))
        # a non-column-major (row-major) H gives the same features
        fs = probe(A.contiguous(), backend="triton")
        for k in fr:
            same(fs[k], fr[k], (tuple(A.shape), "rowmajor", k))

for A in cases[:-1]:
    B, m, n = A.shape
    kk = min(m, n)
    for nact in (torch.randint(0, kk + 1, (B,), dtype=torch.int32), torch.zeros(B, dtype=torch.int32),
                 torch.full((B,), kk, dtype=torch.int32)):
        H1 = A.mT.contiguous().mT.clone(); H2 = H1.clone()
        t1 = torch.randn(B, kk); t2 = t1.clone()
        finish_tail(H1, t1, nact, backend="triton")
        finish_tail(H2, t2, nact, backend="torch")
        assert torch.equal(H1.nan_to_num(), H2.nan_to_num()) and torch.equal(t1, t2), (A.shape, nact)
        # with a dropped tail and a zero suffix, each drawn independently of nact
        kept = torch.randint(0, A.shape[2] + 1, (B,), dtype=torch.int32)
        nz = torch.randint(0, A.shape[2] + 1, (B,), dtype=torch.int32)
        H1 = A.mT.contiguous().mT.clone(); H2 = H1.clone()
        finish_tail(H1, t1, nact, n_kept=kept, n_nonzero=nz, backend="triton")
        finish_tail(H2, t2, nact, n_kept=kept, n_nonzero=nz, backend="torch")
        assert torch.equal(H1.nan_to_num(), H2.nan_to_num()) and torch.equal(t1, t2), (A.shape, nact, kept)
print("OK")
"""


# Adversarial 48x48 matrices both interpreter scripts check: huge and tiny scales, upper
# triangular, zero, NaN, Inf with a negligible tail. Rows past 6 are left random.
_EDGE_BATCH = r"""
import torch

def edge_batch(B):
    A = torch.randn(B, 48, 48)
    A[0] *= 1e30
    A[1] *= 1e-30
    A[2] = torch.triu(A[2])
    A[3] = 0
    A[4, 7, 3] = float("nan")
    A[5, 40, 47] = float("-inf")
    A[5, :, 20:] *= 1e-9
    return A
"""


def _run_interpreted(script: str) -> None:
    """Run ``script`` (after ``_EDGE_BATCH``) in a subprocess under the Triton interpreter;
    it prints OK when its assertions held."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, "-c", _EDGE_BATCH + script], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("OK")


def test_triton_kernels_match_torch_fallback_under_interpreter():
    _run_interpreted(_INTERP_SCRIPT)


_ROUTE_SCRIPT = r"""
import math, torch
from adaptqr.detectors import classify, probe, route
from adaptqr.detectors.classify import TAIL_BUDGET
from adaptqr.testing import generate

torch.manual_seed(1)
cases = [torch.randn(B, m, n) for B, m, n in [(2, 32, 32), (3, 40, 37), (2, 130, 70), (2, 20, 50), (1, 1, 1),
                                              (2, 300, 300)]]
A = edge_batch(8)
A[6] = (torch.rand(48, 48) + 1) * 1e38  # finite entries, ||A||_1 overflows: nothing is negligible
A[7, :, 30:] = 0
A[7] = torch.triu(A[7])           # upper with a zero tail: upper wins
cases.append(A)
for kind in ("rankdef", "clustered", "upper", "mixed", "nearrank"):
    cases.append(generate(6, 64, 0, 7, kind, device="cpu"))
n, m = 40, 40
bound = TAIL_BUDGET * torch.finfo(torch.float32).eps * n / math.sqrt(m)
for ratio in (0.99, 1.01):        # a flat tail just under / just over the bound
    A = torch.randn(1, m, n)
    A[:, :, 30:] = 1.0
    A[:, :, 30:] *= ratio * bound * A.abs().sum(1).amax() / math.sqrt(m)
    cases.append(A)
A = torch.randn(2, 48, 48)        # subnormal tails: the scaled second pass of the route probe
A[0, :, 30:] = torch.randn(48, 18) * 1e-40
A[1, :, 40:] = 1e-39
cases.append(A)
sub = route(A.mT.contiguous().mT, backend="triton")[1]["n_active"].tolist()
assert sub == [30, 40], sub
from adaptqr.detectors.kernels.route_kernel import route_columns_kernel
H = A.mT.contiguous().mT
cn, fl = torch.empty(2, 2, 48), torch.empty(2, 2, 48, dtype=torch.int8)
route_columns_kernel[(2, 3)](H, 48, 48, H.stride(0), H.stride(2), cn[0], cn[1], fl[0], fl[1],
                             H, 0, 0, 0, BLOCK_N=16, BLOCK_M=32, COPY=False)
want = probe(H, backend="torch")["col_norm2"]
assert torch.allclose(cn[1], want, rtol=1e-5, atol=0), (cn[1][:, 28:], want[:, 28:])
assert torch.allclose(cn[0], A.abs().sum(1), rtol=1e-5, atol=0)
seen = set()
for A in cases:
    H = A.mT.contiguous().mT
    rt, ft = route(H, backend="triton")
    ref_f = probe(H, backend="torch")
    rr = classify(ref_f)
    assert torch.equal(rt, rr), (tuple(A.shape), rt, rr)
    assert torch.equal(ft["n_active"], ref_f["n_active"]), (tuple(A.shape), ft["n_active"], ref_f["n_active"])
    assert torch.equal(ft["n_nonzero"], ref_f["n_nonzero"]), (tuple(A.shape), ft["n_nonzero"], ref_f["n_nonzero"])
    seen.update(rt.tolist())
    # Loading the input on the way (src): the same routes, and H holds the input exactly.
    Hc = torch.empty_like(H)
    rs, fs = route(Hc, backend="triton", src=A)
    assert torch.equal(Hc.view(torch.int32), A.view(torch.int32)), tuple(A.shape)  # bits (NaN too)
    assert torch.equal(rs, rt), tuple(A.shape)
    assert all(torch.equal(fs[k], ft[k]) for k in ft), tuple(A.shape)
assert seen == {0, 1, 2}, seen
assert route(cases[6].mT.contiguous().mT, backend="triton")[1]["n_active"][6] == 48
print("OK")
"""


def test_route_kernel_matches_classify_of_probe_under_interpreter():
    _run_interpreted(_ROUTE_SCRIPT)


def test_route_torch_backend_is_classify_of_probe():
    from adaptqr.detectors import route

    A = torch.randn(4, 12, 12)
    A[0, :, 9:] = 0
    A[1] = torch.triu(A[1])
    H = A.mT.contiguous().mT
    routes, f = route(H)
    ref = probe(H)
    assert torch.equal(routes, classify(ref)) and torch.equal(f["n_active"], ref["n_active"])
    assert torch.equal(f["n_nonzero"], ref["n_nonzero"])
    assert routes.tolist() == [1, 2, 0, 0]


def test_n_nonzero_is_the_exactly_zero_suffix():
    # Exact zeros only: a column at 1e-40 (negligible, so past n_active) still counts;
    # a zero column inside the matrix does not end the suffix; NaN keeps every column.
    A = torch.randn(5, 10, 10)
    A[0, :, 7:] = 0
    A[1, :, 7:] = 0
    A[1, 3, 8] = 1e-40
    A[2, :, 2] = 0
    A[3] = 0
    A[4, :, 6:] = 0
    A[4, 0, 0] = float("nan")
    f = probe(A.mT.contiguous().mT)
    assert f["n_nonzero"].tolist() == [7, 9, 10, 0, 10]
    assert f["n_active"].tolist()[:2] == [7, 7]


def test_overflowing_norm_bound_keeps_every_column():
    A = (torch.rand(1, 16, 16) + 1) * 1e38  # finite entries, ||A||_1 = inf in float32
    f = probe(A.mT.contiguous().mT)
    assert torch.isinf(f["norm1"]).all()
    assert f["n_active"].tolist() == [16] and classify(f).tolist() == [0]


# ------------------------------------------------------------------------------- classifier


def _tail_matrix(n: int, t: int, ratio: float, seed: int = 0) -> torch.Tensor:
    """Random n x n matrix whose last t columns have 2-norm = ratio * the tail bound."""
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(1, n, n, generator=g)
    A[:, :, n - t:] = 0
    bound = probe(colmajor(A))["tail_bound"]  # unchanged by columns far below the max 1-norm
    expected = TAIL_BUDGET * EPS32 * math.sqrt(n) * A.abs().sum(1).amax().item()
    assert abs(bound.item() - expected) <= 1e-6 * expected
    tail = torch.randn(1, n, t, generator=g, dtype=torch.float64)
    tail = tail / tail.norm(dim=1, keepdim=True) * (ratio * bound.double())
    A[:, :, n - t:] = tail.float()
    return A


@pytest.mark.parametrize("n", [16, 64])
def test_threshold_edge_both_sides(n):
    t = n // 4
    below = probe(colmajor(_tail_matrix(n, t, 0.99)))
    above = probe(colmajor(_tail_matrix(n, t, 1.01)))
    assert below["n_active"].item() == n - t
    assert classify(below).item() == LOWRANK
    assert above["n_active"].item() == n
    assert classify(above).item() == DENSE


def test_only_a_suffix_counts():
    n = 16
    A = _tail_matrix(n, 6, 0.5)
    A[:, :, n - 3] *= 4.0  # 2x above the bound, inside the tail: columns after it still drop
    f = probe(colmajor(A))
    assert f["n_active"].item() == n - 2


def test_dropping_at_the_bound_stays_within_the_budget():
    """The bound is nearly attained: a big first column (tau = 0, Q1 = I) and flat tiny
    columns just under the bound lose almost exactly TAIL_BUDGET of scaled residual."""
    n = 64
    A = torch.zeros(1, n, n)
    A[0, 0, 0] = 3.0
    signs = torch.where(torch.randn(n, n - 1, generator=torch.Generator().manual_seed(3)) > 0, 1.0, -1.0)
    bound = TAIL_BUDGET * EPS32 * math.sqrt(n) * 3.0
    A[0, :, 1:] = signs * (0.999 * bound / math.sqrt(n))
    H, tau, f = lowrank_flow(A)
    assert f["n_active"].item() == 1
    res = check_geqrf(A, H, tau)
    assert res.worst_factor <= TAIL_BUDGET
    assert res.worst_factor >= 0.9 * TAIL_BUDGET  # the bound is tight: not overly cautious
    assert res.worst_orth <= 1.0


def test_upper_zero_nonfinite_and_rectangular():
    n = 12
    A = torch.randn(6, n, n)
    A[0] = torch.triu(A[0])
    A[1] = 0
    A[2, 3, 3] = float("nan")
    A[3] = torch.triu(A[3])
    A[3, 0, 0] = float("inf")  # non-finite beats upper: NaN/Inf propagate by the full factorization
    A[4, :, 8:] = 0
    A[4, 2, 9] = float("nan")  # non-finite beats lowrank too
    f = probe(colmajor(A))
    routes = classify(f)
    assert f["n_active"].tolist() == [0, 0, n, n, n, n]
    assert routes.tolist() == [UPPER, UPPER, DENSE, DENSE, DENSE, DENSE]
    assert routes.dtype == torch.int32 and f["n_active"].dtype == torch.int32

    tall = torch.randn(2, 20, 6)
    tall[0, :, 4:] = 0
    tall[1] = torch.triu(tall[1])
    ft = probe(colmajor(tall))
    assert ft["n_active"].tolist() == [4, 0]
    assert classify(ft).tolist() == [LOWRANK, UPPER]

    wide = torch.randn(2, 6, 20)
    wide[0, :, 10:] = 0  # beyond the 6 reflectors: nothing to skip
    wide[1, :, 4:] = 0
    fw = probe(colmajor(wide))
    assert fw["n_active"].tolist() == [6, 4]
    assert classify(fw).tolist() == [DENSE, LOWRANK]


def test_classify_computes_n_active_when_missing():
    A = torch.randn(2, 8, 8)
    A[1, :, 5:] = 0
    f = probe(colmajor(A))
    expected = f.pop("n_active")
    assert classify(f).tolist() == [DENSE, LOWRANK]
    assert torch.equal(f["n_active"], expected)


EXPECTED_ACTIVE = EXPECTED_N_ACTIVE


@pytest.mark.parametrize("n", [32, 64])
@pytest.mark.parametrize("case", sorted(EXPECTED_ACTIVE))
@pytest.mark.parametrize("cond", [0, 2])
def test_classes_on_generator_profiles(case, n, cond):
    A = generate(4, n, cond, 1000 + n, case, device="cpu")
    f = probe(colmajor(A))
    routes = classify(f)
    want = EXPECTED_ACTIVE[case](n)
    assert f["n_active"].tolist() == [want] * 4
    code = UPPER if case == "upper" else (LOWRANK if want < n else DENSE)
    assert routes.tolist() == [code] * 4


def test_mixed_batch_holds_several_classes():
    A = generate(40, 32, 2, 770001, "mixed", device="cpu")
    routes = classify(probe(colmajor(A)))
    assert {DENSE, LOWRANK} <= set(routes.tolist())


# ------------------------------------------------------------------------------ finish_tail


@pytest.mark.parametrize("seed,n_active,n_kept,n_nonzero", [
    (2, [0, 4, 7], None, None),              # no counts: rows below the diagonal only
    (3, [5, 4, 7], [5, 4, 7], [6, 7, 7]),    # N33: a tail dropped whole up to n_nonzero
])
def test_finish_tail_clears_exactly_the_tail(seed, n_active, n_kept, n_nonzero):
    # (the Triton kernel is checked against the torch form under the interpreter, _INTERP_SCRIPT)
    torch.manual_seed(seed)
    B, m, n = 3, 9, 7
    H0 = colmajor(torch.randn(B, m, n))
    tau0 = torch.randn(B, n)
    counts = {name: torch.tensor(c, dtype=torch.int32)
              for name, c in (("n_kept", n_kept), ("n_nonzero", n_nonzero)) if c is not None}
    H, tau = H0.clone(), tau0.clone()
    finish_tail(H, tau, torch.tensor(n_active, dtype=torch.int32), **counts)
    kept, nz = n_kept or [n] * B, n_nonzero or [n] * B
    for b in range(B):
        for j in range(n):
            assert tau[b, j] == (0.0 if j >= n_active[b] else tau0[b, j])
            for i in range(m):
                # dropped whole, below the diagonal past n_active; past n_nonzero untouched
                zero = kept[b] <= j < nz[b] or (n_active[b] <= j < nz[b] and i > j)
                assert H[b, i, j] == (0.0 if zero else H0[b, i, j]), (b, i, j)
    assert H.stride() == H0.stride()


def test_kept_columns_drops_only_a_square_or_tall_finite_tail():
    from adaptqr.detectors.classify import kept_columns

    torch.manual_seed(4)
    A = torch.randn(4, 12, 12)
    A[:, :, 8:] *= 1e-12          # a negligible tail on every matrix
    A[1, :, 10:] = 0              # ... ending in exact zeros
    A[2] = torch.triu(A[2])       # upper: returned as it is
    A[3, 0, 0] = float("nan")     # non-finite: nothing dropped
    f = probe(colmajor(A))
    assert f["n_active"].tolist() == [8, 8, 0, 12]
    assert f["n_nonzero"].tolist() == [12, 10, 12, 12]
    assert f["n_kept"].tolist() == [8, 8, 12, 12]
    assert kept_columns(f, 12, 12, drop=False).tolist() == [12, 10, 12, 12]
    # a wide matrix's columns past min(m, n) are R's: nothing dropped there
    fw = probe(colmajor(A[:, :8, :]))
    assert torch.equal(fw["n_kept"], fw["n_nonzero"])


def test_dropped_tail_is_zero_and_within_the_budget():
    # clustered-like: a tail at 4 eps32, dropped whole; the flow's result is zero there and
    # its scaled factor residual stays within TAIL_BUDGET of the dense factorization's.
    from adaptqr.paths.reference import factor_reference

    torch.manual_seed(5)
    A = torch.randn(3, 48, 48)
    A[:, :, 24:] *= 4 * 2.0 ** -23
    H = colmajor(A).clone()
    f = probe(H)
    classify(f)
    assert f["n_kept"].tolist() == [24] * 3
    tau = torch.empty(3, 48)
    factor_reference(H, tau, SimpleNamespace(features=f))
    finish_tail(H, tau, f["n_active"], n_kept=f["n_kept"], n_nonzero=f["n_nonzero"])
    assert (H[:, :, 24:] == 0).all() and (tau[:, 24:] == 0).all()
    Q = torch.linalg.householder_product(H.double(), tau.double())
    R = torch.triu(H.double())
    scale = 48 * 2.0 ** -23 * torch.linalg.matrix_norm(A.double(), ord=1)
    res = torch.linalg.matrix_norm(R - Q.mT @ A.double(), ord=1) / scale
    assert (res <= TAIL_BUDGET + 1.0).all(), res


def test_finish_tail_on_upper_is_a_noop_but_tau():
    A = colmajor(torch.triu(torch.randn(2, 6, 6)))
    H, tau = A.clone(), torch.ones(2, 6)
    finish_tail(H, tau, torch.zeros(2, dtype=torch.int32))
    assert torch.equal(H, A) and (tau == 0).all()


def test_finish_tail_rejects_bad_shapes_naming_them():
    H = colmajor(torch.randn(2, 5, 4))
    with pytest.raises(ValueError, match=r"\(2, 4\).*\(2, 5\)"):
        finish_tail(H, torch.zeros(2, 5), torch.zeros(2, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"\(3,\)"):
        finish_tail(H, torch.zeros(2, 4), torch.zeros(3, dtype=torch.int32))
    with pytest.raises(TypeError, match="float32"):
        finish_tail(H, torch.zeros(2, 4), torch.zeros(2))


# --------------------------------------------------------------------------- low-rank flow


@pytest.mark.parametrize("case", ["rankdef", "clustered", "upper", "mixed"])
@pytest.mark.parametrize("n", [32, 96])
def test_lowrank_flow_passes_the_bar(case, n):
    A = generate(6, n, 0, 4242 + n, case, device="cpu")
    A_before = A.clone()
    H, tau, f = lowrank_flow(A)
    assert torch.equal(A, A_before)
    res = check_geqrf(A, H, tau)
    assert res.passes_bar, (res.worst_factor, res.worst_orth, res.error)
    na = f["n_active"]
    cols = torch.arange(min(A.shape[1:]))
    assert (tau[cols >= na[:, None]] == 0).all()
    if case in ("rankdef", "clustered"):
        assert (na < n).all()
    if case == "upper":
        assert (na == 0).all() and torch.equal(H, A)


def test_lowrank_flow_matches_full_factorization_on_exact_zero_tail():
    """rankdef: the dropped part is exactly zero, so (H, tau) equals the full reference."""
    from adaptqr.paths.reference import geqrf_reference

    A = generate(3, 32, 0, 7, "rankdef", device="cpu")
    H, tau, _ = lowrank_flow(A)
    H_full, tau_full = geqrf_reference(A)
    torch.testing.assert_close(H, H_full, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(tau, tau_full, rtol=1e-5, atol=1e-5)


_FP16_SCRIPT = r"""
import importlib, json, os
os.environ["TRITON_INTERPRET"] = "1"
import torch
from adaptqr.detectors import route
from adaptqr.testing import generate
C = importlib.import_module("adaptqr.detectors.classify")
parts = [generate(2, 512, 2, 5, "dense", "cpu"), generate(1, 512, 0, 6, "rowscale", "cpu"),
         generate(1, 512, 0, 7, "rankdef", "cpu"), generate(1, 512, 2, 8, "dense", "cpu") * 1e25,
         generate(1, 512, 2, 9, "dense", "cpu"), generate(1, 512, 2, 10, "rankdef", "cpu"),
         generate(1, 512, 2, 11, "dense", "cpu")]
A = torch.cat(parts)
A[5, 4, 5] = float("nan")
A[7, :, 480:] *= 1e-30
H = torch.empty_strided(A.shape, (512 * 512, 1, 512))
routes, f = route(H, backend="triton", src=A)
a = A.double().nan_to_num(0.0)
ref = C.fp16_scales(a.abs().sum(1).float(), a.norm(dim=1).float(), routes, f["n_active"],
                    f["n_kept"], 512, f["prescale"])
print(json.dumps({"kernel": f["fp16_scale"].tolist(), "ref": ref.tolist(),
                  "torch": route(H, backend="torch")[1]["fp16_scale"].tolist()}))
"""


def test_fp16_scales_route_kernel_and_reference():
    # The route kernel's FP16 scales (under the interpreter) against classify.fp16_scales:
    # dense cond=2 at n = 512 takes the route (a power of two), rowscale, rankdef cond=0
    # (its estimate ~17) and a NaN matrix do not, 1e25 times a dense one does at the scale
    # of its prescaled copy. Routes composed (EXPERIMENTS.md N31, N33): rankdef cond=2
    # (n_active == n_nonzero = 384) takes it, and so does dense cond=2 with a negligible
    # nonzero tail (n_active < n_nonzero), dropped whole (n_kept == n_active).
    out = json.loads(subprocess.run([sys.executable, "-c", _FP16_SCRIPT], capture_output=True,
                                    text=True, check=True, env=dict(os.environ, TRITON_INTERPRET="1")
                                    ).stdout.splitlines()[-1])
    k, ref = out["kernel"], out["ref"]
    assert [s > 0 for s in k] == [True, True, False, False, True, False, True, True], k
    # not the NaN matrix: nan_to_num'd for the reference
    assert k[:5] == ref[:5] and k[6:] == ref[6:], (k, ref)
    assert out["torch"] == k, out
    for s in k[:2] + k[6:]:
        assert s == 2.0 ** round(math.log2(s)) and 4096 <= s * 22.6 <= 2 * 16384


def test_fp16_scales_off_below_min_n_and_by_config(monkeypatch):
    from adaptqr.detectors import route

    A = torch.randn(2, 64, 64)
    assert "fp16_scale" not in route(A.mT.contiguous().mT, backend="torch")[1]
    monkeypatch.setenv("ADAPTQR_FP16", "0")
    A = torch.randn(2, 512, 512) * torch.logspace(0, -2, 512)
    assert "fp16_scale" not in route(A.mT.contiguous().mT, backend="torch")[1]
    monkeypatch.delenv("ADAPTQR_FP16")
    assert (route(A.mT.contiguous().mT, backend="torch")[1]["fp16_scale"] > 0).all()


def test_fp16_route_range_and_its_knob():
    import importlib

    from adaptqr import config
    C = importlib.import_module("adaptqr.detectors.classify")
    assert C.fp16_est_scale(4096, 4096) > 0.0  # offered up to FP16_MAX_N = 4096 (N18)
    assert C.fp16_est_scale(4097, 4097) == 0.0 and C.fp16_est_scale(4000, 4096) == 0.0  # m < n
    assert C.fp16_est_scale(256, 256) == 0.0  # below FP16_MIN_N
    with config.experiment(fp16_max_n=2048):
        assert C.fp16_est_scale(4096, 4096) == 0.0 and C.fp16_est_scale(2048, 2048) > 0.0
    with config.experiment(fp16_max_n=1024):
        assert C.fp16_est_scale(2048, 2048) == 0.0
    with pytest.raises(ValueError, match="fp16_max_n"):
        with config.experiment(fp16_max_n=-3):
            pass


def test_prescale_exponents_rule():
    # Inside [2^-2, 2^12): 0 (results unchanged); outside: largest column norm to [16, 32);
    # subnormal norms, an overflowed norm (inf: counted as 2^128), zero and non-finite
    # matrices.
    from adaptqr.detectors.classify import prescale_exponents

    n2 = torch.tensor([0.25, 2.0 ** 11.9, 2.0 ** 12, 0.24, 3e-40, float("inf"), 0.0, 1e30, 1e-30])
    finite = torch.tensor([True] * 7 + [False, True])
    e = prescale_exponents(n2, finite).tolist()
    assert e == [0, 0, -8, 7, 136, -124, 0, 0, 104], e
    for x, k in zip(n2[[2, 3, 4, 8]].tolist(), (-8, 7, 136, 104)):
        assert 16.0 <= x * 2.0 ** k < 32.0


def test_prescale_round_trip_keeps_v_and_tau():
    # geqrf of A * 2^e, R scaled back: the same (H, tau) as geqrf of A (exactly, powers of two)
    from adaptqr.paths.prescale import prescale, unscale

    A = torch.randn(3, 9, 7, dtype=torch.float64)
    e = torch.tensor([0, 70, -90], dtype=torch.int32)
    H = A.mT.contiguous().mT.clone()
    prescale(H, e)
    Hs, tau_s = torch.geqrf(H)
    Hs = Hs.mT.contiguous().mT
    unscale(Hs, e)
    H0, tau0 = torch.geqrf(A)
    torch.testing.assert_close(Hs, H0, rtol=1e-12, atol=0)
    torch.testing.assert_close(tau_s, tau0, rtol=1e-12, atol=0)


def test_route_reports_prescale():
    from adaptqr.detectors import route

    A = torch.randn(3, 16, 16)
    A[1] *= 1e-30
    A[2] = (A[2].double() * 1e-40).float()
    H = A.mT.contiguous().mT.clone()
    _, f = route(H, backend="torch")
    e = f["prescale"].tolist()
    assert e[0] == 0 and e[1] > 90 and e[2] > 125, e
