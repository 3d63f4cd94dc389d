"""GPU tests of adaptqr.graphs with real CUDA graphs (torch.cuda.CUDAGraph).

Each test builds its own GraphCache with an injected configuration, so the tests neither
depend on nor disturb the process-wide cache (except the module-level API test, which
clears it).
"""

from __future__ import annotations

import dataclasses
import gc
import threading

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

from adaptqr import config  # noqa: E402
from adaptqr.graphs import cache as cache_mod  # noqa: E402
from adaptqr.graphs.cache import GraphCache  # noqa: E402
from adaptqr.graphs.capture import CudaGraphBackend  # noqa: E402


class Cfg:
    def __init__(self, **kw):
        fields = dict(graphs=True, graph_entries=16, graph_bytes=1 << 32)
        fields.update(kw)
        self.cfg = dataclasses.replace(config.get(), **fields)

    def __call__(self):
        return self.cfg


def make(**kw) -> GraphCache:
    return GraphCache(backend=CudaGraphBackend(), get_config=Cfg(**kw))


def mm_plan(A):
    """Several kernels, an intermediate, and a column-major H like geqrf's."""
    B, m, n = A.shape
    H = torch.empty_strided((B, m, n), (m * n, 1, m), device=A.device, dtype=A.dtype)
    G = torch.bmm(A.mT, A)  # intermediate from the pool
    H.copy_(torch.bmm(A, G) * 0.25 + A)
    tau = torch.diagonal(G, dim1=-2, dim2=-1).sqrt().contiguous()
    return H, tau


def rand(*shape, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, generator=g, device="cuda")


def assert_same(got, want):
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.stride() == w.stride()
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)


def test_replay_with_new_inputs_and_earlier_results_kept():
    c = make()
    A = [rand(8, 32, 32, seed=s) for s in range(6)]
    outs = [c.run("mm", mm_plan, a) for a in A]  # all kept: calls 3-4 replay, 5-6 find both slots held
    st = c.stats()
    assert (st["captures"], st["hits"]) == (1, cache_mod.OUTPUT_SLOTS)
    torch.cuda.synchronize()
    for a, o in zip(A, outs):  # later replays did not overwrite earlier results
        assert_same(o, mm_plan(a))
        assert o[0].mT.is_contiguous() and o[1].is_contiguous()
    # Results are distinct tensors from each other.
    ptrs = {o[0].data_ptr() for o in outs}
    assert len(ptrs) == len(outs)


def test_dropped_results_replay_without_clones_and_held_ones_survive():
    c = make()
    A = [rand(8, 32, 32, seed=70 + s) for s in range(10)]
    for a in A[:2]:
        c.run("mm", mm_plan, a)
    held = c.run("mm", mm_plan, A[2])
    for a in A[3:]:  # one slot stays held; the other serves every call
        got = c.run("mm", mm_plan, a)
        assert_same(got, mm_plan(a))
        del got
    st = c.stats()
    assert st["hits"] == 8 and cache_mod.REASON_SLOTS_BUSY not in st["eager_reasons"], st
    torch.cuda.synchronize()
    assert_same(held, mm_plan(A[2]))


def test_replay_into_out_tensors():
    c = make()
    for s in range(4):
        a = rand(4, 16, 16, seed=s)
        H = torch.empty_strided((4, 16, 16), (256, 1, 16), device="cuda")
        tau = torch.empty(4, 16, device="cuda")
        got = c.run("mm", mm_plan, a, out=(H, tau))
        assert got[0] is H and got[1] is tau
        assert_same((H, tau), mm_plan(a))


def test_reference_path_replays_correctly():
    ref = pytest.importorskip("adaptqr.paths.reference")
    from adaptqr.testing.check import check_geqrf

    def plan(A):
        return ref.geqrf_reference(A, nb=16)

    c = make()
    A = [rand(8, 48, 48, seed=10 + s) for s in range(4)]
    outs = [c.run(("ref", 8, 48), plan, a) for a in A]
    assert c.stats()["hits"] == 2
    for a, (H, tau) in zip(A, outs):
        res = check_geqrf(a, H, tau)
        assert res.passes_bar, res.summary
        H0, tau0 = torch.geqrf(a)
        torch.testing.assert_close(tau, tau0, rtol=1e-3, atol=1e-3)


def test_adaptqr_geqrf_repeated_calls_match_torch():
    adaptqr = pytest.importorskip("adaptqr")
    if not hasattr(adaptqr, "geqrf"):
        pytest.skip("adaptqr.geqrf not there yet")
    import adaptqr.graphs as graphs
    from adaptqr.testing.check import check_geqrf

    graphs.clear()
    graphs.reset_stats()
    A = [rand(16, 64, 64, seed=20 + s) for s in range(4)]
    outs = [adaptqr.geqrf(a) for a in A]
    torch.cuda.synchronize()
    for a, (H, tau) in zip(A, outs):
        H0, _ = torch.geqrf(a)
        assert H.shape == H0.shape and H.stride() == H0.stride()
        res = check_geqrf(a, H, tau)
        assert res.passes_bar, res.summary
    st = graphs.stats()
    if st["captures"]:  # the dispatcher sent the plan through graphs: calls 3, 4 replayed
        assert st["captures"] == 1 and st["hits"] == 2, st
    graphs.clear()


def test_capture_inside_a_user_graph_records_the_plan():
    c = make()
    static_x = rand(4, 16, 16, seed=1)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # the user's warm-up, as torch.cuda.graphs asks
        for _ in range(3):
            c.run("mm", mm_plan, static_x)
    torch.cuda.current_stream().wait_stream(s)
    before = c.stats()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        H, tau = c.run("mm", mm_plan, static_x)
    st = c.stats()
    assert st["eager_reasons"].get(cache_mod.REASON_CALLER_CAPTURING, 0) == 1
    assert st["captures"] == before["captures"]  # no nested capture
    for seed in (2, 3):
        new = rand(4, 16, 16, seed=seed)
        static_x.copy_(new)
        g.replay()
        torch.cuda.synchronize()
        assert_same((H, tau), mm_plan(new))


def test_syncing_plan_falls_back_to_eager_without_raising():
    def plan(A):
        H, tau = mm_plan(A)
        if H.abs().max().item() < 0:  # a host sync: not capturable
            H = H * 2
        return H, tau

    c = make()
    A = [rand(4, 16, 16, seed=s) for s in range(4)]
    outs = [c.run("sync", plan, a) for a in A]
    st = c.stats()
    assert st["captures"] == 0 and st["entries"] == 0
    assert st["eager_reasons"].get(cache_mod.REASON_CAPTURE_FAILED) == 1
    assert st["eager_reasons"].get(cache_mod.REASON_UNCAPTURABLE) == 2
    for a, o in zip(A, outs):
        assert_same(o, mm_plan(a))
    # CUDA is still healthy: another key captures and replays.
    for s in range(3):
        a = rand(4, 16, 16, seed=s)
        assert_same(c.run("ok", mm_plan, a), mm_plan(a))
    assert c.stats()["captures"] == 1


def test_eviction_frees_graph_memory():
    c = make(graph_entries=2)
    shapes = [(8, 64, 64), (8, 96, 96), (8, 128, 128)]
    for i, shp in enumerate(shapes):
        for s in range(3):
            a = rand(*shp, seed=s)
            assert_same(c.run(("mm", shp), mm_plan, a), mm_plan(a))
    st = c.stats()
    assert st["entries"] == 2 and st["evictions"] == 1 and st["captures"] == 3
    assert c.keys() == [("mm", shapes[1]), ("mm", shapes[2])]
    assert st["bytes"] > 0
    # The evicted key works again (recaptured on its next capture call).
    for s in range(3):
        a = rand(*shapes[0], seed=s)
        assert_same(c.run(("mm", shapes[0]), mm_plan, a), mm_plan(a))
    assert c.stats()["captures"] == 4
    gc.collect()
    torch.cuda.synchronize()
    held = c.stats()["bytes"]
    before = torch.cuda.memory_allocated()
    # What the two remaining entries hold at least: static input, H and tau each.
    live = [k[1] for k in c.keys()]
    floor = sum(4 * (b * n * n * 2 + b * n) for b, _, n in live)
    c.clear()
    gc.collect()
    torch.cuda.synchronize()
    freed = before - torch.cuda.memory_allocated()
    assert c.stats()["entries"] == 0 and c.stats()["bytes"] == 0
    assert freed >= floor, (freed, floor, held)


def test_two_threads_own_and_shared_keys():
    c = make()
    errors = []

    def worker(t):
        try:
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                own = (8 + 8 * t, 24, 24)
                for i in range(12):
                    for key, shp in ((("own", t), own), ("shared", (4, 16, 16))):
                        a = rand(*shp, seed=100 * t + i)
                        got = c.run(key, mm_plan, a)
                        want = mm_plan(a)
                        stream.synchronize()
                        if not all(torch.allclose(g, w, rtol=1e-4, atol=1e-4)
                                   for g, w in zip(got, want)):
                            errors.append((t, i, key))
                        del got  # frees the slot for the next call
        except Exception as exc:  # reported by the assertion below
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[:5]
    st = c.stats()
    calls = 2 * 12 * 2
    assert st["captures"] == 3 and st["entries"] == 3
    assert st["hits"] + st["misses"] == calls
    # Misses: 2 per own key, and on the shared key 2 plus a few while the other thread
    # was capturing it; everything else replays.
    assert st["hits"] >= calls - 12, st


class MMInPlace:
    """In-place plan (duck-typed): load copies A into H, body is mm_plan's work on H."""

    def alloc(self, A):
        B, m, n = A.shape
        return (torch.empty((B, n, m), device=A.device, dtype=A.dtype).mT,
                torch.empty((B, n), device=A.device, dtype=A.dtype))

    def load(self, A, outs):
        outs[0].copy_(A)

    def body(self, outs):
        H, tau = outs
        G = torch.bmm(H.mT, H)
        H.copy_(torch.bmm(H, G) * 0.25 + H)
        tau.copy_(torch.diagonal(G, dim1=-2, dim2=-1).sqrt())

    def __call__(self, A):
        outs = self.alloc(A)
        self.load(A, outs)
        self.body(outs)
        return outs


def test_inplace_plan_replays_with_new_inputs():
    c = make()
    A = [rand(8, 32, 32, seed=40 + s) for s in range(5)]
    outs = [c.run("inplace", MMInPlace(), a) for a in A]  # all kept: two replays, then eager
    st = c.stats()
    assert st["captures"] == 1 and st["hits"] == cache_mod.OUTPUT_SLOTS
    torch.cuda.synchronize()
    for a, o in zip(A, outs):
        assert_same(o, mm_plan(a))


def test_inplace_reference_plan_replays_correctly():
    ref = pytest.importorskip("adaptqr.paths.reference")
    from adaptqr.graphs import InPlacePlan
    from adaptqr.testing.check import check_geqrf

    class RefPlan(InPlacePlan):
        def alloc(self, A):
            B, m, n = A.shape
            return (torch.empty((B, n, m), device=A.device).mT, torch.empty((B, n), device=A.device))

        def load(self, A, outs):
            outs[0].copy_(A)

        def body(self, outs):
            ref.factor_reference(outs[0], outs[1], None, nb=16)

    c = make()
    A = [rand(8, 48, 48, seed=60 + s) for s in range(4)]
    outs = [c.run("ref-inplace", RefPlan(), a) for a in A]
    assert c.stats()["hits"] == 2
    for a, (H, tau) in zip(A, outs):
        assert H.mT.is_contiguous()
        res = check_geqrf(a, H, tau)
        assert res.passes_bar, res.summary


def test_a_settings_change_between_calls_gives_a_new_capture(monkeypatch):
    # Issue 23: the tail precision knob is read while the plan runs; a replay must not serve
    # the graph captured under the other value. The whole settings snapshot is in the key.
    import adaptqr
    import adaptqr.graphs as graphs
    from adaptqr import config

    graphs.clear()
    graphs.reset_stats()
    A = rand(8, 256, 256, seed=31)
    A[:, :, 200:] *= 1e-12  # a negligible tail, so the tail precision is used
    for _ in range(3):
        adaptqr.geqrf(A)
    before = graphs.stats()["captures"]
    with config.experiment(tail_prec="ieee"):
        for _ in range(3):
            adaptqr.geqrf(A)
    assert graphs.stats()["captures"] == before + 1, graphs.stats()
    graphs.clear()
