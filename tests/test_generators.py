"""The qr_v2 generator against spec/qr_v2.md: RNG order, per-profile structure, mixed labels."""

import pytest
import torch

from adaptqr.testing import generate, inputs_per_case, make_inputs
from adaptqr.testing.generators import EPS32, MIXED_PROFILES, MIXED_WEIGHTS, PROFILES

CPU = "cpu"


def _draws(seed, *shapes):
    """The raw randn draws of one generator in order, as the spec orders them."""
    gen = torch.Generator(device=CPU).manual_seed(seed)
    return [torch.randn(s, generator=gen, device=CPU) for s in shapes]


def _logspace(lo, n):
    return torch.logspace(0.0, -float(lo), n, dtype=torch.float32)


@pytest.mark.parametrize("case", PROFILES)
def test_shape_dtype_determinism(case):
    a = generate(5, 12, 2, 11, case, device=CPU)
    assert a.shape == (5, 12, 12) and a.dtype == torch.float32 and a.is_contiguous()
    assert torch.isfinite(a).all()
    assert torch.equal(a, generate(5, 12, 2, 11, case, device=CPU))
    assert not torch.equal(a, generate(5, 12, 2, 12, case, device=CPU))


def test_dense_is_colscaled_randn():
    a = generate(3, 10, 2, 5, device=CPU)
    (base,) = _draws(5, (3, 10, 10))
    assert torch.equal(a, base * _logspace(2, 10))
    # cond = 0 leaves the draw as it is
    assert torch.equal(generate(3, 10, 0, 5, device=CPU), base)


def test_upper():
    n = 9
    a = generate(4, n, 0, 2, "upper", device=CPU)
    (base,) = _draws(2, (4, n, n))
    assert torch.equal(torch.tril(a, -1), torch.zeros_like(a))
    want_diag = base.diagonal(dim1=-2, dim2=-1) + torch.linspace(1.0, 0.25, n)
    assert torch.equal(a.diagonal(dim1=-2, dim2=-1), want_diag)
    assert torch.equal(torch.triu(a, 1), torch.triu(base, 1))


@pytest.mark.parametrize("n", [1, 4, 32, 33])
def test_rankdef_tail_exactly_zero(n):
    a = generate(6, n, 1, 3, "rankdef", device=CPU)
    r = max(1, 3 * n // 4)
    assert torch.equal(a[:, :, r:], torch.zeros_like(a[:, :, r:]))
    assert (a[:, :, :r].abs().amax(dim=1) > 0).all()


def test_nearrank_draw_order():
    n, b = 16, 3
    r = 12
    a = generate(b, n, 1, 8, "nearrank", device=CPU)
    base, noise = _draws(8, (b, n, n), (b, n, n - r))
    base[:, :, r:] = base[:, :, : n - r] + 1e-5 * noise
    assert torch.equal(a, base * _logspace(1, n))


def test_clustered_column_scales():
    n = 32
    a = generate(4, n, 3, 9, "clustered", device=CPU)  # cond is ignored by clustered
    (base,) = _draws(9, (4, n, n))
    scales = a / base
    want = torch.ones(n)
    want[n // 2:] = 4 * EPS32
    want[n // 2 - 2: n // 2 + 2] = EPS32 ** 0.5
    torch.testing.assert_close(scales, want.expand_as(a), rtol=1e-6, atol=0)


def test_clustered_small_n_has_no_sqrt_eps_band():
    a = generate(2, 6, 0, 1, "clustered", device=CPU)
    (base,) = _draws(1, (2, 6, 6))
    torch.testing.assert_close(a[:, :, :3], base[:, :, :3], rtol=0, atol=0)
    torch.testing.assert_close(a[:, :, 3:], base[:, :, 3:] * 4 * EPS32, rtol=1e-6, atol=0)


@pytest.mark.parametrize("n", [8, 64, 100])
def test_band_zero_outside_band(n):
    a = generate(3, n, 1, 4, "band", device=CPU)
    bw = max(2, min(32, n // 32))
    i = torch.arange(n)
    outside = (i[:, None] - i[None, :]).abs() > bw
    assert torch.equal(a[:, outside], torch.zeros_like(a[:, outside]))
    assert (a[:, ~outside] != 0).float().mean() > 0.99


def test_nearcollinear_draw_order():
    n, b = 10, 2
    a = generate(b, n, 2, 6, "nearcollinear", device=CPU)
    _, base, noise = _draws(6, (b, n, n), (b, n, 1), (b, n, n))
    torch.testing.assert_close(a, (base + 1e-4 * noise) * _logspace(2, n), rtol=0, atol=0)


def test_rowscale_row_norms_decay():
    n = 40
    a = generate(8, n, 1, 7, "rowscale", device=CPU)  # row cond is max(cond, 4) = 4
    (base,) = _draws(7, (8, n, n))
    rows = _logspace(4, n)
    assert torch.equal(a, rows[:, None] * base)
    norms = a.norm(dim=2).mean(dim=0)
    assert norms[0] / norms[-1] > 1e3
    # coarse monotone decay (rows are random, so compare blocks of rows)
    blocks = norms.reshape(8, 5).mean(dim=1)
    assert (blocks[1:] < blocks[:-1]).all()


def test_diagonal_profile():
    a = generate(3, 12, 1, 2, "diagonal", device=CPU)
    assert torch.equal(a, torch.diag_embed(a.diagonal(dim1=-2, dim2=-1)))
    torch.testing.assert_close(a.diagonal(dim1=-2, dim2=-1).abs(), _logspace(2, 12).expand(3, 12))


# ---- mixed ------------------------------------------------------------------------------

def _classify(a):
    """The profile of each matrix of a generated n=16 cond=2 batch, from its structure."""
    n = a.shape[-1]
    r, t = max(1, 3 * n // 4), n - max(1, 3 * n // 4)
    s = _logspace(2, n)
    i = torch.arange(n)
    outside = (i[:, None] - i[None, :]).abs() > max(2, min(32, n // 32))
    out = []
    for m in a:
        u = m / s  # undo the column scaling
        if (m[:, r:] == 0).all():
            out.append("rankdef")
        elif (m[:, n // 2 + 2:].abs().max() < 1e-5) and (m[:, n // 2 + 2:] != 0).any():
            out.append("clustered")
        elif (m[outside] == 0).all():
            out.append("band")
        elif (u[:, r:] - u[:, :t]).abs().max() < 1e-4:
            out.append("nearrank")
        elif (u - u[:, :1]).abs().max() < 1e-2:
            out.append("nearcollinear")
        elif m[-1].abs().max() < 1e-3 and m[0].abs().max() > 1e-2:
            out.append("rowscale")
        else:
            out.append("dense")
    return out


@pytest.mark.parametrize("profile", MIXED_PROFILES)
def test_classifier_recognizes_pure_profiles(profile):
    assert set(_classify(generate(40, 16, 2, 21, profile, device=CPU))) == {profile}


def test_mixed_label_frequencies():
    labels = _classify(generate(2000, 16, 2, 1234, "mixed", device=CPU))
    total = sum(MIXED_WEIGHTS)
    for profile, w in zip(MIXED_PROFILES, MIXED_WEIGHTS):
        freq = labels.count(profile) / len(labels)
        # binomial std at 2000 draws: 0.011 for dense (p=1/2), 0.006 for p=1/12
        tol = 0.05 if profile == "dense" else 0.03
        assert abs(freq - w / total) < tol, (profile, freq)


def test_mixed_forces_dense_and_non_dense_at_small_batch():
    for seed in range(120):
        labels = _classify(generate(2, 16, 2, seed, "mixed", device=CPU))
        assert "dense" in labels, (seed, labels)
        assert any(lab != "dense" for lab in labels), (seed, labels)


def test_mixed_batch_one_is_not_forced():
    seen = {_classify(generate(1, 16, 2, seed, "mixed", device=CPU))[0] == "dense" for seed in range(40)}
    assert seen == {True, False}


def test_mixed_matches_sub_batch_profiles():
    # A mixed batch's matrices are built from the shared draw: the dense ones are exactly
    # the column-scaled base draw.
    a = generate(12, 16, 2, 77, "mixed", device=CPU)
    (base,) = _draws(77, (12, 16, 16))
    labels = _classify(a)
    for k, lab in enumerate(labels):
        if lab == "dense":
            assert torch.equal(a[k], base[k] * _logspace(2, 16))


# ---- rotation and errors ------------------------------------------------------------------

def test_inputs_per_case():
    assert inputs_per_case(20, 32) == 50
    assert inputs_per_case(640, 512) == 1
    assert inputs_per_case(40, 352) == (256 << 20) // (40 * 352 * 352 * 4)
    assert inputs_per_case(1, 4096) == 4


def test_make_inputs_rotates_seeds():
    c = {"batch": 3, "n": 8, "cond": 1, "seed": 100, "case": "band"}
    xs = make_inputs(c, 3, CPU)
    assert len(xs) == 3
    for i, x in enumerate(xs):
        assert torch.equal(x, generate(3, 8, 1, 100 + 42 * (i + 1), "band", device=CPU))
    assert len(make_inputs({"batch": 20, "n": 32, "cond": 1, "seed": 0}, device=CPU)) == 50


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="bogus"):
        generate(1, 4, 0, 0, "bogus", device=CPU)
    with pytest.raises(ValueError, match="n=0"):
        generate(1, 0, 0, 0, device=CPU)
