"""OC26 family 1 after N27, a feasibility probe (device script, EXPERIMENTS.md N28): the FP16
pair rest update's slow half, its reduction ``W = C^T [V1 V2]`` (N25: the Y launch is 70-80 %
of the pair kernel), as one cuBLAS batched product with float16 operands and a float32
result (``torch.bmm(..., out_dtype=torch.float32)``), and the update half ``C^T -= Y V^T``
as a cuBLAS ``baddbmm_`` into the float16 copy, on the shapes of the rest updates.

Not the library's code: operands are random, in the layout the path keeps (``C16``
``(B, n, m)``, a column of C a row; ``V16`` ``(B, 64, m)``, :func:`v16_kernel`'s), and the
update has one scale for the batch (the path's ``ys`` is per tile). The question: how long
do the two products take at 640x512 (k = 64 .. 320) and 60x1024, against the Triton pair
kernel's 350 / 287 / 175 / 69 us at k = 64 / 128 / 192 / 320 (run 1153, alone)?

Run there: ``python3 bench/devscripts/blas_w_proto.py``; ``--cpu`` checks the slicing in
float32 on the host (``out_dtype`` is CUDA-only).
"""

import sys

import torch


def operands(B, m, n, k, dtype, device):
    g = torch.Generator(device=device).manual_seed(k + 7)
    C16 = torch.randn(B, n, m, generator=g, device=device).to(dtype)
    V16 = torch.randn(B, 64, m, generator=g, device=device).to(dtype)
    return C16, V16


def w_product(C16, V16, k, out_dtype):
    """``W[b] = C[k:, k+64:]^T [V1 V2]``: ``(B, n - k - 64, 64)``."""
    a = C16[:, k + 64:, k:]
    v = V16[:, :, k:].transpose(1, 2)
    if out_dtype is None:
        return torch.bmm(a, v)
    return torch.bmm(a, v, out_dtype=out_dtype)


def u_product(C16, V16, Y16, k):
    """``C^T[k+64:, k:] -= Y V^T`` in place (one scale for the batch)."""
    C16[:, k + 64:, k:].baddbmm_(Y16, V16[:, :, k:], alpha=-1.0)


def check_cpu():
    B, m, n, k = 3, 96, 96, 16
    C, V = operands(B, m, n, k, torch.float32, "cpu")
    W = w_product(C, V, k, None)
    ref = torch.einsum("bcr,bjr->bcj", C[:, k + 64:, k:], V[:, :, k:])
    assert torch.allclose(W, ref, atol=1e-4), (W - ref).abs().max()
    Y = torch.randn(B, n - k - 64, 64)
    want = C.clone()
    want[:, k + 64:, k:] -= torch.einsum("bcj,bjr->bcr", Y, V[:, :, k:])
    u_product(C, V, Y, k)
    assert torch.allclose(C, want, atol=1e-4)
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
    for B, m, ks in ((640, 512, (0, 64, 128, 192, 320)), (60, 1024, (64, 256, 512))):
        n = m
        for k in ks:
            C16, V16 = operands(B, m, n, k, torch.float16, "cuda")
            W = w_product(C16, V16, k, torch.float32)
            ref = torch.bmm(C16[:, k + 64:, k:].float(), V16[:, :, k:].float().transpose(1, 2))
            err = ((W - ref).abs().max() / ref.abs().max()).item()
            tw = timed(lambda: w_product(C16, V16, k, torch.float32))
            Y16 = (W / W.abs().amax()).to(torch.float16)
            tu = timed(lambda: u_product(C16, V16, Y16, k))
            tile = B * (n - k - 64) * (m - k) * 2
            print(f"{B}x{m} k={k}: W bmm {tw:.1f} us ({tile / tw / 1e6:.2f} TB/s of tile), "
                  f"U baddbmm {tu:.1f} us ({2 * tile / tu / 1e6:.2f} TB/s), "
                  f"sum {tw + tu:.1f} us; W rel err {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
