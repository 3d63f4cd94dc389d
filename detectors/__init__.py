"""Per-matrix probes, the route classifier and the low-rank tail (adaptqr.detectors).

The dispatcher's flow on the column-major ``H`` (``(B, m, n)``, holding the input)::

    features = probe(H)              # one pass, device tensors, no host sync
    routes = classify(features)      # (B,) int32 codes of adaptqr.registry.ROUTE_CLASSES
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
from .tail import finish_tail

__all__ = ["probe", "classify", "finish_tail", "active_columns", "tail_bound", "route_codes", "TAIL_BUDGET"]
