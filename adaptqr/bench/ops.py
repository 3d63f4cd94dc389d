"""The op a bench run times (``adaptqr bench --op``): ``geqrf`` (default), ``householder_product``
or ``qr`` (reduced), each with its library call, torch's call (the baseline) and its check.

- ``geqrf``: ``adaptqr.geqrf(A)`` against ``torch.geqrf(A)``, :func:`check_geqrf`.
- ``householder_product``: the op's inputs are ``(h, tau) = adaptqr.geqrf(A)`` of each
  generated ``A`` (made once, before timing); ``adaptqr.householder_product`` against
  torch's, :func:`check_householder_product`.
- ``qr``: ``adaptqr.linalg.qr(A)`` against ``torch.linalg.qr(A)``, :func:`check_qr`.

The torch baselines are torch's own functions (:mod:`adaptqr.originals`), timed the same
way, and cached under the case's key with ``:<op>`` appended (``geqrf`` keeps the bare key).

Example::

    >>> import torch
    >>> from adaptqr.bench.ops import get_op
    >>> op = get_op("qr")
    >>> inputs = op.prepare([torch.randn(2, 6, 6)])
    >>> op.check(inputs[0], op.library()(inputs[0])).passes_bar, op.cache_key("k")
    (True, 'k:qr')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import torch

from adaptqr import originals

OPS = ("geqrf", "householder_product", "qr")


class Factors(tuple):
    """``(h, tau)`` of one input: what ``householder_product`` is timed on (``.device`` and
    ``.clone()`` as the timing and checking code use them on tensors)."""

    @property
    def device(self) -> torch.device:
        return self[0].device

    def clone(self) -> Factors:
        return Factors((self[0].clone(), self[1].clone()))


def _equal(a, b) -> bool:
    if isinstance(a, Factors):
        return all(torch.equal(x, y) for x, y in zip(a, b))
    return torch.equal(a, b)


@dataclass(frozen=True)
class Op:
    name: str

    def prepare(self, inputs: list[torch.Tensor]) -> list:
        """What the op is timed on, from the generated matrices."""
        if self.name != "householder_product":
            return inputs
        import adaptqr

        return [Factors(tuple(t.detach().clone() for t in adaptqr.geqrf(a))) for a in inputs]

    def library(self, fn: Callable | None = None, path: str | None = None) -> Callable:
        """adaptqr's call for this op (``fn``: a stand-in for ``adaptqr.geqrf``, geqrf only;
        ``path``: a forced path, geqrf only)."""
        import adaptqr

        if self.name == "geqrf":
            fn = fn or adaptqr.geqrf
            return fn if path is None else functools.partial(fn, path=path)
        if path is not None:
            raise ValueError(f"bench --op {self.name}: --paths applies to --op geqrf only")
        if self.name == "householder_product":
            return lambda x: adaptqr.householder_product(x[0], x[1])
        return adaptqr.linalg.qr

    def torch_fn(self) -> Callable:
        if self.name == "geqrf":
            return originals.geqrf
        if self.name == "householder_product":
            return lambda x: originals.householder_product(x[0], x[1])
        return originals.linalg_qr

    def check(self, x, out):
        """The :class:`~adaptqr.testing.CheckResult` of ``out = op(x)``."""
        from adaptqr.testing import check_geqrf, check_householder_product, check_qr

        if self.name == "geqrf":
            return check_geqrf(x, out[0], out[1])
        if self.name == "householder_product":
            return check_householder_product(x[0], x[1], out)
        return check_qr(x, out[0], out[1])

    def unchanged(self, x, guard) -> bool:
        return _equal(x, guard)

    def cache_key(self, case_key: str) -> str:
        return case_key if self.name == "geqrf" else f"{case_key}:{self.name}"


def get_op(name: str) -> Op:
    if name not in OPS:
        raise ValueError(f"unknown --op {name!r}; expected one of {', '.join(OPS)}")
    return Op(name)
