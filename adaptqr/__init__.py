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

import os as _os

# In a source checkout the layers detectors/, paths/ and graphs/ sit beside this package and
# are mapped to adaptqr.detectors/.paths/.graphs by pyproject's package-dir. An editable
# install resolves that mapping through an import hook; where no working install exists (a
# checkout copied to another machine whose `pip` belongs to another interpreter, or a
# read-only environment) the hook is missing and those subpackages would not import. Adding
# the checkout's root to this package's search path maps them the same way. An installed
# wheel has no such siblings, so this is a no-op there.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_root, "paths", "householder.py")) and _root not in __path__:
    __path__.append(_root)
del _root

from adaptqr import config, log  # noqa: E402
from adaptqr.api import geqrf  # noqa: E402
from adaptqr.explain import Explanation, explain  # noqa: E402
from adaptqr.log import clear_decisions, decisions  # noqa: E402
from adaptqr.registry import (  # noqa: E402
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
