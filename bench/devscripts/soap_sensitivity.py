"""How far SOAP's losses drift under another correct rounding of the same QR: the SOAP
example's run (examples/soap_step.py, pytorch-optimizer's SOAP) with torch's float32
``torch.linalg.qr``, and again with Q and R computed in float64 and rounded to float32.
Their largest relative loss difference is the yardstick for the example's torch / adaptqr
difference (EXPERIMENTS.md V9). Runs anywhere; on the CPU at the example's size, ~10 min::

    PYTHONPATH=<pytorch-optimizer> python3 bench/devscripts/soap_sensitivity.py --device cpu
"""

from __future__ import annotations

import copy
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from soap_step import arguments, run, setup, soap_class  # noqa: E402


def main() -> None:
    args = arguments(__doc__.splitlines()[0], whose=False).parse_args()
    device, base, data = setup(args)
    soap = soap_class("pytorch-optimizer")
    plain = torch.linalg.qr

    def qr64(A, mode="reduced", *, out=None):
        Q, R = plain(A.double(), mode=mode)
        return Q.to(A.dtype), R.to(A.dtype)

    losses = {}
    for name, qr in (("float32", plain), ("float64, rounded", qr64)):
        torch.linalg.qr = qr
        try:
            losses[name] = run(copy.deepcopy(base), data, args.steps, args.freq, device, soap)[0]
        finally:
            torch.linalg.qr = plain
    a, b = losses.values()
    print("step  loss (float32 QR)  loss (float64 QR, rounded)  relative")
    for i, (x, y) in enumerate(zip(a, b)):
        print(f"{i:4d}  {x:.9e}  {y:.9e}  {abs(x - y) / abs(x):.2e}")
    print(f"largest relative loss difference: {max(abs(x - y) / abs(x) for x, y in zip(a, b)):.2e}")


if __name__ == "__main__":
    main()
