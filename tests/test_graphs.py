"""CPU tests of the graph cache's policy with a fake graph backend (no CUDA needed).

The fake "captures" by remembering fn and the static input, and "replays" by running fn on
the static input and writing the result into the same static output tensors, so anything
that forgets to clone, to copy in, or to lock shows up as a wrong value.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from unittest import mock

import pytest
import torch

import adaptqr.graphs as graphs
from adaptqr import config
from adaptqr.graphs import cache as cache_mod
from adaptqr.graphs.cache import GraphCache


class FakeBackend:
    def __init__(self, accepts=True, nbytes=None, fail_capture=False, slow=0.0):
        self.accept = accepts
        self.capturing = False
        self.nbytes = nbytes  # None: bytes of static input + outputs
        self.fail_capture = fail_capture
        self.slow = slow
        self.warmups = 0
        self.captured = []
        self.released = []
        self.replays = 0
        self.violations = []
        self._lock = threading.Lock()

    def accepts(self, A):
        return self.accept

    def is_capturing(self, A):
        return self.capturing

    def warmup(self, fn, A):
        with self._lock:
            self.warmups += 1
        return tuple(fn(A))

    def capture(self, thunk, device):
        if self.fail_capture:
            raise RuntimeError("operation not permitted when stream is capturing")
        outs = tuple(thunk())
        h = {"thunk": thunk, "outs": outs, "users": 0}
        with self._lock:
            self.captured.append(h)
        # nbytes given: report it as the pool (the cache adds its own buffers);
        # None: an allocator that cannot measure its pool.
        return h, outs, (self.nbytes or 0)

    def begin(self, h):
        with self._lock:
            h["users"] += 1
            if h["users"] > 1:
                self.violations.append("two users of one entry at once")

    def replay(self, h):
        fresh = tuple(h["thunk"]())
        if self.slow:
            time.sleep(self.slow)  # widen the window a missing lock would expose
        for o, f in zip(h["outs"], fresh):
            o.copy_(f)
        with self._lock:
            self.replays += 1

    def end(self, h):
        with self._lock:
            h["users"] -= 1

    def release(self, h):
        with self._lock:
            self.released.append(h)


class Cfg:
    """A mutable configuration source for GraphCache(get_config=...)."""

    def __init__(self, **kw):
        self.cfg = dataclasses.replace(config.get(), graphs=True, graph_entries=16,
                                       graph_bytes=1 << 30)
        self.set(**kw)

    def set(self, **kw):
        self.cfg = dataclasses.replace(self.cfg, **kw)

    def __call__(self):
        return self.cfg


def geqrf_plan(A):
    """A plan with torch.geqrf's output layout (column-major H)."""
    return torch.geqrf(A)


def mm_plan(A):
    return (A @ A.mT + 1.0, A.sum(-1))


def make(backend=None, **cfg):
    backend = backend or FakeBackend()
    src = Cfg(**cfg)
    return GraphCache(backend=backend, get_config=src), backend, src


def rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def test_inputs_above_the_size_bound_run_eagerly_with_the_reason():
    c, be, src = make(graph_max_input=3 * 6 * 6 * 4 - 1)   # one byte under a (3, 6, 6) float32 input
    A = [rand(3, 6, 6, seed=s) for s in range(4)]
    for a in A:
        H, tau = c.run("big", geqrf_plan, a)
        torch.testing.assert_close(H, torch.geqrf(a)[0])
    st = c.stats()
    assert st["captures"] == 0 and be.replays == 0
    assert st["eager_reasons"] == {cache_mod.REASON_LARGE_INPUT: 4}
    src.set(graph_max_input=3 * 6 * 6 * 4)                   # exactly the input: captured again
    for a in A:
        c.run("big", geqrf_plan, a)
    assert c.stats()["captures"] == 1


S = cache_mod.OUTPUT_SLOTS


def test_capture_on_second_call_then_replay_gives_fresh_correct_results():
    c, be, _ = make()
    A = [rand(3, 6, 6, seed=s) for s in range(5)]
    outs = [c.run("k", geqrf_plan, a) for a in A]  # every result kept: slots stay busy
    st = c.stats()
    assert st["captures"] == 1 and len(be.captured) == S
    assert (st["hits"], st["misses"]) == (S, 5 - S)
    assert st["eager_reasons"] == {cache_mod.REASON_WARMING: 1, cache_mod.REASON_CAPTURING_CALL: 1,
                                   cache_mod.REASON_SLOTS_BUSY: 3 - S}
    assert be.replays == S
    # Every call, including the replayed ones, holds its own input's factorization even
    # after later calls replayed the same graph.
    for a, (H, tau) in zip(A, outs):
        H0, tau0 = torch.geqrf(a)
        torch.testing.assert_close(H, H0)
        torch.testing.assert_close(tau, tau0)
        assert H.stride() == H0.stride() and H.mT.is_contiguous()
        assert tau.is_contiguous()
    # The replayed results are the slots' static outputs, one slot each.
    slot_ptrs = {h["outs"][0].data_ptr() for h in be.captured}
    assert {H.data_ptr() for H, _ in outs[2:2 + S]} == slot_ptrs


def test_fresh_replays_return_copies_and_leave_the_slots_free():
    # The geqrf custom op's mode: torch's CUDA graphs want every output allocated in the
    # op's own call, so no slot's static output is handed out, and none stays held.
    c, be, _ = make()
    A = [rand(3, 6, 6, seed=s) for s in range(6)]
    outs = [c.run("k", geqrf_plan, a, fresh=True) for a in A]
    assert c.stats()["captures"] == 1 and be.replays == 4
    assert cache_mod.REASON_SLOTS_BUSY not in c.stats()["eager_reasons"]
    slot_ptrs = {t.data_ptr() for h in be.captured for t in h["outs"]}
    for a, (H, tau) in zip(A, outs):
        H0, tau0 = torch.geqrf(a)
        torch.testing.assert_close(H, H0)
        torch.testing.assert_close(tau, tau0)
        assert H.stride() == H0.stride()
        assert H.data_ptr() not in slot_ptrs and tau.data_ptr() not in slot_ptrs


def test_dropped_results_free_their_slot_and_held_ones_are_never_overwritten():
    c, be, _ = make()
    A = [rand(3, 6, 6, seed=s) for s in range(12)]
    for a in A[:2]:
        c.run("k", geqrf_plan, a)
    for a in A[2:8]:  # results dropped at once: every call replays
        H, tau = c.run("k", geqrf_plan, a)
        torch.testing.assert_close(H, torch.geqrf(a)[0])
    del H, tau
    assert c.stats()["hits"] == 6 and be.replays == 6
    held = c.run("k", geqrf_plan, A[8])
    view = held[0][1:]  # a view alone keeps the slot busy too
    del held
    for a in A[9:]:  # the other slot serves these; A[8]'s factors stay intact
        H, tau = c.run("k", geqrf_plan, a)
        torch.testing.assert_close(H, torch.geqrf(a)[0])
        del H, tau
    torch.testing.assert_close(view, torch.geqrf(A[8])[0][1:])
    assert cache_mod.REASON_SLOTS_BUSY not in c.stats()["eager_reasons"]


def test_a_resized_output_retires_its_slot():
    c, be, _ = make()
    A = [rand(2, 4, 4, seed=s) for s in range(6)]
    for a in A[:2]:
        c.run("k", geqrf_plan, a)
    H, tau = c.run("k", geqrf_plan, A[2])
    tau.resize_(64)  # reallocates the slot's storage: the graph would write elsewhere
    del H, tau
    for a in A[3:]:
        H, tau = c.run("k", geqrf_plan, a)
        torch.testing.assert_close(tau, torch.geqrf(a)[1])
        del H, tau
    assert sum(sl.dead for sl in c._entries["k"].slots) == 1


def test_input_is_not_modified_and_static_input_is_a_copy():
    c, be, _ = make()
    A = rand(2, 4, 4)
    keep = A.clone()
    for _ in range(3):
        c.run("k", geqrf_plan, A)
    assert torch.equal(A, keep)
    assert c._entries["k"].static_in.data_ptr() != A.data_ptr()


def test_out_receives_result_on_every_kind_of_call():
    c, be, _ = make()
    for i in range(4):  # warming, capturing, hit, hit
        a = rand(2, 5, 5, seed=i)
        H = torch.empty(2, 5, 5).mT.contiguous().mT  # column-major like geqrf
        tau = torch.empty(2, 5)
        got = c.run("k", geqrf_plan, a, out=(H, tau))
        assert got[0] is H and got[1] is tau
        H0, tau0 = torch.geqrf(a)
        torch.testing.assert_close(H, H0)
        torch.testing.assert_close(tau, tau0)


def test_out_with_wrong_shape_names_the_shapes():
    c, _, _ = make()
    a = rand(2, 5, 5)
    for _ in range(3):
        with pytest.raises(ValueError, match=r"out\[1\] has shape \(2, 4\).*expected shape \(2, 5\)"):
            c.run("k", geqrf_plan, a, out=(torch.empty(2, 5, 5), torch.empty(2, 4)))


def test_same_key_with_a_different_shape_raises_on_replay():
    c, _, _ = make()
    c.run("k", mm_plan, rand(2, 4, 4))
    c.run("k", mm_plan, rand(2, 4, 4))
    with pytest.raises(ValueError, match=r"input has shape \(3, 4, 4\).*expected shape \(2, 4, 4\)"):
        c.run("k", mm_plan, rand(3, 4, 4))


def test_capture_on_first_call_option():
    c, be, _ = make()
    c = GraphCache(backend=be, capture_on_call=1, get_config=Cfg())
    c.run("k", mm_plan, rand(2, 3, 3))
    assert c.stats()["captures"] == 1
    with pytest.raises(ValueError):
        GraphCache(backend=be, capture_on_call=0)


def _capture(c, key, a):
    for _ in range(2):
        c.run(key, mm_plan, a)


def test_lru_eviction_by_entries_frees_the_least_recently_used():
    c, be, _ = make(graph_entries=2)
    a = rand(2, 3, 3)
    _capture(c, "a", a)
    _capture(c, "b", a)
    c.run("a", mm_plan, a)  # a is now more recent than b
    _capture(c, "c", a)
    st = c.stats()
    assert st["entries"] == 2 and st["evictions"] == 1
    assert c.keys() == ["a", "c"]
    b_graphs = be.captured[S:2 * S]
    assert len(be.released) == S and all(any(r is g for g in b_graphs) for r in be.released)
    # An evicted key starts over: one eager call, then a new capture.
    c.run("b", mm_plan, a)
    assert c.stats()["captures"] == 3
    c.run("b", mm_plan, a)
    assert c.stats()["captures"] == 4 and c.keys() == ["c", "b"] and len(be.captured) == 4 * S


def test_lru_eviction_by_bytes():
    pool = 1000
    a = rand(2, 3, 3)
    per = a.nbytes + S * pool  # static input + a pool a slot (each holds its outputs)
    c, be, src = make(FakeBackend(nbytes=pool), graph_bytes=2 * per + 10)
    for k in "abc":
        _capture(c, k, a)
    st = c.stats()
    assert st["entries"] == 2 and st["bytes"] == 2 * per and st["evictions"] == 1
    assert c.keys() == ["b", "c"]
    # Lowering the bound at run time takes effect at the next insertion.
    src.set(graph_bytes=per)
    _capture(c, "d", a)
    assert c.keys() == ["d"] and c.stats()["bytes"] == per


def test_entry_larger_than_the_byte_bound_is_not_kept():
    c, be, _ = make(FakeBackend(nbytes=5000), graph_bytes=4000)
    a = rand(2, 3, 3)
    outs = [c.run("big", mm_plan, a) for _ in range(4)]
    for o in outs:
        torch.testing.assert_close(o[0], mm_plan(a)[0])
    st = c.stats()
    assert st["entries"] == 0 and st["bytes"] == 0 and st["captures"] == 0
    # captured once (a graph a slot), freed
    assert len(be.captured) == S and {id(h) for h in be.released} == {id(h) for h in be.captured}
    assert st["eager_reasons"][cache_mod.REASON_TOO_LARGE] == 1
    assert st["eager_reasons"][cache_mod.REASON_UNCAPTURABLE] == 2
    assert "big" in next(iter(st["uncapturable"]))


def test_graphs_off_via_environment(monkeypatch):
    be = FakeBackend()
    c = GraphCache(backend=be)  # reads config.get() at each call
    monkeypatch.setenv("ADAPTQR_GRAPHS", "0")
    a = rand(2, 3, 3)
    for _ in range(3):
        torch.testing.assert_close(c.run("k", mm_plan, a)[0], mm_plan(a)[0])
    st = c.stats()
    assert st["captures"] == 0 and be.warmups == 0 and st["hits"] == st["misses"] == 0
    assert st["eager_reasons"] == {cache_mod.REASON_GRAPHS_OFF: 3}
    monkeypatch.setenv("ADAPTQR_GRAPHS", "1")
    _capture(c, "k", a)
    assert c.stats()["captures"] == 1


def test_zero_bounds_mean_no_capture(monkeypatch):
    c, be, src = make(graph_entries=0)
    _capture(c, "k", rand(2, 3, 3))
    assert c.stats()["captures"] == 0
    assert c.stats()["eager_reasons"] == {cache_mod.REASON_NO_ROOM: 2}


@pytest.mark.parametrize("setup,reason", [
    (lambda be: setattr(be, "accept", False), cache_mod.REASON_NOT_CUDA),
    (lambda be: setattr(be, "capturing", True), cache_mod.REASON_CALLER_CAPTURING),
])
def test_eager_reasons_for_input_and_caller_state(setup, reason):
    c, be, _ = make()
    setup(be)
    a = rand(2, 3, 3)
    for _ in range(3):
        torch.testing.assert_close(c.run("k", mm_plan, a)[0], mm_plan(a)[0])
    st = c.stats()
    assert st["eager_reasons"] == {reason: 3}
    assert st["captures"] == 0 and be.warmups == 0 and not be.captured


def test_caller_opt_out_and_requires_grad():
    c, be, _ = make()
    a = rand(2, 3, 3)
    for _ in range(3):
        c.run("k", mm_plan, a, capturable=False)
    g = rand(2, 3, 3).requires_grad_()
    for _ in range(3):
        c.run("g", mm_plan, g)
    st = c.stats()
    assert st["eager_reasons"] == {cache_mod.REASON_CALLER_OPT_OUT: 3, cache_mod.REASON_REQUIRES_GRAD: 3}
    assert not be.captured
    # Under no_grad the same input may be captured.
    with torch.no_grad():
        _capture(c, "g", g)
    assert c.stats()["captures"] == 1


def test_capture_failure_never_raises_and_marks_the_key(caplog):
    c, be, _ = make(FakeBackend(fail_capture=True))
    a = rand(2, 4, 4)
    with caplog.at_level(logging.DEBUG, logger="adaptqr.graphs"):
        outs = [c.run("k", geqrf_plan, a) for _ in range(4)]
    for H, tau in outs:
        torch.testing.assert_close(H, torch.geqrf(a)[0])
    st = c.stats()
    assert st["captures"] == 0 and st["entries"] == 0
    assert st["eager_reasons"] == {cache_mod.REASON_WARMING: 1, cache_mod.REASON_CAPTURE_FAILED: 1,
                                   cache_mod.REASON_UNCAPTURABLE: 2}
    assert "operation not permitted" in next(iter(st["uncapturable"].values()))
    text = caplog.text
    assert "capture failed" in text and cache_mod.REASON_UNCAPTURABLE in text
    # clear() forgets the failure: the key may be tried again.
    c.clear()
    be.fail_capture = False
    _capture(c, "k", a)
    assert c.stats()["captures"] == 1


def test_errors_of_fn_itself_propagate_and_do_not_wedge_the_key():
    c, be, _ = make()
    calls = {"n": 0}

    def plan(A):
        calls["n"] += 1
        if calls["n"] in (1, 2):
            raise RuntimeError(f"plan error {calls['n']}")
        return mm_plan(A)

    a = rand(2, 3, 3)
    with pytest.raises(RuntimeError, match="plan error 1"):  # eager first call
        c.run("k", plan, a)
    with pytest.raises(RuntimeError, match="plan error 2"):  # warm-up of the capturing call
        c.run("k", plan, a)
    assert c.stats()["captures"] == 0
    _capture(c, "k", a)  # not stuck as "being captured"
    assert c.stats()["captures"] == 1


def test_clear_releases_everything():
    c, be, _ = make()
    a = rand(2, 3, 3)
    for k in "abc":
        _capture(c, k, a)
    assert c.stats()["entries"] == 3 and c.stats()["bytes"] > 0
    c.clear()
    st = c.stats()
    assert st["entries"] == 0 and st["bytes"] == 0
    assert sorted(map(id, be.released)) == sorted(map(id, be.captured))
    c.reset_stats()
    assert c.stats()["hits"] == 0 and c.stats()["eager_reasons"] == {}


def test_tracked_keys_are_bounded(monkeypatch):
    monkeypatch.setattr(cache_mod, "MAX_TRACKED_KEYS", 8)
    c, be, _ = make()
    a = rand(1, 2, 2)
    for k in range(50):
        c.run(k, mm_plan, a)
    assert len(c._seen) == 8
    c.run(49, mm_plan, a)  # still remembered: captured now
    c.run(0, mm_plan, a)   # forgotten: counts as a first call again
    assert c.stats()["captures"] == 1


def test_threads_with_different_and_shared_keys():
    be = FakeBackend(slow=1e-4)
    c = GraphCache(backend=be, get_config=Cfg(graph_entries=3))
    keys = [("k", i) for i in range(5)]  # more keys than entries: evictions under load
    errors = []
    calls_per_thread = 40
    n_threads = 6

    def worker(t):
        try:
            for i in range(calls_per_thread):
                key = keys[(t + i) % len(keys)]
                a = rand(2, 4, 4, seed=1000 * t + i)
                P, s = c.run(key, mm_plan, a)
                P0, s0 = mm_plan(a)
                if not (torch.allclose(P, P0) and torch.allclose(s, s0)):
                    errors.append((t, i, key))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert not be.violations
    st = c.stats()
    assert st["entries"] <= 3
    assert st["hits"] + st["misses"] == calls_per_thread * n_threads
    assert st["captures"] * S == len(be.captured)  # every successful capture was inserted
    assert st["evictions"] == st["captures"] - st["entries"]
    assert len(be.released) == st["evictions"] * S
    with c._lock:
        assert st["bytes"] == sum(e.nbytes for e in c._entries.values())
    assert sum(st["eager_reasons"].values()) == st["misses"]


def test_module_level_api_runs_cpu_inputs_eagerly():
    graphs.reset_stats()
    a = rand(2, 4, 4)
    for _ in range(3):
        H, tau = graphs.run(("cpu", 2, 4), geqrf_plan, a)
        torch.testing.assert_close(H, torch.geqrf(a)[0])
    st = graphs.stats()
    assert st["eager_reasons"] == {cache_mod.REASON_NOT_CUDA: 3}
    assert st["captures"] == 0
    graphs.clear()
    assert set(st) >= {"entries", "bytes", "hits", "misses", "captures", "evictions", "eager_reasons"}


def test_expanded_input_is_captured_into_a_dense_buffer():
    c, be, _ = make()
    base = rand(1, 4, 4)
    outs = [c.run("k", mm_plan, base.expand(3, 4, 4)) for _ in range(4)]
    assert c.stats()["captures"] == 1 and c.stats()["hits"] == 2
    for P, s in outs:
        torch.testing.assert_close(P, mm_plan(base.expand(3, 4, 4))[0])


def test_entry_evicted_between_lookup_and_replay_runs_eagerly():
    class Racy(GraphCache):
        def _replay(self, entry, A, out, fresh=False):
            self._release(entry)  # what another thread's eviction would do meanwhile
            return super()._replay(entry, A, out, fresh)

    be = FakeBackend()
    c = Racy(backend=be, get_config=Cfg())
    a = rand(2, 3, 3)
    _capture(c, "k", a)
    P, _ = c.run("k", mm_plan, a)
    torch.testing.assert_close(P, mm_plan(a)[0])
    st = c.stats()
    assert st["hits"] == 0 and st["misses"] == 3
    assert st["eager_reasons"][cache_mod.REASON_EVICTED] == 1
    assert be.replays == 0


class GeqrfInPlace(graphs.InPlacePlan):
    """An in-place plan with geqrf's layout; counts its phases."""

    def __init__(self):
        self.counts = {"alloc": 0, "load": 0, "body": 0}

    def alloc(self, A):
        self.counts["alloc"] += 1
        B, m, n = A.shape
        return torch.empty(B, n, m).mT, torch.empty(B, min(m, n))

    def load(self, A, outs):
        self.counts["load"] += 1
        outs[0].copy_(A)

    def body(self, outs):
        self.counts["body"] += 1
        H, tau = outs
        h, t = torch.geqrf(H)
        H.copy_(h)
        tau.copy_(t)


def test_inplace_plan_captures_only_the_body_and_loads_each_call():
    plan = GeqrfInPlace()
    assert graphs.is_inplace_plan(plan) and not graphs.is_inplace_plan(geqrf_plan)
    c, be, _ = make()
    A = [rand(3, 5, 5, seed=s) for s in range(5)]
    outs = [c.run("k", plan, a) for a in A]  # all kept: the 5th call finds both slots busy
    st = c.stats()
    assert st["captures"] == 1 and st["hits"] == S
    entry = c._entries["k"]
    assert entry.static_in is None  # no static copy of A
    H_s, tau_s = entry.slots[0].static_out
    assert st["bytes"] == S * (H_s.nbytes + tau_s.nbytes)  # the fake cannot measure a pool
    # eager (call 1), warm-up (call 2), the busy call 5: alloc+load+body each; capture, a
    # slot: alloc+load, body in the capture; each hit: load, body in the (fake) replay.
    eager = 3
    assert plan.counts == {"alloc": eager + S, "load": eager + S + S, "body": eager + S + S}
    for a, (H, tau) in zip(A, outs):
        H0, tau0 = torch.geqrf(a)
        torch.testing.assert_close(H, H0)
        torch.testing.assert_close(tau, tau0)
        assert H.stride() == H0.stride()
    with pytest.raises(ValueError, match=r"input has shape \(3, 6, 6\)"):
        c.run("k", plan, rand(3, 6, 6))


def test_inplace_plan_duck_typed_and_out():
    class Duck:
        def __init__(self):
            self.inner = GeqrfInPlace()
            self.alloc, self.load, self.body = self.inner.alloc, self.inner.load, self.inner.body

        def __call__(self, A):
            return self.inner(A)

    c, be, _ = make()
    for s in range(4):
        a = rand(2, 4, 4, seed=s)
        H = torch.empty(2, 4, 4).mT.contiguous().mT
        tau = torch.empty(2, 4)
        c.run("k", Duck(), a, out=(H, tau))
        torch.testing.assert_close(H, torch.geqrf(a)[0])
        torch.testing.assert_close(tau, torch.geqrf(a)[1])
    assert c.stats()["hits"] == 2


def test_bytes_without_a_measurable_pool_count_input_and_outputs():
    c, be, _ = make()  # the fake reports pool bytes 0
    a = rand(2, 3, 3)
    _capture(c, "k", a)
    P, s = mm_plan(a)
    assert c.stats()["bytes"] == a.nbytes + S * (P.nbytes + s.nbytes)


def test_graph_settings_agree_with_the_full_config(monkeypatch):
    monkeypatch.setenv("ADAPTQR_GRAPHS", "0")
    monkeypatch.setenv("ADAPTQR_GRAPH_ENTRIES", "3")
    monkeypatch.setenv("ADAPTQR_GRAPH_MAX_INPUT", "123")
    g, full = config.graph_settings(), config.get()
    assert (g.graphs, g.graph_entries, g.graph_bytes, g.graph_max_input) == (
        full.graphs, full.graph_entries, full.graph_bytes, full.graph_max_input) == (False, 3, 4 << 30, 123)


def test_raw_environment_reads_follow_os_environ(monkeypatch):
    # config reads os.environ's own dict (faster); every way of changing os.environ shows.
    monkeypatch.setenv("ADAPTQR_GRAPH_ENTRIES", "7")
    assert config.graph_settings().graph_entries == 7
    os.environ["ADAPTQR_GRAPH_ENTRIES"] = "9"
    assert config.graph_settings().graph_entries == 9
    del os.environ["ADAPTQR_GRAPH_ENTRIES"]
    assert config.graph_settings().graph_entries == 16
    with mock.patch.dict(os.environ, {"ADAPTQR_PATH": "reference"}):
        assert config.forced_path() == "reference"
    assert config.forced_path() == os.environ.get("ADAPTQR_PATH")  # restored
    # Where os.environ has no such dict (another platform), the plain lookup is used.
    monkeypatch.setattr(config, "_ENV_DATA", None)
    monkeypatch.setenv("ADAPTQR_GRAPHS", "0")
    assert config.graph_settings().graphs is False


def test_one_output_slot_with_out_aliasing_the_input():
    # A path's own body graph: A is the caller's H, out=(H, tau): one capture, and every call
    # leaves its own input's factorization in H.
    be = FakeBackend()
    c = GraphCache(backend=be, get_config=Cfg(), output_slots=1)
    plan = GeqrfInPlace()
    for s in range(5):
        a = rand(2, 5, 5, seed=s)
        H = a.mT.contiguous().mT
        tau = torch.empty(2, 5)
        c.run("k", plan, H, out=(H, tau))
        H0, tau0 = torch.geqrf(a)
        torch.testing.assert_close(H, H0)
        torch.testing.assert_close(tau, tau0)
    st = c.stats()
    assert st["captures"] == 1 and len(be.captured) == 1 and be.replays == 3
    with pytest.raises(ValueError, match="output_slots must be >= 1, got 0"):
        GraphCache(backend=be, get_config=Cfg(), output_slots=0)


def test_new_cache_is_cleared_by_the_module_clear():
    own = graphs.new_cache(Cfg())
    try:
        be = own.backend = FakeBackend()
        a = rand(2, 3, 3)
        for _ in range(3):
            own.run("k", geqrf_plan, a)
        assert own.stats()["entries"] == 1 and len(be.captured) == 1
        graphs.clear()
        assert own.stats()["entries"] == 0 and be.released == be.captured
    finally:
        graphs._own.remove(own)
