"""How much of a public call's time is the GPU waiting for the host (device script).

For each case (``--cases``: ``bench``, ``tests`` or a JSON file, as ``adaptqr bench``'s; its
generator, batch and seed), one public ``adaptqr.geqrf`` call is timed by CUDA events two
ways, each after an L2 flush, medians of ``--reps``:

* ``plain``: the GPU idle when the call starts, as at the start of each of ``adaptqr
  bench``'s repeats (a repeat is one call where the case times k = 1 input);
* ``ahead``: with ``torch.cuda._sleep`` enqueued first, long enough that the host has
  issued the whole call before the GPU reaches it; the events bracket the call alone.

``plain - ahead`` is the time the GPU spent waiting for launches: host-bound stretches
(Python, allocations, a graph's launch) that no kernel change removes. Run there:
``python3 bench/devscripts/host_ahead.py [--cases bench] [--reps 15] [--sleep-ms 8]``.
"""

from __future__ import annotations

import argparse
import statistics

import torch


def _time(call, flush, sleep_cycles: int) -> float:
    flush.zero_()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    if sleep_cycles:
        torch.cuda._sleep(sleep_cycles)
    e0.record()
    call()
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="bench")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--sleep-ms", type=float, default=8.0)
    args = ap.parse_args()
    import adaptqr
    from adaptqr.testing import case_name, load_cases, make_inputs

    clock_khz = torch.cuda.get_device_properties(0).clock_rate  # kHz
    cycles = int(args.sleep_ms * clock_khz)
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    cases = load_cases(args.cases)
    print(f"{'case':32s} {'plain ms':>9s} {'ahead ms':>9s} {'waiting':>8s}")
    for case in cases:
        A = make_inputs(case, 1, "cuda")[0]
        call = lambda: adaptqr.geqrf(A)  # noqa: E731
        for _ in range(4):
            call()
        plain = statistics.median(_time(call, flush, 0) for _ in range(args.reps))
        ahead = statistics.median(_time(call, flush, cycles) for _ in range(args.reps))
        print(f"{case_name(case):32s} {plain:9.3f} {ahead:9.3f} {plain - ahead:8.3f}")


if __name__ == "__main__":
    main()
