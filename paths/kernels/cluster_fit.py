"""Whether a cluster of CTAs can be placed on this GPU at all: the CUDA driver's
``cuOccupancyMaxActiveClusters`` for one kernel at one launch shape (through ctypes; cupy
does not bind it).

Clusters above 8 CTAs are sm_90's non-portable size: a part whose GPCs hold fewer free
SMs (a MIG slice, an integrated Hopper) cannot place them, and a launch there fails where
8 would run (EXPERIMENTS.md H33). The launcher asks once a build and keeps 8 where the
answer is 0.

Example (any machine; a null function, no CUDA driver or an error gives 0, "cannot tell")::

    >>> from adaptqr.paths.kernels import cluster_fit
    >>> cluster_fit.max_active_clusters(0, 16, 256, 0, driver=lambda *a: 1)
    0
"""

from __future__ import annotations

import ctypes
import functools

#: ``CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`` (the driver's ``CUlaunchAttributeID``).
_CLUSTER_DIMENSION = 4


class _Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


class _AttrValue(ctypes.Union):
    # The driver's CUlaunchAttributeValue: 64 bytes, 8-byte aligned (some members hold
    # pointers); only the cluster's dimensions are written here.
    _fields_ = [("cluster_dim", _Dim3), ("align", ctypes.c_uint64), ("pad", ctypes.c_char * 64)]


class _Attr(ctypes.Structure):
    # CUlaunchAttribute: the id, padded to 8 bytes, then the value.
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _AttrValue)]


class LaunchConfig(ctypes.Structure):
    """The driver's ``CUlaunchConfig``."""

    _fields_ = [("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint), ("grid_z", ctypes.c_uint),
                ("block_x", ctypes.c_uint), ("block_y", ctypes.c_uint), ("block_z", ctypes.c_uint),
                ("shared_mem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_Attr)), ("num_attrs", ctypes.c_uint)]


@functools.lru_cache(maxsize=1)
def _driver():
    """``cuOccupancyMaxActiveClusters`` from libcuda, or None where there is no driver."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        fn = lib.cuOccupancyMaxActiveClusters
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.POINTER(LaunchConfig)]
    return fn


def max_active_clusters(func_ptr: int, cl: int, nt: int, shared_mem: int, driver=None) -> int:
    """How many clusters of ``cl`` CTAs of ``nt`` threads and ``shared_mem`` bytes of
    dynamic shared memory the function ``func_ptr`` (a ``CUfunction``, in the current
    context) can have on the device at once; 0 where it cannot place one or the driver
    cannot tell (no driver, an error). ``driver``: the driver function, or a stand-in with
    its signature (tests)."""
    fn = driver if driver is not None else _driver()
    if fn is None or not func_ptr:
        return 0
    attr = _Attr(id=_CLUSTER_DIMENSION)
    attr.value.cluster_dim = _Dim3(cl, 1, 1)
    config = LaunchConfig(grid_x=cl, grid_y=1, grid_z=1, block_x=nt, block_y=1, block_z=1,
                          shared_mem=shared_mem, stream=None, attrs=ctypes.pointer(attr),
                          num_attrs=1)
    count = ctypes.c_int(0)
    if fn(ctypes.byref(count), ctypes.c_void_p(func_ptr), ctypes.byref(config)) != 0:
        return 0
    return int(count.value)
