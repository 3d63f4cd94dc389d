"""Per-matrix probes, the route classifier and the low-rank tail (adaptqr.detectors).

The dispatcher's flow on the column-major ``H`` (``(B, m, n)``, holding the input)::

    routes, features = route(H)      # two launches, device tensors, no host sync; the same
                                     # as classify(probe(H)) (the full feature set)
    n_active = features["n_active"]  # (B,) int32, into MatrixInfo.features
    ...the path factors columns j < n_active[b] only...
    finish_tail(H, tau, n_active)    # clears the negligible tail, tau = 0 there

Example::

    >>> import torch
    >>> from adaptqr.detectors import probe, classify
    >>> H = torch.randn(2, 5, 5).mT.contiguous().mT
    >>> classify(probe(H)).tolist()
    [0, 0]
"""

from .classify import TAIL_BUDGET, active_columns, classify, route_codes, tail_bound
from .probe import probe
from .route import route
from .tail import finish_tail

__all__ = ["probe", "classify", "route", "finish_tail", "active_columns", "tail_bound", "route_codes",
           "TAIL_BUDGET"]
