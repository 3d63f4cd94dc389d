"""N29's follow-up probe (device script, EXPERIMENTS.md N29): why the row-split rest update's
``W = C^T V`` lost as one cuBLAS product at few large matrices, and whether splitting its
rows into ``S`` slices (a batched product over the slices, then a sum) recovers it.

Operands random, in the path's layout (``C16`` ``(B, n, m)``, ``V16`` ``(B, 32, m)``);
timed alone (L2 flushed, median of 25, CUDA events): the one product, and slices of the
rows as extra batch entries (strided views, no copy) summed by ``torch.sum``. The Triton
row-split W kernel took 52 us at 2x4096's first rest update (H27, ncu).

Run there: ``python3 bench/devscripts/w_splitk_proto.py``; ``--cpu`` checks the slicing.
"""

import sys

import torch


def sums(C16, V16, k, c0, S, out_dtype):
    """``W[b] = C[k:, c0:]^T V`` ``(B, n - c0, 32)``, the rows in ``S`` slices (the rows
    a multiple of S)."""
    B, n, m = C16.shape
    rows = m - k
    R = rows // S
    C = C16[:, c0:, k:]
    V = V16[:, :, k:]
    if S == 1:
        return (torch.bmm(C, V.mT, out_dtype=out_dtype) if out_dtype else torch.bmm(C, V.mT))
    # (B, S, cols, R) and (B, S, R, 32) as views: slice s starts R rows further on.
    Cs = C.as_strided((B, S, n - c0, R), (C.stride(0), R, C.stride(1), 1))
    Vs = V.as_strided((B, S, 32, R), (V.stride(0), R, V.stride(1), 1))
    a = Cs.flatten(0, 1)
    v = Vs.flatten(0, 1).mT
    P = torch.bmm(a, v, out_dtype=out_dtype) if out_dtype else torch.bmm(a, v)
    return P.view(B, S, n - c0, 32).sum(1)


def check_cpu():
    B, m, k, c0 = 2, 160, 32, 64
    C = torch.randn(B, m, m)
    V = torch.randn(B, 32, m)
    ref = torch.einsum("bcr,bjr->bcj", C[:, c0:, k:], V[:, :, k:])
    for S in (1, 2, 4):
        W = sums(C, V, k, c0, S, None)
        assert torch.allclose(W, ref, atol=1e-3), (S, (W - ref).abs().max())
    print("cpu slicing ok")


def timed(fn, reps=25):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    ts = []
    for _ in range(reps):
        flush.zero_()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def main():
    if "--cpu" in sys.argv:
        check_cpu()
        return
    for B, m, ks in ((1, 4096, (64, 1024, 2048, 3072)), (2, 4096, (64, 2048)),
                     (8, 2048, (64, 1024))):
        for k in ks:
            c0 = k + 64
            C16 = torch.randn(B, m, m, device="cuda").half()
            V16 = torch.randn(B, 32, m, device="cuda").half()
            ref = sums(C16, V16, k, c0, 1, torch.float32)
            row = []
            for S in (1, 4, 8, 16, 32):
                if (m - k) % S:
                    continue
                W = sums(C16, V16, k, c0, S, torch.float32)
                err = float((W - ref).abs().max() / ref.abs().max())
                t = timed(lambda: sums(C16, V16, k, c0, S, torch.float32))
                row.append(f"S={S}: {t:.1f} us (err {err:.0e})")
            tile = B * (m - c0) * (m - k) * 2
            print(f"{B}x{m} k={k} ({tile / 1e6:.0f} MB): " + ", ".join(row), flush=True)


if __name__ == "__main__":
    main()
