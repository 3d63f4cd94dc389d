"""What the clustered case's tail costs now, and the floor under any tail scheme (device
script; EXPERIMENTS.md D3's question again, OC41).

Whole ``adaptqr.geqrf`` calls, each captured in a CUDA graph, replays alternating (median
of 15, ms): 640x512 dense (cond 2, the bench seed), clustered as routed, and clustered with
the route's ``n_nonzero`` set to ``n_active``, so that no update touches the tail columns.
That last one is **not a valid result** (the tail keeps the input's values): it times the
floor, what the call would take if its tail cost nothing. Run there:
``python3 bench/devscripts/tail_floor.py``.
"""

from __future__ import annotations

import os

os.environ["ADAPTQR_GRAPHS"] = "0"  # the captures below are the only graphs

from hp_host import alternate, capture  # noqa: E402  (this script's folder is on the path when it is run)

import adaptqr  # noqa: E402
import adaptqr.detectors as det  # noqa: E402
from adaptqr.testing import check_geqrf  # noqa: E402
from adaptqr.testing.generators import generate  # noqa: E402

_ROUTE = det.route


def _no_tail(*args, **kwargs):
    routes, feats = _ROUTE(*args, **kwargs)
    feats = dict(feats)
    feats["n_nonzero"] = feats["n_active"].clone()
    return routes, feats


def main() -> None:
    dense = generate(640, 512, 2.0, 1029, "dense")
    clustered = generate(640, 512, 0.0, 770004, "clustered")
    rankdef = generate(640, 512, 0.0, 770003, "rankdef")
    graphs = {}
    for name, A, floor in (("dense", dense, False), ("rankdef", rankdef, False),
                           ("clustered", clustered, False), ("clustered floor", clustered, True)):
        det.route = _no_tail if floor else _ROUTE
        H, tau = adaptqr.geqrf(A)
        if not floor:
            r = check_geqrf(A, H, tau)
            assert r.passes_bar, f"{name}: {r.summary}"
        graphs[name] = capture(lambda A=A: adaptqr.geqrf(A), 1)
    det.route = _ROUTE
    med = alternate(graphs)
    for name, t in med.items():
        print(f"{name:16s} {t:.4f} ms  {t / med['dense']:.3f}x dense")


if __name__ == "__main__":
    main()
