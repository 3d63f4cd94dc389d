"""SOAP (pytorch-optimizer's, or HeavyBall's) on small transformer-shaped residual blocks, with
and without ``adaptqr.patch()`` (issue 25).

SOAP refreshes its eigenbases every ``precondition_frequency`` steps with one
``torch.linalg.qr`` a factor, looked up at call time, so ``adaptqr.patch()`` reaches it
(HeavyBall's runs inside its ``torch.compile``d functions: torch.compile guards on the
patched function, recompiles, and calls adaptqr's op). The two runs start from the same
weights and see the same data. Their losses agree to the bit until the first refresh whose
Q differs in its last bits, then drift apart as much as any other rounding of the same QR
makes them (about 3e-3 relative by step 20 at the default size, torch's float32 QR against
float64's: bench/devscripts/soap_sensitivity.py). Printed:
both runs' losses, and per run the median time of a plain step, of a step with a refresh,
and of the refresh alone (their difference).

Run (GPU; ``pip install pytorch-optimizer``, or ``heavyball`` for ``--optimizer heavyball``)::

    python3 examples/soap_step.py                  # dim 768, 6 blocks: factors 768 and 3072
    python3 examples/soap_step.py --optimizer heavyball   # --compile-mode none: no torch.compile
    python3 examples/soap_step.py --dim 128 --blocks 1 --steps 6 --device cpu   # a smoke run
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

import adaptqr


class Block(torch.nn.Module):
    """A transformer block's weights without attention's softmax: four dim x dim layers and
    a dim -> 4 dim -> dim MLP, each behind a parameter-free LayerNorm on a residual branch
    (a plain stack of 36 such layers shrinks its output to nothing, so its loss, and SOAP's
    effect on it, would not move)."""

    def __init__(self, dim: int):
        super().__init__()
        self.mix = torch.nn.Sequential(*(torch.nn.Linear(dim, dim, bias=False) for _ in range(4)))
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim, bias=False), torch.nn.GELU(),
                                       torch.nn.Linear(4 * dim, dim, bias=False))
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = torch.nn.functional.layer_norm
        x = x + self.mix(norm(x, (self.dim,)))
        return x + self.mlp(norm(x, (self.dim,)))


def make_model(dim: int, blocks: int) -> torch.nn.Module:
    """``blocks`` :class:`Block` s: SOAP's factors are dim x dim and 4 dim x 4 dim."""
    return torch.nn.Sequential(*(Block(dim) for _ in range(blocks)))


#: Each SOAP's learning rate on this model. HeavyBall's SOAP diverges at pytorch-optimizer's
#: 3e-3 on dim 768, 6 blocks (loss 2.3 -> 283 by step 6 with torch's own QR, on the CPU as
#: on the GPU); at 1e-3 it trains like pytorch-optimizer's at 3e-3 (2.3 -> 0.58 by step 7).
LEARNING_RATES = {"pytorch-optimizer": 3e-3, "heavyball": 1e-3}


def soap_class(name: str, compile_mode: str = "default"):
    """The SOAP optimizer class of ``name``: ``"pytorch-optimizer"`` or ``"heavyball"``;
    ``compile_mode``: HeavyBall's ``torch.compile`` mode for its fused functions ("none":
    eager; its own default, "max-autotune-no-cudagraphs", autotunes for minutes)."""
    if name == "heavyball":
        import heavyball
        import heavyball.utils

        heavyball.utils.compile_mode = None if compile_mode == "none" else compile_mode
        return heavyball.SOAP
    from pytorch_optimizer import SOAP

    return SOAP


def run(model: torch.nn.Module, data, steps: int, freq: int, device: torch.device, optimizer=None,
        lr: float = LEARNING_RATES["pytorch-optimizer"]):
    """Losses, per-step times (ms) and per-step refresh flags of SOAP (``optimizer``: a
    SOAP class or subclass; default pytorch-optimizer's) at ``lr`` on ``model``. A step refreshed
    where HeavyBall says so (``_is_preconditioning``), else at ``step % freq == 0``
    (pytorch-optimizer's, counting from 1 after its first step)."""
    opt = (optimizer or soap_class("pytorch-optimizer"))(model.parameters(), lr=lr,
                                                         precondition_frequency=freq)
    losses, times, refreshed = [], [], []
    for step in range(steps):
        x, y = data[step % len(data)]
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(float(loss.detach()))
        said = getattr(opt, "_is_preconditioning", None)
        refreshed.append(bool(said) if said is not None else step % freq == 0)
    return losses, times, refreshed


def summarize(times: list[float], refreshed: list[bool]) -> tuple[float, float]:
    """Median ms of plain steps and of refresh steps (the first two steps warm up and are
    left out)."""
    plain = [t for i, (t, r) in enumerate(zip(times, refreshed)) if i >= 2 and not r]
    refresh = [t for i, (t, r) in enumerate(zip(times, refreshed)) if i >= 2 and r]
    return (statistics.median(plain) if plain else float("nan"),
            statistics.median(refresh) if refresh else float("nan"))


def arguments(description: str, whose: bool = True) -> argparse.ArgumentParser:
    """The model, run and device options both SOAP examples take; ``whose``: the
    ``--optimizer`` choice too."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--blocks", type=int, default=6)
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--freq", type=int, default=5, help="SOAP's precondition_frequency")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    if whose:
        p.add_argument("--optimizer", choices=("pytorch-optimizer", "heavyball"),
                       default="pytorch-optimizer", help="whose SOAP")
        p.add_argument("--lr", type=float, default=None,
                       help="learning rate (default: LEARNING_RATES of the optimizer)")
        p.add_argument("--compile-mode", default="default",
                       help="HeavyBall's torch.compile mode (\"none\": eager)")
    return p


def setup(args) -> tuple[torch.device, torch.nn.Module, list]:
    """The device, the initial model and the data batches (seeded: every run sees the same).
    The targets are a fixed random linear map of the inputs, which the model can learn."""
    device = torch.device(args.device)
    torch.manual_seed(0)
    base = make_model(args.dim, args.blocks).to(device)
    g = torch.Generator(device=device).manual_seed(1)
    teacher = torch.randn(args.dim, args.dim, device=device, generator=g) / args.dim ** 0.5
    xs = [torch.randn(args.batch, args.dim, device=device, generator=g) for _ in range(4)]
    return device, base, [(x, x @ teacher) for x in xs]


def main() -> int:
    args = arguments(__doc__.splitlines()[0]).parse_args()
    device, base, data = setup(args)

    soap = soap_class(args.optimizer, args.compile_mode)
    lr = args.lr or LEARNING_RATES[args.optimizer]
    results = {}
    for name in ("torch", "adaptqr"):
        model = copy.deepcopy(base)
        if name == "adaptqr":
            with adaptqr.patched():
                results[name] = run(model, data, args.steps, args.freq, device, soap, lr)
        else:
            results[name] = run(model, data, args.steps, args.freq, device, soap, lr)

    lt, la = results["torch"][0], results["adaptqr"][0]
    print("step  loss (torch)     loss (adaptqr)   |diff|")
    for i, (a, b) in enumerate(zip(lt, la)):
        print(f"{i:4d}  {a:.9e}  {b:.9e}  {abs(a - b):.2e}")
    worst = max(abs(a - b) / max(abs(a), 1e-30) for a, b in zip(lt, la))
    print(f"largest relative loss difference: {worst:.2e}")
    print()
    print(f"SOAP of {args.optimizer} at lr {lr:g}, {sum(results['torch'][2])} refresh steps of "
          f"{args.steps}")
    print("| run | plain step (ms) | step with a refresh (ms) | refresh (ms) |")
    print("|---|---|---|---|")
    for name, (_, times, refreshed) in results.items():
        plain, refresh = summarize(times, refreshed)
        print(f"| {name} | {plain:.1f} | {refresh:.1f} | {refresh - plain:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
