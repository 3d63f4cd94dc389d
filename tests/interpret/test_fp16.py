"""The FP16 route's trailing kernels on the CPU, under the Triton interpreter (issue 8).

Per matrix: ``fp16_scale[b] > 0`` sends matrix b's trailing matrix to float16 storage
(kernels/fp16_storage.py), 0 keeps it on the FP32 update. Checked on the streamed and the
resident column-tile updates and on the row-split W / U update, with one panel an update
and two (``Schedule.fp16_group``: two go through ``_apply_pair_f16`` when streamed, the
resident loop when resident):

- the FP32-routed matrix is bit for bit what the path gives without the route;
- the FP16-routed one moves by float16's rounding (more than FP32's, less than 1e-2 of its
  scale), stays finite, and a scaled copy (1e20) moves the same relative amount;
- the FP16 launch's own column tile (``Schedule.fp16_bn``, fitted to the update's columns
  or not: ``Schedule.fp16_fit``) against the FP32 launch's tile: the same to float16's
  rounding. Not bit for bit: the tile width changes the shapes of the products, and both
  the GPU's MMA layouts and the interpreter's numpy BLAS may sum by shape (OpenBLAS's
  Haswell and Zen kernels do, its SkylakeX kernel does not: issue 21's CI failure, when
  this compared a one-launch mode, since removed, that used the FP32 tile);
- the pair updates' reflectors from a float16 copy (``Schedule.fp16_v16``), and the pair
  update in two launches (``Schedule.pair_split``): bit for bit.
"""

from __future__ import annotations

import pytest
from _support import Info, Records  # tests/interpret/ is on sys.path

pytestmark = pytest.mark.interpret


def _cases():
    """Every case, ``{name: record}``."""
    records = Records()
    _out = records.add

    import dataclasses
    import itertools
    import math
    from unittest import mock

    import torch

    from adaptqr.detectors import finish_tail
    from adaptqr.paths import schedules
    from adaptqr.paths.householder import factor_householder
    from adaptqr.testing import check_geqrf


    def run(A, s, sc, na=None, kept=False):
        # kept: the columns from na on are a dropped tail (n_kept = na, N33), not zeros
        B, m, n = A.shape
        H = A.mT.contiguous().mT.clone()
        tau = A.new_empty(B, n)
        na = n if na is None else na
        f = {"n_active": torch.full((B,), na, dtype=torch.int32),
             "n_nonzero": torch.full((B,), n if kept else na, dtype=torch.int32)}
        if kept:
            f["n_kept"] = torch.full((B,), na, dtype=torch.int32)
        if sc is not None:
            f["fp16_scale"] = sc
        factor_householder(H, tau, Info(f), schedule=s)
        return H, tau

    def run_poisoned(A, s, sc, na, kept=False):
        # Every float workspace the path allocates starts as NaN, so an update that reads
        # what no kernel wrote (the T of a panel past n_active) shows.
        real = torch.empty

        def empty(*args, **kwargs):
            t = real(*args, **kwargs)
            return t.fill_(float("nan")) if t.is_floating_point() else t

        with mock.patch.object(torch, "empty", empty):
            return run(A, s, sc, na, kept)

    def scale_of(A):
        # classify.fp16_scales' scale: largest column norm to 2^13 .. 2^14
        return 2.0 ** math.floor(math.log2(16384.0 / float(A.double().norm(dim=0).max())))

    torch.manual_seed(0)
    cases = {"streamed": (2, 96, 96, schedules.Schedule(False, 16, 1, 32, 16, small_n_nb=0)),
             "resident": (2, 96, 96, schedules.Schedule(False, 16, 1, 16, 16, small_n_nb=0)),
             "row split": (2, 640, 40, schedules.Schedule(False, 16, 1, 16, 64, small_n_nb=0))}
    for (name, (B, m, n, s)), group in itertools.product(cases.items(), (1, 2)):
        A = torch.randn(B, m, n)
        A[0] *= 1e20
        sc = torch.tensor([scale_of(A[0]), 0.0] if B == 2 else [scale_of(A[0])])
        s = dataclasses.replace(s, fp16_group=group)
        # The route cuts the batch in groups of fp16_group panels: compare with that group.
        H0, t0 = run(A, dataclasses.replace(s, group=group), None)
        H1, t1 = run(A, s, sc)
        H2, t2 = run(A, dataclasses.replace(s, fp16_bn=0), sc)
        H3, t3 = run(A, dataclasses.replace(s, fp16_fit=not schedules.FP16_FIT), sc)
        H4, t4 = run(A, dataclasses.replace(s, fp16_v16=not schedules.FP16_V16), sc)
        # N25: the pair update in one launch (pair_split 0), and in two, the second over row
        # slices of 32 rows (the default's slices cover these rows in one).
        H5, t5 = run(A, dataclasses.replace(s, pair_split=0), sc)
        H6, t6 = run(A, dataclasses.replace(s, pair_split=32), sc)
        # N26: the row-split updates' W as each slice's sums, added in slice order.
        H7, t7 = run(A, dataclasses.replace(s, w_partials=not schedules.W_PARTIALS), sc)
        _out({
            "name": f"{name} group {group}",
            "fp32_same": bool(torch.equal(H0[1:], H1[1:]) and torch.equal(t0[1:], t1[1:])),
            "fp32_same_tile": bool(torch.equal(H1[1:], H2[1:]) and torch.equal(t1[1:], t2[1:])),
            "tile16": float((H1[0] - H2[0]).abs().max() / H1[0].abs().max()),
            "tau16": float((t1[0] - t2[0]).abs().max()),
            "fp32_same_fit": bool(torch.equal(H1[1:], H3[1:]) and torch.equal(t1[1:], t3[1:])),
            "fit16": float((H1[0] - H3[0]).abs().max() / H1[0].abs().max()),
            "fit_tau16": float((t1[0] - t3[0]).abs().max()),
            "v16_same": bool(torch.equal(H1, H4) and torch.equal(t1, t4)),
            "split_same": bool(torch.equal(H1, H5) and torch.equal(t1, t5)
                               and torch.equal(H1, H6) and torch.equal(t1, t6)),
            "partials_same": bool(torch.equal(H1, H7) and torch.equal(t1, t7)),
            "diff16": float((H0[0] - H1[0]).abs().max() / H0[0].abs().max()),
            "finite": bool(torch.isfinite(H1).all() and torch.isfinite(t1).all()),
            "factor16": float(check_geqrf(A[:1], H1[:1], t1[:1]).worst_factor)})
        # Routes composed (N31): both matrices' columns from r on exactly zero, the route
        # told n_active == n_nonzero == r, no multiple of the panel width (NB 16). At n = 96
        # with two panels an update, the pair at 64 has its second panel past r = 75; at
        # n = 40 the pair's update reaches columns 32-34.
        r = 75 if n == 96 else 35
        Z = A.clone()
        Z[:, :, r:] = 0.0
        Hf, tf = run(Z, s, sc)
        Hz, tz = run_poisoned(Z, s, sc, r)
        # N33: the same columns from r on a negligible tail, not zeros, dropped whole
        # (n_kept = r < n_nonzero = n): never read or written, then zeroed by finish_tail.
        D = Z.clone()
        D[:, :, r:] = 1e-9 * torch.randn(B, m, n - r) * A.abs().amax(dim=(1, 2))[:, None, None]
        Hd, td = run_poisoned(D, s, sc, r, kept=True)
        full = lambda v: torch.full((B,), v, dtype=torch.int32)  # noqa: E731
        finish_tail(Hd, td, full(r), n_kept=full(r), n_nonzero=full(n))
        _out({
            "name": f"{name} group {group} dropped suffix",
            "same": bool(torch.equal(Hd, Hz) and torch.equal(td, tz))})
        _out({
            "name": f"{name} group {group} zero suffix",
            "same": bool(torch.equal(Hf, Hz) and torch.equal(tf, tz)),
            "suffix_zero": bool((Hz[:, :, r:] == 0).all() and (tz[:, r:] == 0).all()),
            "fp16_moved": float((Hz[0] - run(Z, s, None, r)[0][0]).abs().max()
                                / Hz[0].abs().max())})
    # The float16 tile's origin moves a panel at a time (one panel an update, tiles of 32
    # from column k + 16), so the first update, from float32, skips the tile [112, 144) past
    # r = 100 and never stores its float16 columns, which the second update's tile [96, 128)
    # then spans (run 0717: NaN in 8x1536 rankdef's R rows past r with the knob on, N31).
    for name, (m, s) in {"streamed": (160, cases["streamed"][3]),
                         "row split": (320, cases["row split"][3])}.items():
        s = dataclasses.replace(s, fp16_bn=32, fp16_fit=False, fp16_group=1)
        Z = torch.randn(2, m, 160)
        Z[:, :, 100:] = 0.0
        sc = torch.tensor([scale_of(Z[0]), 0.0])
        Hf, tf = run(Z, s, sc)
        Hz, tz = run_poisoned(Z, s, sc, 100)
        _out({"name": f"{name} shifted tiles zero suffix",
              "same": bool(torch.equal(Hf, Hz) and torch.equal(tf, tz)),
              "suffix_zero": bool((Hz[:, :, 100:] == 0).all() and (tz[:, 100:] == 0).all())})
    return records

@pytest.fixture(scope="module")
def results():
    return _cases()


@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("name", ["streamed", "resident", "row split"])
def test_fp16_route_per_matrix(results, name, group):
    d = results[f"{name} group {group}"]
    assert d["fp32_same"] and d["fp32_same_tile"] and d["finite"], d
    # Another tile for the FP16 launch: the same products summed in another order, so at
    # most a few float16 roundings apart (2^-11 each), where a lost or stale tile would be
    # off by the matrix's scale.
    assert d["tile16"] < 4e-3 and d["tau16"] < 4e-3, d
    # The FP16 launch's tile fitted to its columns or not (N21): the same bound, and the
    # FP32-routed matrix untouched.
    assert d["fp32_same_fit"] and d["fit16"] < 4e-3 and d["fit_tau16"] < 4e-3, d
    # The pair's reflectors from their float16 copy (N23): the same roundings of the same
    # values, so every bit the same.
    assert d["v16_same"], d
    # The pair update as a Y launch and a row-sliced update launch (N25): each row chunk's
    # products as the one-program update makes them, so every bit the same.
    assert d["split_same"], d
    # The row-split W as each slice's sums added in slice order (N26): the interpreter runs
    # the atomics in that order too, so every bit the same.
    assert d["partials_same"], d
    # float16 storage moves R by ~1e-3 of its scale (2^-11 a rounding); FP32 by ~1e-7
    assert 1e-5 < d["diff16"] < 1e-2, d
    # n = 96 / 40 sits under FP16_MIN_N (the gate 20 n eps32 is tight there): not the bar,
    # only a bound that a wrong update (a lost column, a stale tile) would break by far
    assert d["factor16"] < 200, d


@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("name", ["streamed", "resident", "row split"])
def test_fp16_route_with_an_exactly_zero_suffix(results, name, group):
    # Issue 24 item 4 (EXPERIMENTS.md N31): told its columns from r on are exactly zero
    # (n_active == n_nonzero == r), the FP16-routed matrix skips those tiles and the panels
    # past r, and gives the bits of the same matrix factored in full on the route, with its
    # workspaces poisoned by NaN (an update that read a T no panel wrote, or a float16 tile
    # no update stored, would be NaN).
    d = results[f"{name} group {group} zero suffix"]
    assert d["same"] and d["suffix_zero"], d
    # and it did take the float16 storage: off the FP32 route's bits by float16's rounding
    assert 1e-5 < d["fp16_moved"] < 1e-2, d


@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("name", ["streamed", "resident", "row split"])
def test_fp16_route_with_a_dropped_suffix(results, name, group):
    # EXPERIMENTS.md N33: told n_kept = r (a negligible tail, nonzero), the FP16-routed
    # matrix's updates leave those columns alone (the panel holding column r still factors
    # its own columns past it), and after finish_tail it gives the bits of the zero-suffix
    # run above, with its workspaces poisoned by NaN: the tail reached no other column.
    d = results[f"{name} group {group} dropped suffix"]
    assert d["same"], d


@pytest.mark.parametrize("name", ["streamed", "row split"])
def test_fp16_zero_suffix_under_shifting_tiles(results, name):
    # N31's GPU failure: a tile that spans float16 columns past n_nonzero that no update
    # stored (NaN here) must not read them; the suffix stays exactly zero.
    d = results[f"{name} shifted tiles zero suffix"]
    assert d["same"] and d["suffix_zero"], d
