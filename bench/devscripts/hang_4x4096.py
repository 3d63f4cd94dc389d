"""Why did 4x4096 householder not finish in the C13 runs? Two direct calls, timed, with a stack
dump if one takes over 100 s (faulthandler), and which schedule the call takes."""
import faulthandler
import sys
import time

import torch

faulthandler.dump_traceback_later(100, exit=True)
from adaptqr.paths.householder import factor_householder, split_rows, _sm_count  # noqa: E402

B, n = int(sys.argv[1]), int(sys.argv[2])
print("sm", _sm_count(torch.device("cuda")), "split_rows(B, n, 32)", split_rows(B, n, 32, _sm_count(torch.device("cuda"))), flush=True)
A = torch.randn(B, n, n, device="cuda")
H = torch.empty_strided((B, n, n), (n * n, 1, n), device="cuda")
tau = torch.empty(B, n, device="cuda")
for i in range(3):
    H.copy_(A)
    torch.cuda.synchronize()
    t = time.time()
    factor_householder(H, tau, None)
    torch.cuda.synchronize()
    print(f"{B}x{n} call {i}: {time.time() - t:.3f} s", flush=True)
