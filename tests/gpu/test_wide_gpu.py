"""Issue 26 on the GPU: wide (m < n) float32 batches through the wide path, at the half gate,
with torch.geqrf's layout and R's signs."""

import pytest
import torch

import adaptqr
from adaptqr import originals
from adaptqr.testing import check_geqrf

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


@pytest.mark.parametrize("shape", [(64, 256, 1024), (8, 1024, 4096), (3, 17, 50), (1, 2, 3)],
                         ids=lambda s: "x".join(map(str, s)))
def test_wide_at_the_half_gate(shape):
    # The automatic plan's path (a few matrices of at most AUTO_MAX_COLS columns are the
    # small path's since H37), then the wide path named, at the bar either way.
    from adaptqr.paths import small
    from adaptqr.planning import spec_of

    g = torch.Generator(device="cuda").manual_seed(262)
    A = torch.randn(*shape, device="cuda", generator=g)
    A0 = A.clone()
    auto = "small" if small.prefers(spec_of(A)) is None else "wide"
    for path in (None, "wide"):
        adaptqr.log.enable()
        try:
            a, tau = adaptqr.geqrf(A, path=path)
            rec = adaptqr.decisions()[-1]
        finally:
            adaptqr.log.disable()
        assert torch.equal(A, A0)
        assert (path or auto) in str(rec["plan"]), rec["plan"]
        ra, _ = originals.geqrf(A[:1])
        assert a.stride()[-2:] == ra.stride()[-2:] and tau.shape == (*shape[:-2], shape[-2])
        res = check_geqrf(A, a, tau)
        assert res.passes_bar, res.summary


@pytest.mark.variant
@pytest.mark.parametrize("chunk", [4, 8])
@pytest.mark.parametrize("shape", [(64, 256, 1024), (8, 1024, 4096), (2, 3000, 3100)],
                         ids=lambda s: "x".join(map(str, s)) if isinstance(s, tuple) else s)
def test_overlapped_q_t_matches(shape, chunk):
    # EXPERIMENTS.md W3: Q^T a range of panels at a time on a side stream beside the
    # leading block's factorization, eagerly and through the graph cache's replay, against
    # one launch after it (the knob's 0).
    from adaptqr import config

    g = torch.Generator(device="cuda").manual_seed(263)
    A = torch.randn(*shape, device="cuda", generator=g)
    with config.experiment(wide_chunk=0):
        a1, t1 = adaptqr.geqrf(A)
    with config.experiment(wide_chunk=chunk):
        for _ in range(3):  # the third call replays a captured graph
            a2, t2 = adaptqr.geqrf(A)
    res = check_geqrf(A, a2, t2)
    assert res.passes_bar, res.summary
    assert float((a2 - a1).norm() / a1.norm()) < 1e-5


@pytest.mark.parametrize("shape", [(64, 256, 1024), (8, 1024, 4096), (3, 700, 2100)],
                         ids=lambda s: "x".join(map(str, s)))
def test_early_copy_matches(shape):
    # EXPERIMENTS.md W5: the overlapped route copies the block back beside the last Q^T
    # launch, eagerly and through the graph cache's replay (the copy is recorded on the
    # caller's stream between the fork and the join); the one-launch route copies it after.
    from adaptqr import config

    g = torch.Generator(device="cuda").manual_seed(266)
    A = torch.randn(*shape, device="cuda", generator=g)
    with config.experiment(wide_chunk=0):
        a1, t1 = adaptqr.geqrf(A)
    for _ in range(3):  # the third call replays a captured graph
        a2, t2 = adaptqr.geqrf(A)
    res = check_geqrf(A, a2, t2)
    assert res.passes_bar, res.summary
    assert float((a2 - a1).norm() / a1.norm()) < 1e-5


@pytest.mark.variant
@pytest.mark.parametrize("shape", [(1, 1024, 2048), (8, 256, 1024), (3, 700, 2100)],
                         ids=lambda s: "x".join(map(str, s)))
def test_probed_block_at_the_bar(shape):
    # EXPERIMENTS.md W6: the leading block probed for its rank; matrix 0's block has zero
    # trailing columns, so its reflectors past them are identities (tau = 0), eagerly and
    # replayed.
    from adaptqr import config

    B, m, n = shape
    r = 3 * m // 4
    g = torch.Generator(device="cuda").manual_seed(267)
    A = torch.randn(*shape, device="cuda", generator=g)
    A[0, :, r:m] = 0.0
    with config.experiment(wide_probe=1):
        for _ in range(3):  # the third call replays a captured graph
            a, tau = adaptqr.geqrf(A)
    res = check_geqrf(A, a, tau)
    assert res.passes_bar, res.summary
    assert (tau[0, r:] == 0).all() and (tau[-1] != 0).any()
