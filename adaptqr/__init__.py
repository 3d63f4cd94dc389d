"""adaptqr: batched QR (``geqrf``) on NVIDIA GPUs that looks at each matrix first.

Public surface::

    adaptqr.geqrf(A, *, out=None, path=None)      # drop-in for torch.geqrf
    adaptqr.register_path(...) / unregister_path(name) / paths_registered()
    adaptqr.decisions(n=None) / clear_decisions() # the dispatch decisions log (adaptqr.log.enable())
    adaptqr.explain(A)                            # which path each matrix would take, and why
    adaptqr.ROUTE_CLASSES                         # ("dense", "lowrank", "upper")

Example::

    >>> import torch, adaptqr
    >>> a, tau = adaptqr.geqrf(torch.randn(4, 6, 6))
    >>> a.shape, tau.shape
    (torch.Size([4, 6, 6]), torch.Size([4, 6]))
"""

__version__ = "0.1.0"

from adaptqr import config, log
from adaptqr.api import geqrf
from adaptqr.explain import Explanation, explain
from adaptqr.log import clear_decisions, decisions
from adaptqr.registry import (
    ROUTE_CLASSES,
    ROUTE_DEFAULT,
    InputSpec,
    MatrixInfo,
    Path,
    paths_registered,
    register_path,
    route_code,
    route_name,
    unregister_path,
)

__all__ = [
    "geqrf",
    "register_path",
    "unregister_path",
    "paths_registered",
    "decisions",
    "clear_decisions",
    "explain",
    "Explanation",
    "ROUTE_CLASSES",
    "ROUTE_DEFAULT",
    "route_code",
    "route_name",
    "InputSpec",
    "MatrixInfo",
    "Path",
    "config",
    "log",
]
