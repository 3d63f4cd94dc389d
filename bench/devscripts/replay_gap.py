"""Session 37: the idle gap before a replay's first kernel (rankdef / clustered 640x512).

Per case: 3 warm-up calls (capture), then one call under torch.profiler, L2 flushed first:
its host events over 20 us (the launches and the graph launch, in microseconds from the
first event); then 10 calls timed without the profiler, as host return time and device
events. Run there:
``python3 bench/devscripts/replay_gap.py``.
"""

from __future__ import annotations

import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

import adaptqr
from adaptqr.testing import generate

CASES = [("dense", 2.0, 1029), ("rankdef", 0.0, 770003), ("clustered", 0.0, 770004),
         ("mixed", 2.0, 770001)]


def main():
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    for case, cond, seed in CASES:
        A = generate(640, 512, cond, seed, case, "cuda")
        for _ in range(3):
            adaptqr.geqrf(A)
        torch.cuda.synchronize()
        flush.zero_()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            adaptqr.geqrf(A)
            torch.cuda.synchronize()
        evs = [e for e in prof.events() if e.time_range.elapsed_us() > 0
               and e.device_type == torch.autograd.DeviceType.CPU]
        t0 = min(e.time_range.start for e in evs)
        print(f"== {case}")
        for e in sorted(evs, key=lambda e: e.time_range.start):
            if e.time_range.elapsed_us() > 20:
                print(f"  cpu {e.time_range.start - t0:9.1f} {e.time_range.elapsed_us():8.1f}  {e.name[:70]}")
        host, dev = [], []
        for _ in range(10):
            torch.cuda.synchronize()
            flush.zero_()
            s, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            h0 = time.perf_counter()
            s.record()
            adaptqr.geqrf(A)
            t.record()
            host.append((time.perf_counter() - h0) * 1e3)
            torch.cuda.synchronize()
            dev.append(s.elapsed_time(t))
        print(f"  host return {statistics.median(host):.3f} ms, device {statistics.median(dev):.3f} ms")


if __name__ == "__main__":
    main()
