"""What a trailing launch costs when none of its matrices takes its route (device script,
EXPERIMENTS.md N22): the FP16 route's two launches an update (``F16_SKIP`` for the FP32
route, ``F16_ONLY`` for the FP16 one) exit at once for a matrix of the other route, and
at 640x512 every matrix is FP16-routed, so each update's ``F16_SKIP`` launch is empty.
The run 0536 trace shows such launches at ~55 us each, on both streams' chains.

Timed with CUDA events over launches enqueued back to back behind a GPU sleep (no host
time between them), 640x512-shaped inputs (no flush):
the empty SKIP launch as ``_trailing`` issues it (grids (1, 640) and (6, 640)), the same
with fewer stages, an empty ONLY launch (every scale 0), and a trivial kernel of the same
grid that loads one scale and exits; then a real pair launch alone and after an empty SKIP.

Run there: ``python3 bench/devscripts/empty_launch.py``.
"""

import torch
import triton
import triton.language as tl

from adaptqr.paths.kernels.trailing import trailing_kernel


@triton.jit
def _trivial(SC, out):
    b = tl.program_id(1)
    sc = tl.load(SC + b)
    if sc == 0.0:
        tl.store(out + b, sc)


def _time(fn, reps=20, rounds=5):
    """GPU microseconds a launch: ``reps`` launches back to back, enqueued while the GPU
    sleeps before the first event (so no host time is between them), median of rounds."""
    fn()
    torch.cuda.synchronize()
    res = []
    for _ in range(rounds):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(40_000_000)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        torch.cuda.synchronize()
        res.append(a.elapsed_time(b) * 1000 / reps)
    res.sort()
    return res[len(res) // 2]


def main():
    B, m, n = 640, 512, 512
    Ht = torch.zeros(B, n, m, device="cuda")
    TW = torch.zeros(B, n // 32, 32, 32, device="cuda")
    na = torch.full((B,), n, dtype=torch.int32, device="cuda")
    C16 = torch.zeros(B, n, m, dtype=torch.float16, device="cuda")
    sc16 = torch.full((B,), 1024.0, device="cuda")
    sc32 = torch.zeros(B, device="cuda")
    out = torch.zeros(B, device="cuda")

    def launch(tiles, bn, mode, SC, stages=3, c_start=64, c_end=128, pair=False):
        trailing_kernel[(tiles, B)](Ht, TW, na, na, C16, SC, 0, 2, m, n, c_start, c_end, n // 32, C16, C16,
                                    NB=32, BN=bn, BM=64, RESIDENT=False, HAS_NA=True,
                                    PREC="tf32x3", PREC_TAIL="tf32", F16=mode, BM16=64,
                                    PAIR16=pair, TILE_MAJOR=True, num_warps=4,
                                    num_stages=stages)

    rows = [
        ("SKIP (1, 640), 3 stages", lambda: launch(1, 64, 1, sc16)),
        ("SKIP (6, 640), 3 stages", lambda: launch(6, 64, 1, sc16, c_end=512)),
        ("SKIP (1, 640), 1 stage", lambda: launch(1, 64, 1, sc16, stages=1)),
        ("ONLY pair (1, 640) empty", lambda: launch(1, 64, 2, sc32, stages=2, pair=True)),
        ("ONLY pair (3, 640) empty", lambda: launch(3, 128, 2, sc32, stages=2, c_end=512,
                                                    pair=True)),
        ("trivial (1, 640)", lambda: _trivial[(1, B)](sc16, out)),
        ("trivial (6, 640)", lambda: _trivial[(6, B)](sc16, out)),
    ]
    for name, fn in rows:
        print(f"{name:28s} {_time(fn):8.1f} us")
    from adaptqr.paths.kernels import panel_cuda

    tau = torch.zeros(B, n, device="cuda")

    def panel():
        panel_cuda.launch(Ht, tau, TW, na, 64, m, n, 32, 2, n // 32, 32, 512, True, 0.0,
                          fuse=True)

    skip = lambda: launch(1, 64, 1, sc16)  # noqa: E731
    skip1 = lambda: launch(1, 64, 1, sc16, stages=1)  # noqa: E731
    triv = lambda: _trivial[(1, B)](sc16, out)  # noqa: E731
    pair = lambda: launch(1, 64, 2, sc16, stages=2, pair=True)  # noqa: E731
    print(f"{'ONLY pair (1, 640) real':28s} {_time(pair):8.1f} us")
    print(f"{'SKIP + ONLY pair (1, 640)':28s} "
          f"{_time(lambda: (launch(1, 64, 1, sc16), pair())):8.1f} us")
    # Sequences as the look-ahead chain runs them: does an empty launch cost more after
    # a kernel of another kind (the shared-memory carveout, the CUDA C module)?
    for name, fns in (("panel", [panel]), ("panel + SKIP", [panel, skip]),
                      ("panel + SKIP 1 stage", [panel, skip1]), ("panel + trivial", [panel, triv]),
                      ("panel + pair", [panel, pair]), ("trivial + SKIP", [triv, skip]),
                      ("pair + SKIP", [pair, skip])):
        print(f"{name:28s} {_time(lambda fns=fns: [f() for f in fns]):8.1f} us")

if __name__ == "__main__":
    main()
