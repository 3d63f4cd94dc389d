"""adaptqr.distributed on the CPU with gloo (issue 27): 2 to 4 processes spawned here, uneven
splits, a rank with no share, mixed shapes, gathering to one rank, the error paths, and
equality with adaptqr.geqrf on one process."""

from __future__ import annotations

import pytest
import torch

from adaptqr import distributed
from adaptqr.testing.distributed import expected, run_world


@pytest.fixture(scope="module", params=[2, 3, 4])
def world(request):
    return request.param, run_world(request.param)


def _layout(t):
    # The stride of a size-1 dim says nothing about the layout.
    return [st for st, d in zip(t.stride(), t.shape) if d > 1]


def _equal(got, want):
    return all(torch.equal(g, w) and _layout(g) == _layout(w) for g, w in zip(got, want))


def test_no_rank_crashed(world):
    _, ranks = world
    for r in ranks:
        assert "crash" not in r, r.get("crash")


def test_split_results_equal_one_process_bit_for_bit(world):
    n, ranks = world
    single, _ = expected()
    for r in ranks:
        for name, want in single.items():  # b1, b3 on 4 ranks: ranks with no share
            assert _equal(r[f"split_{name}"], want), name
        assert _equal(r["replicated"], single["b3"])


def test_gather_to_one_rank(world):
    n, ranks = world
    single, _ = expected()
    dst = 1 % n
    for i, r in enumerate(ranks):
        if i == dst:
            assert _equal(r["dst_1"], single["b5"])
        else:
            assert r["dst_1"] is None


def test_mixed_shape_list_in_input_order(world):
    _, ranks = world
    _, mixed = expected()
    for r in ranks:
        assert len(r["list"]) == len(mixed)
        for got, want in zip(r["list"], mixed):
            assert _equal(got, want)
        assert r["empty_list"] == []


@pytest.mark.parametrize("case,err,words", [
    ("shape_mismatch", "ValueError", "rank 1 holds"),
    ("dtype_mismatch", "ValueError", "torch.float64"),
    ("length_mismatch", "ValueError", "lists of different lengths"),
    ("bad_input", "RuntimeError", ""),
])
def test_errors_are_the_same_on_every_rank(world, case, err, words):
    _, ranks = world
    first = ranks[0][case]
    assert first[0] == "error" and first[1] == err and words in first[2], first
    assert all(r[case] == first for r in ranks)


def test_uninitialized_group_says_how_to_initialize():
    with pytest.raises(RuntimeError, match="init_process_group"):
        distributed.geqrf(torch.randn(2, 3, 3))


def test_cost_model_keeps_small_batches_local():
    assert not distributed.split_pays(20, 32, 32, 2, 4)
    assert distributed.split_pays(640, 512, 512, 2, 4)
    assert not distributed.split_pays(640, 512, 512, 1, 4)
