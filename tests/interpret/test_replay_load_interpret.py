"""The graph replay's load as the route probe's column pass (EXPERIMENTS.md X3), under the
Triton interpreter: the in-place plan's alloc / load / body, as a replay runs them, give the
eager call's result."""

import pytest
import torch

pytestmark = pytest.mark.interpret


def test_replay_probe_load_gives_the_eager_result(monkeypatch):
    from adaptqr import config, dispatch
    from adaptqr.registry import InputSpec

    monkeypatch.setattr(dispatch._Runner, "_probe_loads", lambda self, A: True)  # CPU here
    g = torch.Generator().manual_seed(19)
    A = torch.randn(3, 70, 60, generator=g)
    A[1, :, 40:] = 0  # a low-rank member: the routing must come through the stats
    plan = dispatch.plan_for(InputSpec(3, 70, 60, A.dtype, "cpu"), "householder")
    assert plan.probe
    seen = []
    real = dispatch.detectors().route_columns
    monkeypatch.setattr(dispatch.detectors(), "route_columns",
                        lambda H, src, stats: seen.append(src is not None) or real(H, src, stats))
    with config.experiment(replay_probe_load=1):
        settings = config.snapshot()
        eager = dispatch._Runner(plan, settings)
        a1, t1 = eager(A)
        runner = dispatch._Runner(plan, settings)
        outs = runner.alloc(A)
        runner.load(A, outs)
        runner.body(outs)
    assert seen == [True]  # the load ran the column pass, copying; the body did not again
    assert torch.equal(outs[0], a1) and torch.equal(outs[1], t1)
    assert torch.equal(runner.n_active, eager.n_active)
    assert runner.n_active.tolist()[1] == 40
