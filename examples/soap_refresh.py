"""SOAP's eigenbasis refresh three ways (issue 28): torch; ``adaptqr.patch()``, one
``adaptqr.linalg.qr`` a factor; and the refresh's QRs gathered across parameters into one
``adaptqr.linalg.foreach_qr`` (one batched call a shape).

The gathered variant is a SOAP subclass: during SOAP's own refresh code ``torch.linalg.qr``
only records its input and hands back a placeholder Q; after the step, one ``foreach_qr``
fills the placeholders. That is exact: SOAP refreshes a parameter's bases at the end of that
parameter's update, and the new bases are first read in the next step. The model is
issue 28's: 6 blocks of four 768x768 layers and a 768x3072 / 3072x768 MLP (factors of 768
and 3072).

Run (GPU; ``pip install pytorch-optimizer``)::

    python3 examples/soap_refresh.py
    python3 examples/soap_refresh.py --dim 64 --blocks 1 --steps 12 --device cpu   # smoke run
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sys

import torch

import adaptqr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soap_step import arguments, run, setup, summarize  # noqa: E402


@contextlib.contextmanager
def _swapped(owner, name, value):
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


def gathered_soap():
    """A SOAP whose refresh QRs run as one foreach_qr after each step."""
    from pytorch_optimizer import SOAP

    class GatheredSOAP(SOAP):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._pending: list[tuple[torch.Tensor, torch.Tensor]] = []

        def get_orthogonal_matrix_qr(self, state, *args, **kwargs):
            def deferred(A, mode="reduced"):
                if mode != "reduced" or A.shape[-2] != A.shape[-1] or A.dtype != torch.float32:
                    raise NotImplementedError("GatheredSOAP defers square float32 reduced QRs only")
                Q = torch.empty_like(A)
                self._pending.append((A.clone(), Q))
                return torch.return_types.linalg_qr((Q, A.new_empty(0)))

            with _swapped(torch.linalg, "qr", deferred):
                return super().get_orthogonal_matrix_qr(state, *args, **kwargs)

        @torch.no_grad()
        def step(self, closure=None):
            loss = super().step(closure)
            if self._pending:
                outs = adaptqr.linalg.foreach_qr([a for a, _ in self._pending])
                for (_, Q), out in zip(self._pending, outs):
                    Q.copy_(out.Q)
                self._pending.clear()
            return loss

    return GatheredSOAP


def main() -> int:
    p = arguments(__doc__.splitlines()[0], whose=False)  # its foreach variant subclasses pytorch-optimizer's
    p.add_argument("--json", help="also write the figures to this file")
    args = p.parse_args()
    device, base, data = setup(args)

    results = {}
    for name in ("torch", "patch", "foreach_qr"):
        model = copy.deepcopy(base)
        if name == "patch":
            with adaptqr.patched():
                results[name] = run(model, data, args.steps, args.freq, device)
        elif name == "foreach_qr":
            results[name] = run(model, data, args.steps, args.freq, device, gathered_soap())
        else:
            results[name] = run(model, data, args.steps, args.freq, device)

    ref = results["torch"][0]
    table = {}
    print("| variant | largest relative loss difference to torch | plain step (ms) | refresh step (ms) "
          "| refresh (ms) |")
    print("|---|---|---|---|---|")
    for name, (losses, times, refreshed) in results.items():
        worst = max(abs(a - b) / max(abs(a), 1e-30) for a, b in zip(ref, losses))
        plain, refresh = summarize(times, refreshed)
        table[name] = {"loss_rel_diff": worst, "plain_ms": plain, "refresh_step_ms": refresh,
                       "refresh_ms": refresh - plain, "losses": losses, "step_ms": times}
        print(f"| {name} | {worst:.2e} | {plain:.1f} | {refresh:.1f} | {refresh - plain:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "device": str(device), "results": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
