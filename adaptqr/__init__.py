"""adaptqr: batched QR (``geqrf``) on NVIDIA GPUs that looks at each matrix first.

Public surface::

    adaptqr.geqrf(A, *, out=None, path=None)      # drop-in for torch.geqrf
    adaptqr.householder_product(A, tau, *, out=None)  # drop-in for torch.linalg.householder_product
    adaptqr.linalg.qr(A, mode="reduced", *, out=None) # drop-in for torch.linalg.qr
    adaptqr.patch() / unpatch() / patched()       # route torch's three through adaptqr
    adaptqr.foreach_geqrf(tensors) / adaptqr.linalg.foreach_qr(tensors, mode)  # lists, batched by shape
    adaptqr.distributed.geqrf(A, group) / geqrf_list(tensors, group)  # shares over torch.distributed ranks
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

from adaptqr import config, distributed, linalg, log, originals
from adaptqr.api import geqrf
from adaptqr.explain import Explanation, explain
from adaptqr.foreach import foreach_geqrf
from adaptqr.log import clear_decisions, decisions
from adaptqr.patching import is_patched, patch, patched, unpatch
from adaptqr.qform import householder_product
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
    "householder_product",
    "foreach_geqrf",
    "linalg",
    "distributed",
    "patch",
    "unpatch",
    "patched",
    "is_patched",
    "originals",
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
