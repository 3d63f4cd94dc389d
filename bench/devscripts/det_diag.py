"""The deterministic mode's cost, with and without N26's ordered partials (device script,
EXPERIMENTS.md N26).

Per shape, ``adaptqr.geqrf`` timed as the bench times it (L2 flushed, inputs rotated,
device events; median ms a call): outside the mode (``default``), under
``torch.use_deterministic_algorithms(True)`` as main runs it (``det``: no update split over
rows) and there with the knob ``w_partials=1`` (``det+wp``), and the knob alone (``wp``).

Run there: ``python3 bench/devscripts/det_diag.py``.
"""

import torch

import adaptqr
from adaptqr import config
from adaptqr.bench.timing import StopRule, time_calls
from adaptqr.testing.generators import make_inputs

RULE = StopRule(max_repeats=40, budget_s=3.0)
SHAPES = [(8, 2048, 1), (2, 4096, 1), (1, 4096, 1), (4, 3072, 1), (60, 1024, 2), (65, 512, 2)]


def _ms(inputs):
    for a in inputs:
        adaptqr.geqrf(a)
    return time_calls(adaptqr.geqrf, inputs, RULE).median_ms


def main():
    for B, n, cond in SHAPES:
        xs = make_inputs({"batch": B, "n": n, "cond": cond, "seed": 9100 + n})
        row = {"default": _ms(xs)}
        with config.experiment(w_partials=1):
            row["wp"] = _ms(xs)
        torch.use_deterministic_algorithms(True)
        try:
            row["det"] = _ms(xs)
            with config.experiment(w_partials=1):
                row["det+wp"] = _ms(xs)
        finally:
            torch.use_deterministic_algorithms(False)
        print(f"{B}x{n}: " + "  ".join(f"{k} {v:.4f}" for k, v in row.items()), flush=True)
        del xs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
