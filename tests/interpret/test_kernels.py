"""The Householder path's Triton kernels on the CPU, under the Triton interpreter.

They run in tests/interpret/'s TRITON_INTERPRET=1 session (tests/test_interpret_session.py);
every case is computed once (a module fixture), the assertions are made on its records.
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

    import torch

    from adaptqr.paths import schedules
    from adaptqr.paths.householder import factor_householder
    from adaptqr.testing import check_geqrf, generate


    def run(A, sched=None, info=None):
        H = A.mT.contiguous().mT.clone()
        tau = A.new_empty(A.shape[0], A.shape[2])
        factor_householder(H, tau, info, schedule=sched)
        return H, tau

    def emit(name, A, H, tau, ref=True):
        r = check_geqrf(A, H, tau)
        d = {"name": name, "factor": r.worst_factor, "orth": r.worst_orth,
             "finite": bool(torch.isfinite(H).all() and torch.isfinite(tau).all())}
        if ref:
            Hr, taur = torch.geqrf(A.double())
            dH, dR = H.diagonal(dim1=-2, dim2=-1), Hr.diagonal(dim1=-2, dim2=-1)
            d["sign_ok"] = bool((torch.sign(dH) == torch.sign(dR.float())).all())
            scale = A.abs().amax(dim=(-2, -1), keepdim=True)
            d["r_err"] = float(((H - Hr.float()).triu() / scale).abs().max())
            d["v_err"] = float((H - Hr.float()).tril(-1).abs().max())
            d["tau_err"] = float((tau - taur.float()).abs().max())
        _out(d)

    torch.manual_seed(0)
    # Small path (one launch), every qr_v2 profile, well-conditioned sizes included.
    for n in (4, 16, 32):
        for case in ("dense", "upper", "rankdef", "nearrank", "clustered", "band",
                     "rowscale", "nearcollinear", "mixed"):
            A = generate(3, n, 1 if case in ("dense", "upper") else 0, 7 + n, case, "cpu")
            H, tau = run(A)
            emit(f"small n={n} {case}", A, H, tau, ref=case in ("dense", "upper"))
    # Blocked path with the real kernels at small sizes: registers and streamed panels,
    # resident and chunked trailing updates, groups, a ragged last panel, tall matrices.
    S = schedules.Schedule(False, 16, 2, 16, 16, small_n_nb=0)
    for (B, m, n) in ((2, 64, 64), (2, 72, 50)):
        A = generate(B, m, 1, 3, "dense", "cpu")[:, :, :n].contiguous() if m == n else torch.randn(B, m, n)
        H, tau = run(A, S)
        emit(f"blocked {B}x{m}x{n}", A, H, tau)
        old = (schedules.REG_PANEL_MAX_TILE, schedules.RESIDENT_MAX_TILE)
        schedules.REG_PANEL_MAX_TILE, schedules.RESIDENT_MAX_TILE = 16 * 32, 16 * 16
        H, tau = run(A, S)
        emit(f"streamed {B}x{m}x{n}", A, H, tau)
        schedules.REG_PANEL_MAX_TILE, schedules.RESIDENT_MAX_TILE = old
    A = generate(2, 64, 0, 11, "mixed", "cpu")
    H, tau = run(A, S)
    emit("blocked mixed 2x64", A, H, tau, ref=False)
    # Row-split trailing update (W through atomics), group 1.
    S1 = schedules.Schedule(False, 16, 1, 32, 16, small_n_nb=0)
    schedules.TRAILING_SPLIT_MIN_ROWS = 16
    A = torch.randn(2, 100, 90)
    H, tau = run(A, S1)
    emit("split trailing 2x100x90", A, H, tau)
    # The row-split update with n_active (a matrix whose panels stop early, one with none)
    # against the same schedule with every update over whole columns (no row split).
    for (B, m, n) in ((2, 160, 160), (3, 120, 100)):
        A = torch.randn(B, m, n)
        na = torch.tensor([n, 41, 0][:B], dtype=torch.int32)
        for tag, info in (("plain", None), ("n_active", Info({"n_active": na}))):
            H1, t1 = run(A, S1, info)
            schedules.TRAILING_SPLIT_MIN_ROWS = 1 << 20
            H2, t2 = run(A, S1, info)
            schedules.TRAILING_SPLIT_MIN_ROWS = 16
            _out({"name": f"row split {tag} {B}x{m}x{n}",
                              "err": float((H2 - H1).abs().max() / H1.abs().max()),
                              "tau": float((t2 - t1).abs().max()),
                              "finite": bool(torch.isfinite(H1).all() and torch.isfinite(t1).all()),
                              "bar": bool(check_geqrf(A[:1], H1[:1], t1[:1]).passes_bar)})
    # Row-split panel kernel with one program (its grid barrier then never waits),
    # against the register panel kernel, plain and scaled (the rescaled round).
    from adaptqr.paths.kernels.panel import panel_reg_kernel, panel_split_kernel
    for sc in (1.0, 1e30, 1e-30):
        B, m, n, nb = 2, 48, 40, 16
        A = torch.randn(B, m, n) * sc
        outs = []
        for kind in ("reg", "split"):
            Ht = A.mT.contiguous().clone()
            tau = torch.zeros(B, n)
            TW = torch.zeros(B, 3, nb, nb)
            if kind == "reg":
                panel_reg_kernel[(B,)](Ht, tau, TW, tau, 16, m, n, 16, 1, 3, NB=nb, MB=32,
                                       HAS_NA=False, WRITE_T=True)
            else:
                WS = torch.zeros(B, 3, 1, 6 * nb)
                SP = torch.zeros(B, 1, nb, nb)
                CNT = torch.zeros(B, 3 * n, dtype=torch.int32)
                panel_split_kernel[(B, 1)](Ht, tau, TW, tau, WS, SP, CNT, 16, m, n, 16, 1, 3, 1,
                                           NB=nb, RB=32, PMAX=1, HAS_NA=False, WRITE_T=True)
            outs.append((Ht, tau, TW))
        (H1, t1, T1), (H2, t2, T2) = outs
        _out({"name": f"split panel {sc:g}",
                          "h": float(((H1 - H2).abs().max() / H1.abs().max())),
                          "tau": float((t1 - t2).abs().max()), "t": float((T1 - T2).abs().max()),
                          "finite": bool(torch.isfinite(H2).all())})
    # Two columns a barrier (PAIRS, schedule split_pairs) against one: same panel to rounding;
    # the arrival counters show which columns had a round of their own.
    for name, sc, pw in (("dense", 1.0, 16), ("scaled", 1e30, 16), ("odd", 1.0, 9),
                         ("collinear", 1.0, 16), ("zero", 1.0, 16)):
        B, m, n, nb = 2, 48, 40, 16
        A = torch.randn(B, m, n) * sc
        if name == "collinear":   # column 21 nearly column 20: the pair formula would cancel
            A[:, :, 21] = A[:, :, 20] + 1e-4 * torch.randn(B, m)
        if name == "zero":
            A[:, 17:, 19] = 0
        outs = []
        for pairs in (False, True):
            Ht = A.mT.contiguous().clone()
            tau = torch.zeros(B, n)
            TW = torch.zeros(B, 3, nb, nb)
            WS = torch.zeros(B, 3, 1, 6 * nb)
            SP = torch.zeros(B, 1, nb, nb)
            CNT = torch.zeros(B, 3 * n, dtype=torch.int32)
            panel_split_kernel[(B, 1)](Ht, tau, TW, tau, WS, SP, CNT, 16, m, n, pw, 1, 3, 1,
                                       NB=nb, RB=64, PMAX=1, HAS_NA=False, WRITE_T=True,
                                       PAIRS=pairs)
            outs.append((Ht, tau, TW, CNT))
        (H1, t1, T1, C1), (H2, t2, T2, C2) = outs
        # Against LAPACK in float64 on the same panel: for the ill-conditioned (collinear)
        # panel both modes differ from it by cond * eps; pairs must not be worse.
        Hr, tr = torch.geqrf(A[:, 16:, 16:16 + pw].double())
        def ref(H, pw=pw, Hr=Hr):
            return float((H.mT[:, 16:, 16:16 + pw].double() - Hr).abs().max() / Hr.abs().max())
        _out({"name": f"pairs {name}", "err1": ref(H1), "err2": ref(H2),
                          "h": float((H1 - H2).abs().max() / H1.abs().max()),
                          "tau": float((t1 - t2).abs().max()), "t": float((T1 - T2).abs().max()),
                          "rounds": C2[0, 16:16 + pw].tolist(), "rescaled": C2[0, n + 16:n + 16 + pw].tolist(),
                          "finite": bool(torch.isfinite(H2).all())})
    # The separate T kernel (schedule t_kernel): same factorization as T built in the panel
    # kernels (register and streamed panels; n_active with a zero-tau tail, a ragged last
    # panel, a zero sub-column). After a register panel it reads V^T V from the panel's
    # column steps (t_from_panel), else sums it itself. Register panels that build their own
    # T: by doubling from their w rows, or by the recurrence from V V^T (t_doubling).
    # Workspaces from torch.empty are NaN-filled here, so an entry of T's slot the panel did
    # not write would show.
    ST = dataclasses.replace(S, t_kernel=True)
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    for tiles in ((16 * 128, 16 * 16), (16 * 32, 16 * 16)):
        old = (schedules.REG_PANEL_MAX_TILE, schedules.RESIDENT_MAX_TILE)
        schedules.REG_PANEL_MAX_TILE, schedules.RESIDENT_MAX_TILE = tiles
        A = torch.randn(4, 70, 60)
        A[3, 1:, 0] = 0
        info = Info({"n_active": torch.tensor([60, 37, 0, 60], dtype=torch.int32)})
        (H1, t1), (H2, t2) = run(A, S, info), run(A, ST, info)
        H3, t3 = run(A, dataclasses.replace(ST, t_from_panel=False), info)
        H5, t5 = run(A, dataclasses.replace(S, t_doubling=False), info)
        schedules.REG_PANEL_MAX_TILE, schedules.RESIDENT_MAX_TILE = old
        r = check_geqrf(A[[0, 3]], H2[[0, 3]], t2[[0, 3]])
        _out({"name": f"t kernel {tiles[0]}", "h": float((H1 - H2).abs().max()),
                          "tau": float((t1 - t2).abs().max()), "bar": bool(r.passes_bar),
                          "h_sum": float((H3 - H2).abs().max()), "tau_sum": float((t3 - t2).abs().max()),
                          "h_panel": float((H5 - H1).abs().max()), "tau_panel": float((t5 - t1).abs().max()),
                          "finite": bool(torch.isfinite(H2).all() and torch.isfinite(t2).all()),
                          "tau_zero_col": float(t2[3, 0])})
    torch.use_deterministic_algorithms(False)
    # Scaling: 1e30 / 1e-30 factor as well as the unscaled matrix (small and blocked).
    for sched, n in ((None, 24), (S, 48)):
        A0 = torch.randn(2, n, n)
        for sc in (1e30, 1e-30):
            A = A0 * sc
            H, tau = run(A, sched)
            emit(f"scaled {sc:g} n={n} {'blocked' if sched else 'small'}", A, H, tau)
    # Zero columns -> tau 0, beta = alpha; zero matrix -> all tau 0, H = 0.
    A = torch.randn(2, 20, 20)
    A[:, :, 3] = 0
    A[:, 5:, 7] = 0
    H, tau = run(A)
    Hr, taur = torch.geqrf(A)
    _out({"name": "zero cols", "tau3": float(tau[:, 3].abs().max()),
                      "tau_err": float((tau - taur).abs().max()),
                      "h_err": float((H - Hr).abs().max())})
    Z = torch.zeros(2, 40, 40)
    H, tau = run(Z, S)
    _out({"name": "zero matrix", "h": float(H.abs().max()), "tau": float(tau.abs().max())})
    # NaN propagates, no hang.
    A = torch.randn(2, 40, 40)
    A[0, 5, 5] = float("nan")
    H, tau = run(A, S)
    _out({"name": "nan", "nan0": bool(torch.isnan(H[0]).any()),
                      "finite1": bool(torch.isfinite(H[1]).all())})
    # n_nonzero: trailing tiles of exactly-zero columns are skipped, bit for bit the same
    # result; a one-pass TF32 tail (schedule tail_prec) on a negligible tail passes the bar.
    # n_kept (N33): the negligible tail dropped whole, not updated, zeroed by finish_tail.
    from adaptqr.detectors import finish_tail, route
    for sched, (B, n, z) in ((S, (3, 96, 64)), (S1, (2, 160, 96))):
        A = torch.randn(B, n, n)
        A[:, :, z:] = 0
        A[0, :, z + 20:] = 1e-9 * torch.randn(n, n - z - 20)
        feats = route(A.mT.contiguous().mT, backend="torch")[1]
        updated = {k: v for k, v in feats.items() if k != "n_kept"}  # the tail updated
        (H1, t1) = run(A, sched, Info({"n_active": feats["n_active"]}))
        (H2, t2) = run(A, sched, Info(updated))
        (H3, t3) = run(A, dataclasses.replace(sched, tail_prec="tf32"), Info(updated))
        r = check_geqrf(A, H3, t3)
        (H4, t4) = run(A, sched, Info(feats))
        finish_tail(H4, t4, feats["n_active"], n_kept=feats["n_kept"], n_nonzero=feats["n_nonzero"])
        r4 = check_geqrf(A, H4, t4)
        _out({"name": f"zero tail skip n={n}", "same": bool(torch.equal(H1, H2) and torch.equal(t1, t2)),
                          "nz": feats["n_nonzero"].tolist(), "na": feats["n_active"].tolist(),
                          "kept": feats["n_kept"].tolist(), "bar": bool(r.passes_bar),
                          "drop_bar": bool(r4.passes_bar), "drop_zero": bool((H4[:, :, z:] == 0).all()),
                          "drop_head": bool(torch.equal(H4[:, :, :z], H1[:, :, :z]))})
    # n_active: columns >= n_active[b] get tau 0 and hold Q1^T A_tail; 0 leaves A as is.
    for sched, n in ((None, 32), (S, 64), (S1, 80)):
        A = torch.randn(3, n, n)
        na = torch.tensor([n, n // 2 + 3, 0], dtype=torch.int32)
        H, tau = run(A, sched, Info({"n_active": na}))
        k = int(na[1])
        H1, t1 = torch.geqrf(A[1, :, :k].double())
        Hp = torch.nn.functional.pad(H1, (0, n - k))
        tp = torch.nn.functional.pad(t1, (0, n - k))
        Q = torch.linalg.householder_product(Hp, tp)
        tail = Q.mT @ A[1, :, k:].double()
        Hf, tf = torch.geqrf(A[0].double())
        _out({"name": f"n_active n={n}",
                          "full_err": float((H[0].double() - Hf).abs().max()),
                          "tau_tail": float(tau[1, k:].abs().max()),
                          "prefix_err": float((H[1, :, :k].double() - H1).abs().max()),
                          "tau_err": float((tau[1, :k].double() - t1).abs().max()),
                          "tail_err": float((H[1, :, k:].double() - tail).abs().max()),
                          "zero_untouched": float((H[2] - A[2]).abs().max()),
                          "tau_zero": float(tau[2].abs().max())})
    # The column-major load (adaptqr.layout): ragged tiles, a wide matrix, 1 x 1, a 2-D batch
    # in float64; a transposed view (not row-major) is left to Tensor.copy_.
    from adaptqr.layout import _triton_applies, load_column_major
    for shape, dt in (((3, 70, 50), torch.float32), ((2, 64, 130), torch.float32),
                      ((1, 1, 1), torch.float32), ((2, 3, 33, 65), torch.float64)):
        A = torch.randn(*shape, dtype=dt)
        A0 = A.clone()
        a = torch.empty(*shape[:-2], shape[-1], shape[-2], dtype=dt).mT
        applies = _triton_applies(A, a, True)
        load_column_major(A, a, backend="triton")
        _out({"name": f"layout {shape}", "applies": applies, "equal": bool(torch.equal(a, A)),
                          "input_kept": bool(torch.equal(A, A0)), "col_major": bool(a.mT.is_contiguous())})
    A = torch.randn(2, 40, 30).mT
    a = torch.empty(2, 40, 30).mT
    _out({"name": "layout view", "applies": _triton_applies(A, a, True),
                      "equal": bool(torch.equal(load_column_major(A, a, backend="triton"), A))})
    # One group of look-ahead (EXPERIMENTS.md L2), its work in issue order on one stream:
    # the same factorization as the plain loop (groups of two, the row-split update on
    # both W buffers, n_active).
    import adaptqr.paths.householder as hh
    from adaptqr.paths.lanes import OneLane

    real = hh._lookahead_lanes
    took = []

    def one_lane(f, group):
        if f.s.lookahead and f.n > f.s.nb * group:
            took.append(f.s.lookahead)
            return OneLane()
        return None

    hh._lookahead_lanes = one_lane
    try:
        for sched, (B, m, n) in ((S, (2, 64, 64)), (S1, (2, 100, 90))):
            A = torch.randn(B, m, n)
            info = Info({"n_active": torch.tensor([n, n // 2 + 3, 0][:B], dtype=torch.int32)})
            took.clear()
            H1, t1 = run(A, dataclasses.replace(sched, lookahead=0), info)
            H2, t2 = run(A, dataclasses.replace(sched, lookahead=1), info)
            _out({"name": f"lookahead {B}x{m}x{n}", "took": list(took),
                  "err": float((H1 - H2).abs().max() / H1.abs().max()),
                  "tau": float((t1 - t2).abs().max()),
                  "bar": bool(check_geqrf(A[:1], H2[:1], t2[:1]).passes_bar)})
        # The row-split updates' W in two buffers a stream, each W kernel zeroing the next
        # update's (EXPERIMENTS.md T8): the same bits as a zeroing launch before each
        # update, with and without look-ahead (five updates: each buffer reused twice; the
        # bar on the matrix whose n_active is its n).
        A = torch.randn(2, 100, 90)
        info = Info({"n_active": torch.tensor([90, 48], dtype=torch.int32)})
        for la in (0, 1):
            H1, t1 = run(A, dataclasses.replace(S1, lookahead=la, w_pingpong=False), info)
            H2, t2 = run(A, dataclasses.replace(S1, lookahead=la, w_pingpong=True), info)
            # Each slice's sums stored and added in slice order (N26): the interpreter runs
            # the atomics in slice order too, so the same bits.
            H3, t3 = run(A, dataclasses.replace(S1, lookahead=la, w_partials=True), info)
            _out({"name": f"w pingpong lookahead {la}",
                  "same": bool(torch.equal(H1, H2) and torch.equal(t1, t2)),
                  "partials": bool(torch.equal(H1, H3) and torch.equal(t1, t3)),
                  "bar": bool(check_geqrf(A[:1], H2[:1], t2[:1]).passes_bar)})
    finally:
        hh._lookahead_lanes = real
    # The blocked update's grid, column tile first, and the batch-first grid that batches
    # past the grid's second axis take (EXPERIMENTS.md T2): the same programs in another
    # order, so the same bits; resident and streamed tiles.
    old = (schedules.RESIDENT_MAX_TILE, hh.MAX_GRID_Y)
    for resident, (B, m, n) in ((True, (3, 64, 64)), (False, (2, 72, 50))):
        schedules.RESIDENT_MAX_TILE = old[0] if resident else 16 * 16
        try:
            A = torch.randn(B, m, n)
            H1, t1 = run(A, S)
            hh.MAX_GRID_Y = 1
            H2, t2 = run(A, S)
        finally:
            schedules.RESIDENT_MAX_TILE, hh.MAX_GRID_Y = old
        _out({"name": f"batch-first grid {B}x{m}x{n}",
              "same": bool(torch.equal(H1, H2) and torch.equal(t1, t2)),
              "bar": bool(check_geqrf(A, H1, t1).passes_bar)})
    # Rows padded to ROW_ALIGN (EXPERIMENTS.md A1): the factorization of the zero-padded
    # copy against the matrix as it is (ROW_ALIGN 1), with the plain and row-split updates
    # and n_active; the m each factorization ran on is recorded.
    real_factor = hh._factor
    for tag, sched, (B, m, n), info in (
            ("plain", S, (2, 72, 50), None), ("split", S1, (3, 100, 90), None),
            ("n_active", S1, (2, 100, 90), Info({"n_active": torch.tensor([90, 37], dtype=torch.int32)}))):
        A = torch.randn(B, m, n)
        ms = []
        hh._factor = lambda *a: ms.append(a[9]) or real_factor(*a)
        old_align = schedules.ROW_ALIGN
        try:
            H1, t1 = run(A, sched, info)
            schedules.ROW_ALIGN = 1
            H2, t2 = run(A, sched, info)
        finally:
            hh._factor, schedules.ROW_ALIGN = real_factor, old_align
        _out({"name": f"row pad {tag} {B}x{m}x{n}", "ms": ms,
              "err": float((H2 - H1).abs().max() / H1.abs().max()),
              "tau": float((t2 - t1).abs().max()),
              "bar": bool(check_geqrf(A[:1], H1[:1], t1[:1]).passes_bar)})
    return records

@pytest.fixture(scope="module")
def results():
    return _cases()


# Half the public gates (spec/qr_v2.md): the project's bar on every matrix.
BAR_FACTOR, BAR_ORTH = 10.0, 50.0


def test_every_case_passes_the_bar(results):
    checked = [d for d in results.values() if "factor" in d]
    assert len(checked) >= 27 + 5 + 4 + 1
    for d in checked:
        assert d["finite"], d
        assert d["factor"] <= BAR_FACTOR and d["orth"] <= BAR_ORTH, d


def test_matches_lapack_on_well_conditioned_inputs(results):
    ref = [d for d in results.values() if "sign_ok" in d]
    assert len(ref) >= 12
    for d in ref:
        assert d["sign_ok"], d
        # R relative to max|A|, V and tau absolute (they are scale-free): float32 rounding.
        assert d["r_err"] < 1e-4 and d["v_err"] < 1e-3 and d["tau_err"] < 1e-4, d


@pytest.mark.parametrize("tiles", ["2048", "512"])
def test_separate_t_kernel_gives_the_same_factorization(results, tiles):
    d = results[f"t kernel {tiles}"]
    assert d["finite"] and d["tau_zero_col"] == 0.0, d
    assert d["h"] < 1e-5 and d["tau"] < 1e-6 and d["bar"], d
    # V^T V from the register panel's column steps against summed over the stored panel.
    assert d["h_sum"] < 1e-5 and d["tau_sum"] < 1e-6, d
    # T inside the panel kernels: from the w rows by doubling against V^T V and the recurrence.
    assert d["h_panel"] < 1e-5 and d["tau_panel"] < 1e-6, d


def test_scaled_inputs(results):
    for name in ("scaled 1e+30 n=24 small", "scaled 1e-30 n=24 small",
                 "scaled 1e+30 n=48 blocked", "scaled 1e-30 n=48 blocked"):
        d = results[name]
        assert d["finite"] and d["factor"] <= 1.0 and d["orth"] <= 5.0, d
        assert d["sign_ok"] and d["v_err"] < 1e-3 and d["tau_err"] < 1e-4, d


def test_zero_columns_give_tau_zero(results):
    d = results["zero cols"]
    assert d["tau3"] == 0.0
    assert d["tau_err"] < 1e-5 and d["h_err"] < 1e-4, d
    z = results["zero matrix"]
    assert z["h"] == 0.0 and z["tau"] == 0.0


def test_nan_propagates(results):
    d = results["nan"]
    assert d["nan0"] and d["finite1"]


@pytest.mark.parametrize("sc", ["1", "1e+30", "1e-30"])
def test_split_panel_matches_register_panel(results, sc):
    d = results[f"split panel {sc}"]
    assert d["finite"] and d["h"] < 1e-5 and d["tau"] < 1e-5 and d["t"] < 1e-4, d


@pytest.mark.parametrize("name", ["dense", "scaled", "odd", "collinear", "zero"])
def test_split_panel_column_pairs(results, name):
    d = results[f"pairs {name}"]
    assert d["finite"] and d["err2"] <= 4 * d["err1"] + 1e-6, d
    if name != "collinear":   # well conditioned: the two modes agree to rounding
        assert d["h"] < 1e-5 and d["tau"] < 1e-5 and d["t"] < 1e-4, d
    r = d["rounds"]
    if name in ("dense", "zero"):   # a round (barrier) every second column
        assert r == [1, 0] * (len(r) // 2), r
    if name == "odd":               # four pairs, then the ninth column alone
        assert r == [1, 0] * 4 + [1], r
    if name == "scaled":            # every column needs the scaled round: no pairs
        assert r == [1] * len(r) and d["rescaled"] == [1] * len(r), d
    if name == "collinear":         # column 21 (j = 5) gets a round of its own
        assert r[4:6] == [1, 1] and r.count(1) > len(r) // 2, r


@pytest.mark.parametrize("n", [96, 160])
def test_zero_tail_tiles_are_skipped_exactly(results, n):
    d = results[f"zero tail skip n={n}"]
    z = {96: 64, 160: 96}[n]
    # Matrix 0 has a tiny (not zero) block past z + 20, the others exact zeros past z.
    assert d["nz"][0] == n and all(v == z for v in d["nz"][1:]), d
    assert all(v == z for v in d["na"]), d
    assert d["same"] and d["bar"], d
    # N33: the tail dropped whole (n_kept = n_active), zero, the leading columns the same bits
    assert all(v == z for v in d["kept"]), d
    assert d["drop_bar"] and d["drop_zero"] and d["drop_head"], d


@pytest.mark.parametrize("n", [32, 64, 80])
def test_n_active(results, n):
    d = results[f"n_active n={n}"]
    assert d["full_err"] < 1e-4, d
    assert d["tau_tail"] == 0.0 and d["tau_zero"] == 0.0, d
    assert d["prefix_err"] < 1e-4 and d["tau_err"] < 1e-5, d
    assert d["tail_err"] < 1e-4, d
    assert d["zero_untouched"] == 0.0, d


@pytest.mark.parametrize("shape", ["(3, 70, 50)", "(2, 64, 130)", "(1, 1, 1)", "(2, 3, 33, 65)"])
def test_column_major_load(results, shape):
    r = results[f"layout {shape}"]
    assert r["applies"] and r["equal"] and r["input_kept"] and r["col_major"], r


def test_column_major_load_leaves_views_to_torch(results):
    r = results["layout view"]
    assert not r["applies"] and r["equal"], r


@pytest.mark.parametrize("name", ["row split plain 2x160x160", "row split n_active 2x160x160",
                                  "row split plain 3x120x100", "row split n_active 3x120x100"])
def test_row_split_update_matches_whole_column_update(results, name):
    d = results[name]
    assert d["err"] < 1e-5 and d["tau"] < 1e-5 and d["finite"] and d["bar"], d


@pytest.mark.parametrize("name", ["batch-first grid 3x64x64", "batch-first grid 2x72x50"])
def test_batch_first_grid_gives_the_same_bits(results, name):
    d = results[name]
    assert d["same"] and d["bar"], d


@pytest.mark.parametrize("name", ["lookahead 2x64x64", "lookahead 2x100x90"])
def test_lookahead_order_matches_the_plain_loop(results, name):
    d = results[name]
    assert d["took"] == [1], d  # the plain run did not take it, the look-ahead run did
    assert d["err"] < 1e-5 and d["tau"] < 1e-5 and d["bar"], d


@pytest.mark.parametrize("la", [0, 1])
def test_w_pingpong_gives_the_same_bits(results, la):
    d = results[f"w pingpong lookahead {la}"]
    assert d["same"] and d["bar"], d


@pytest.mark.parametrize("la", [0, 1])
def test_w_partials_give_the_same_bits(results, la):
    d = results[f"w pingpong lookahead {la}"]
    assert d["partials"], d


@pytest.mark.parametrize("name", ["row pad plain 2x72x50", "row pad split 3x100x90",
                                  "row pad n_active 2x100x90"])
def test_rows_padded_to_the_alignment_give_the_same_factorization(results, name):
    d = results[name]
    m = int(name.split("x")[-2])
    assert d["ms"] == [-(-m // 16) * 16, m], d  # padded, then (ROW_ALIGN 1) as it is
    assert d["err"] < 1e-5 and d["tau"] < 1e-5 and d["bar"], d
