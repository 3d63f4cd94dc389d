"""adaptqr.geqrf against torch.geqrf on the CPU: results, layout, errors, out=, autograd."""

from __future__ import annotations

import warnings

import pytest
import torch

import adaptqr

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
SHAPES = [
    (4, 4),
    (5, 3),
    (3, 5),
    (3, 4, 4),
    (3, 6, 2),
    (2, 3, 4, 4),
    (2, 3, 2, 5),
    (1, 1),
    (7, 1),
    (1, 7),
]


def _rand(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        re = torch.randn(shape, generator=g, dtype=torch.float64)
        im = torch.randn(shape, generator=g, dtype=torch.float64)
        return torch.complex(re, im).to(dtype)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def _same(ours, ref):
    assert type(ours).__name__ == "geqrf" and ours.a is ours[0] and ours.tau is ours[1]
    for x, y in zip(ours, ref):
        assert x.shape == y.shape
        assert x.dtype == y.dtype
        assert x.device == y.device
        assert x.stride() == y.stride(), (x.stride(), y.stride())
        torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_torch(shape, dtype):
    A = _rand(shape, dtype)
    _same(adaptqr.geqrf(A), torch.geqrf(A))


def test_input_not_modified_and_not_aliased():
    A = _rand((3, 5, 5), torch.float32)
    A0 = A.clone()
    a, tau = adaptqr.geqrf(A)
    assert torch.equal(A, A0)
    assert a.untyped_storage().data_ptr() != A.untyped_storage().data_ptr()


@pytest.mark.parametrize(
    "make",
    [
        lambda: _rand((3, 4, 5), torch.float32).mT,  # transposed
        lambda: _rand((6, 5, 5), torch.float64)[::2],  # strided batch
        lambda: _rand((4, 10), torch.float32)[:, ::2],  # strided columns
        lambda: _rand((1, 4, 4), torch.float32).expand(3, 4, 4),  # stride-0 batch
        lambda: _rand((2, 3, 4, 4), torch.complex64).permute(1, 0, 3, 2),
    ],
    ids=["transposed", "strided-batch", "strided-cols", "expanded", "permuted"],
)
def test_non_contiguous_inputs(make):
    A = make()
    A0 = A.clone()
    _same(adaptqr.geqrf(A), torch.geqrf(A))
    assert torch.equal(A, A0)


@pytest.mark.parametrize("shape", [(0, 4, 3), (2, 0, 3), (2, 4, 0), (0, 0), (3, 0), (0, 3), (2, 0, 4, 4)], ids=str)
def test_empty(shape):
    A = torch.randn(shape)
    ours, ref = adaptqr.geqrf(A), torch.geqrf(A)
    for x, y in zip(ours, ref):
        assert x.shape == y.shape and x.dtype == y.dtype and x.numel() == 0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_nonfinite_propagates(bad):
    A = _rand((3, 4, 4), torch.float32)
    A[1, 2, 1] = bad
    ours, ref = adaptqr.geqrf(A), torch.geqrf(A)
    assert not torch.isfinite(ours.a[1]).all()
    assert torch.isfinite(ours.a[0]).all() and torch.isfinite(ours.a[2]).all()
    torch.testing.assert_close(ours.a, ref.a, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(ours.tau, ref.tau, rtol=0, atol=0, equal_nan=True)


# ------------------------------------------------------------------------------------------
# Errors: same types as torch, messages naming the shape / dtype / device
# ------------------------------------------------------------------------------------------


def _torch_error(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        return type(exc)
    return None


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda: torch.randn(3), "(3,)"),
        (lambda: torch.tensor(1.0), "()"),
        (lambda: torch.ones(3, 3, dtype=torch.int32), "int32"),
        (lambda: torch.ones(3, 3, dtype=torch.int64), "int64"),
        (lambda: torch.ones(3, 3, dtype=torch.bool), "bool"),
        (lambda: torch.ones(3, 3, dtype=torch.float16), "float16"),
        (lambda: torch.ones(2, 3, 3, dtype=torch.bfloat16), "bfloat16"),
        (lambda: torch.ones(3, 3, device="meta"), "meta"),
    ],
    ids=["1d", "0d", "int32", "int64", "bool", "half", "bf16", "meta"],
)
def test_bad_input_errors(make, needle):
    A = make()
    expected = _torch_error(lambda: torch.geqrf(A))
    assert expected is not None
    with pytest.raises(expected) as info:
        adaptqr.geqrf(A)
    assert needle in str(info.value)


@pytest.mark.parametrize("x", [[[1.0, 2.0], [3.0, 4.0]], None, 3.0])
def test_not_a_tensor(x):
    assert _torch_error(lambda: torch.geqrf(x)) is TypeError
    with pytest.raises(TypeError, match="Tensor"):
        adaptqr.geqrf(x)


# ------------------------------------------------------------------------------------------
# out=
# ------------------------------------------------------------------------------------------

f32, f64, c64, c128 = torch.float32, torch.float64, torch.complex64, torch.complex128

OUT_CASES = [
    # (input dtype, a shape, a dtype, tau shape, tau dtype, a strides or None)
    (f32, (2, 3, 4), f32, (2, 3), f32, None),  # right shape, row-major: kept
    (f32, (2, 3, 4), f32, (2, 3), f32, (12, 1, 3)),  # right shape, column-major
    (f32, (2, 3, 4), f32, (2, 3), f32, (1, 8, 2)),  # right shape, odd strides: kept
    (f32, (0,), f32, (0,), f32, None),  # empty: resized column-major
    (f32, (5, 5), f32, (7,), f32, None),  # wrong shape with elements: warns, resizes
    (f32, (24,), f32, (2, 4), f32, None),
    (f32, (2, 3, 4), f64, (2, 3), f32, None),  # upcast a
    (f32, (0,), f64, (0,), f64, None),  # empty, other dtype
    (f32, (2, 3, 4), f32, (2, 3), f64, None),
    (f32, (2, 3, 4), c64, (2, 3), c64, None),  # real into complex: allowed
    (f32, (2, 3, 4), f32, (2, 3), torch.float16, None),  # same-kind downcast: allowed
    (f64, (2, 3, 4), f32, (2, 3), f32, None),
    (c128, (0,), c128, (0,), c128, None),
]


@pytest.mark.parametrize("case", OUT_CASES, ids=lambda c: "-".join(str(x) for x in c))
def test_out_like_torch(case):
    in_dt, ash, adt, tsh, tdt, astride = case
    A = _rand((2, 3, 4), in_dt)

    def make():
        a = torch.empty(ash, dtype=adt) if astride is None else torch.empty_strided(ash, astride, dtype=adt)
        return a, torch.full(tsh, 0, dtype=tdt)

    results = []
    for fn in (torch.geqrf, adaptqr.geqrf):
        a, tau = make()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            res = fn(A, out=(a, tau))
        assert res[0] is a and res[1] is tau
        results.append((a, tau, [x for x in w if issubclass(x.category, UserWarning)]))
    (ra, rt, rw), (oa, ot, ow) = results
    for x, y in ((oa, ra), (ot, rt)):
        assert x.shape == y.shape and x.dtype == y.dtype and x.stride() == y.stride(), (x.stride(), y.stride())
        torch.testing.assert_close(x, y, rtol=0, atol=0)
    assert bool(ow) == bool(rw), (ow, rw)


def test_out_list_accepted():
    A = _rand((3, 3), f32)
    a, tau = torch.empty(0), torch.empty(0)
    res = adaptqr.geqrf(A, out=[a, tau])
    assert res.a is a and torch.equal(a, torch.geqrf(A).a)


@pytest.mark.parametrize(
    "in_dt, adt, tdt, bad",
    [(f32, torch.int32, f32, "a"), (f32, f32, torch.int64, "tau"), (c64, f32, c64, "a"), (f64, f64, torch.bool, "tau")],
)
def test_out_dtype_errors(in_dt, adt, tdt, bad):
    A = _rand((2, 3, 3), in_dt)
    out = (torch.empty(0, dtype=adt), torch.empty(0, dtype=tdt))
    expected = _torch_error(lambda: torch.geqrf(A, out=out))
    assert expected is RuntimeError
    with pytest.raises(expected) as info:
        adaptqr.geqrf(A, out=(torch.empty(0, dtype=adt), torch.empty(0, dtype=tdt)))
    msg = str(info.value)
    assert bad in msg and str(adt if bad == "a" else tdt).replace("torch.", "") in msg


@pytest.mark.parametrize(
    "out",
    [
        lambda: (torch.empty(0),),
        lambda: (torch.empty(0), torch.empty(0), torch.empty(0)),
        lambda: torch.empty(0),
        lambda: (None, None),
        lambda: (1, 2),
    ],
    ids=["1-tuple", "3-tuple", "tensor", "nones", "ints"],
)
def test_out_kind_errors(out):
    A = _rand((3, 3), f32)
    assert _torch_error(lambda: torch.geqrf(A, out=out())) is TypeError
    with pytest.raises(TypeError):
        adaptqr.geqrf(A, out=out())


def test_out_device_mismatch():
    A = _rand((2, 3, 3), f32)
    with pytest.raises(RuntimeError, match="meta"):
        adaptqr.geqrf(A, out=(torch.empty(0, device="meta"), torch.empty(0)))


def test_out_aliasing_input():
    A = _rand((2, 4, 4), f32)
    ref = torch.geqrf(A.clone())
    t = torch.empty(0)
    adaptqr.geqrf(A, out=(A, t))
    assert torch.equal(A, ref.a) and torch.equal(t, ref.tau)


# ------------------------------------------------------------------------------------------
# Autograd: torch.geqrf has none; match what it does
# ------------------------------------------------------------------------------------------


def test_requires_grad_like_torch():
    A = _rand((2, 3, 3), f32).requires_grad_()
    ours, ref = adaptqr.geqrf(A), torch.geqrf(A)
    assert ours.a.requires_grad == ref.a.requires_grad is True
    assert ours.tau.requires_grad == ref.tau.requires_grad is True
    torch.testing.assert_close(ours.a.detach(), ref.a.detach(), rtol=0, atol=0)
    assert _torch_error(lambda: ref.a.sum().backward()) is NotImplementedError
    with pytest.raises(NotImplementedError, match="derivative for 'geqrf'"):
        ours.a.sum().backward()


def test_out_resize_warning_points_at_the_caller():
    A = _rand((3, 3), f32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        adaptqr.geqrf(A, out=(torch.empty(2, 2), torch.empty(3)))
    assert len(w) == 1 and w[0].filename == __file__, [(x.filename, x.lineno) for x in w]


def test_in_place_ops_on_results_of_a_requires_grad_input_like_torch():
    A = _rand((2, 4, 4), f32).requires_grad_()
    ours, ref = adaptqr.geqrf(A), torch.geqrf(A)
    ref.a.mul_(2)        # torch allows it: its outputs are no views
    ours.a.mul_(2)       # ours neither (a view returned from the autograd Function would raise)
    ours.tau.add_(1)
    assert ours.a._base is None
    torch.testing.assert_close(ours.a.detach(), ref.a.detach(), rtol=0, atol=0)


def test_requires_grad_no_grad_mode():
    A = _rand((3, 3), f32).requires_grad_()
    with torch.no_grad():
        ours = adaptqr.geqrf(A)
        ref = torch.geqrf(A)
    assert ours.a.requires_grad is ref.a.requires_grad is False


def test_requires_grad_complex_raises_like_torch():
    A = _rand((3, 3), c64).requires_grad_()
    assert _torch_error(lambda: torch.geqrf(A)) is RuntimeError
    with pytest.raises(RuntimeError, match="complex"):
        adaptqr.geqrf(A)


@pytest.mark.parametrize("which", ["input", "a"])
def test_requires_grad_with_out_raises_like_torch(which):
    def args():
        A = _rand((2, 3, 3), f32)
        a = torch.empty(2, 3, 3)
        if which == "input":
            A.requires_grad_()
        else:
            a.requires_grad_()
        return A, (a, torch.empty(2, 3))

    A, out = args()
    assert _torch_error(lambda: torch.geqrf(A, out=out)) is RuntimeError
    A, out = args()
    with pytest.raises(RuntimeError, match="out="):
        adaptqr.geqrf(A, out=out)


# ------------------------------------------------------------------------------------------
# Forced paths
# ------------------------------------------------------------------------------------------


def test_forced_unknown_path_lists_known(monkeypatch):
    A = _rand((2, 3, 3), f32)
    with pytest.raises(ValueError, match="nope") as info:
        adaptqr.geqrf(A, path="nope")
    assert "'torch'" in str(info.value)
    monkeypatch.setenv("ADAPTQR_PATH", "nope2")
    with pytest.raises(ValueError, match="nope2"):
        adaptqr.geqrf(A)
    with pytest.raises(ValueError, match="nope2"):
        adaptqr.geqrf(torch.empty(0, 3, 3))


def test_forced_inapplicable_path_says_why():
    if "householder" not in adaptqr.paths_registered():
        pytest.skip("householder path not importable here")
    A = _rand((2, 3, 3), f32)
    with pytest.raises(ValueError) as info:
        adaptqr.geqrf(A, path="householder")
    msg = str(info.value)
    assert "householder" in msg and "cpu" in msg and "m=3" in msg and "float32" in msg


def test_forced_torch_and_reference():
    A = _rand((3, 6, 4), f64)
    _same(adaptqr.geqrf(A, path="torch"), torch.geqrf(A))
    if "reference" in adaptqr.paths_registered():
        a, tau = adaptqr.geqrf(A, path="reference")
        ref = torch.geqrf(A)
        torch.testing.assert_close(a, ref.a, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(tau, ref.tau, rtol=1e-10, atol=1e-10)
        assert a.stride() == ref.a.stride()
