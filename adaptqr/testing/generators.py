"""The qr_v2 input generator (spec/qr_v2.md, "Generating a case").

Every profile draws from one ``torch.Generator`` seeded with the case's seed, in the
spec's order, so a case dict names one exact tensor per device type (CUDA and CPU
generators give different numbers; each is deterministic).

Profiles: ``dense``, ``upper``, ``diagonal``, ``rankdef``, ``nearrank``, ``clustered``,
``band``, ``nearcollinear``, ``rowscale`` and ``mixed`` (a per-matrix draw over seven of
them). ``diagonal`` is not in spec/qr_v2.md; it is the public task's tenth profile
(random-sign diagonal with a logspace(0, -max(cond, 2)) magnitude) and no listed case
uses it.

Example::

    >>> from adaptqr.testing.generators import generate, inputs_per_case
    >>> A = generate(4, 16, cond=2, seed=7, case="mixed", device="cpu")
    >>> A.shape, A.dtype, A.is_contiguous()
    (torch.Size([4, 16, 16]), torch.float32, True)
    >>> inputs_per_case(640, 512)
    1
"""

from __future__ import annotations

from typing import Mapping

import torch

__all__ = [
    "PROFILES",
    "MIXED_PROFILES",
    "MIXED_WEIGHTS",
    "generate",
    "make_inputs",
    "inputs_per_case",
    "input_seed",
]

EPS32 = float(torch.finfo(torch.float32).eps)  # 2**-23

#: Every profile ``generate`` accepts.
PROFILES = (
    "dense", "upper", "diagonal", "rankdef", "nearrank", "clustered",
    "band", "nearcollinear", "rowscale", "mixed",
)
#: The profiles a ``mixed`` batch draws from, in the order they are applied; label k is
#: ``MIXED_PROFILES[k]`` (0 is dense).
MIXED_PROFILES = ("dense", "rankdef", "nearrank", "clustered", "band", "rowscale", "nearcollinear")
MIXED_WEIGHTS = (6.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)

#: The benchmark rotates through this much input data per case (spec: 256 MiB) ...
ROTATION_BYTES = 256 * 1024 * 1024
#: ... but never more than this many inputs.
MAX_INPUTS = 50
#: Input i of a case uses seed ``seed + SEED_STRIDE * (i + 1)``.
SEED_STRIDE = 42


def _colscale(a: torch.Tensor, cond: float) -> torch.Tensor:
    if cond > 0:
        n = a.shape[-1]
        return a * torch.logspace(0.0, -float(cond), n, dtype=torch.float32, device=a.device)
    return a


def _apply(a: torch.Tensor, case: str, cond: float, gen: torch.Generator) -> torch.Tensor:
    """One profile on a (b, n, n) float32 batch; may draw more numbers from ``gen``."""
    b, n = a.shape[0], a.shape[-1]
    dev = a.device
    if case == "dense":
        return _colscale(a, cond)
    if case == "upper":
        a = torch.triu(a)
        a.diagonal(dim1=-2, dim2=-1).add_(torch.linspace(1.0, 0.25, n, device=dev))
        return _colscale(a, cond)
    if case == "diagonal":
        d = torch.randn((b, n), generator=gen, device=dev)
        sign = torch.where(d > 0, 1.0, -1.0)
        mag = torch.logspace(0.0, -float(max(cond, 2)), n, dtype=torch.float32, device=dev)
        return torch.diag_embed(sign * mag)
    if case == "rankdef":
        r = max(1, 3 * n // 4)
        a[:, :, r:] = 0.0
        return _colscale(a, cond)
    if case == "nearrank":
        r = max(1, 3 * n // 4)
        t = n - r
        if t > 0:
            noise = torch.randn((b, n, t), generator=gen, device=dev)
            a[:, :, r:] = a[:, :, :t] + 1e-5 * noise
        return _colscale(a, cond)
    if case == "clustered":
        scales = torch.ones(n, dtype=torch.float32, device=dev)
        scales[n // 2:] = 4.0 * EPS32
        if n >= 8:
            scales[max(0, n // 2 - 2): min(n, n // 2 + 2)] = EPS32 ** 0.5
        return a * scales
    if case == "band":
        bw = max(2, min(32, n // 32))
        idx = torch.arange(n, device=dev)
        a = a * ((idx[:, None] - idx[None, :]).abs() <= bw)
        a.diagonal(dim1=-2, dim2=-1).add_(torch.linspace(1.0, 0.5, n, device=dev))
        return _colscale(a, cond)
    if case == "nearcollinear":
        base = torch.randn((b, n, 1), generator=gen, device=dev)
        noise = torch.randn((b, n, n), generator=gen, device=dev)
        return _colscale(base + 1e-4 * noise, cond)
    if case == "rowscale":
        rows = torch.logspace(0.0, -float(max(cond, 4)), n, dtype=torch.float32, device=dev)
        return rows[:, None] * a
    raise ValueError(f"unknown qr_v2 case {case!r}; expected one of {', '.join(PROFILES)}")


def _mixed(a: torch.Tensor, cond: float, gen: torch.Generator) -> torch.Tensor:
    b = a.shape[0]
    dev = a.device
    weights = torch.tensor(MIXED_WEIGHTS, dtype=torch.float32, device=dev)
    labels = torch.multinomial(weights, b, replacement=True, generator=gen)
    if b >= 2:
        dense = labels == 0
        # A generator, not a hot path: host syncs are fine here.
        if not bool(dense.any()):
            labels[int(torch.randint(0, b, (1,), generator=gen, device=dev))] = 0
        elif bool(dense.all()):
            pos = int(torch.randint(0, b, (1,), generator=gen, device=dev))
            labels[pos] = int(torch.randint(1, len(MIXED_PROFILES), (1,), generator=gen, device=dev))
    for k, profile in enumerate(MIXED_PROFILES):
        mask = labels == k
        if bool(mask.any()):
            a[mask] = _apply(a[mask], profile, cond, gen)
    return a


def generate(batch: int, n: int, cond: float, seed: int, case: str = "dense",
             device: str | torch.device = "cuda", m: int | None = None) -> torch.Tensor:
    """The qr_v2 input ``{batch, n, cond, seed, case}``: float32 ``(batch, n, n)``, contiguous.

    ``device="cpu"`` works too (CPU tests, CPU bench); its numbers differ from CUDA's.
    ``m`` (the dense profile only): a ``(batch, m, n)`` input, tall as an optimizer's ``d x
    r`` power-iteration block (issue 25's optimizer shapes) or wide (issue 26).

    >>> generate(2, 8, cond=0, seed=1, case="rankdef", device="cpu")[:, :, 6:].abs().max().item()
    0.0
    """
    if batch < 1 or n < 1:
        raise ValueError(f"qr_v2 case needs batch >= 1 and n >= 1, got batch={batch}, n={n}")
    if cond < 0:
        raise ValueError(f"qr_v2 case needs cond >= 0, got cond={cond}")
    case = (case or "dense").lower()
    if case not in PROFILES:
        raise ValueError(f"unknown qr_v2 case {case!r}; expected one of {', '.join(PROFILES)}")
    m = n if m is None else int(m)
    if m < 1 or (m != n and case != "dense"):
        raise ValueError(f"qr_v2 case with m={m} rows and n={n}: rectangular inputs are dense only")
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(int(seed))
    a = torch.randn((batch, m, n), generator=gen, device=device, dtype=torch.float32)
    a = _mixed(a, cond, gen) if case == "mixed" else _apply(a, case, cond, gen)
    return a.contiguous()


def inputs_per_case(batch: int, n: int, m: int | None = None) -> int:
    """How many rotated inputs the benchmark times for a case (spec: 256 MiB of data, 1..50);
    ``m``: the rows of a tall case.

    >>> inputs_per_case(20, 32), inputs_per_case(60, 1024), inputs_per_case(1, 4096)
    (50, 1, 4)
    """
    return max(1, min(MAX_INPUTS, ROTATION_BYTES // (batch * (m or n) * n * 4)))


def input_seed(seed: int, i: int) -> int:
    """Seed of the i-th rotated input of a case whose seed is ``seed``."""
    return int(seed) + SEED_STRIDE * (i + 1)


def make_inputs(case: Mapping, k: int | None = None, device: str | torch.device = "cuda") -> list[torch.Tensor]:
    """The k rotated inputs of a case dict (input i uses seed ``seed + 42*(i+1)``).

    ``k`` defaults to :func:`inputs_per_case`.

    >>> xs = make_inputs({"batch": 2, "n": 8, "cond": 1, "seed": 3}, 3, "cpu")
    >>> len(xs), bool((xs[0] == generate(2, 8, 1, 45, device="cpu")).all())
    (3, True)
    """
    batch, n, m = int(case["batch"]), int(case["n"]), case.get("m")
    if k is None:
        k = inputs_per_case(batch, n, m)
    return [
        generate(batch, n, case["cond"], input_seed(case["seed"], i), case.get("case", "dense"), device, m)
        for i in range(k)
    ]


#: ``n_active`` each profile must get from the detectors at size n (docs/DETECTORS.md,
#: "What the qr_v2 profiles give"): the CPU and GPU detector tests both assert it.
EXPECTED_N_ACTIVE = {
    "dense": lambda n: n,
    "upper": lambda n: 0,
    "rankdef": lambda n: 3 * n // 4,
    "nearrank": lambda n: n,
    "clustered": lambda n: n // 2 + 2,
    "band": lambda n: n,
    "rowscale": lambda n: n,
    "nearcollinear": lambda n: n,
}
