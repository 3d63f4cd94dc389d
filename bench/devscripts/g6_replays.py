"""G6's replays on fresh inputs (device script, EXPERIMENTS.md G6): for batches between
256 MiB and 1 GiB, which now go through a graph, five calls on five inputs (the eager
first call, the capturing call, three replays), each result checked at the half gate in
float64, the replays' bits against an eager call on the same input (graphs off), and the
cache's bytes and eager reasons.

Run there: ``python3 bench/devscripts/g6_replays.py``.
"""

import os

import torch

import adaptqr
from adaptqr import graphs
from adaptqr.testing import check_geqrf, generate

SHAPES = [(320, 512, 2, "mixed"), (100, 1024, 2, "dense"), (6, 4096, 1, "dense"),
          (300, 600, 0, "rankdef"), (600, 512, 0, "clustered")]


def main():
    bad = 0
    for B, n, cond, case in SHAPES:
        graphs.clear()
        graphs.reset_stats()
        rows = []
        for i in range(5):
            A = generate(B, n, cond, 4100 + 7 * i + n, case)
            H, tau = adaptqr.geqrf(A)
            r = check_geqrf(A, H, tau)
            same = ""
            if i >= 2:
                os.environ["ADAPTQR_GRAPHS"] = "0"
                try:
                    He, te = adaptqr.geqrf(A)
                finally:
                    del os.environ["ADAPTQR_GRAPHS"]
                same = f" eager-diff {float((H - He).abs().max()):.2e}/{float((tau - te).abs().max()):.2e}"
            ok = r.passes_bar
            bad += not ok
            rows.append(f"call {i}: bar {'ok' if ok else 'FAIL'} factor {r.worst_factor:.3g} "
                        f"orth {r.worst_orth:.3g}{same}")
            del A, H, tau
        st = graphs.stats()
        print(f"{B}x{n} {case}: captures {st['captures']} hits {st['hits']} bytes "
              f"{st['bytes'] / 2**20:.0f} MiB eager {st['eager_reasons']}")
        for row in rows:
            print("   " + row)
        torch.cuda.empty_cache()
    print("replays:", "all at the bar" if not bad else f"{bad} FAILED")


if __name__ == "__main__":
    main()
