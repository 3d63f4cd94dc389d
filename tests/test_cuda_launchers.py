"""The cupy launcher's Python (paths/kernels/panel_cuda.py) on the CPU,
against a stand-in for cupy that records each launch: the arguments in the order the CUDA C
signatures take them, the grid, block and shared memory, and torch's current stream. The
kernels themselves run under the host shim (test_panel_cuda_host.py) and on the GPU."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import torch


class _FakeStream:
    def __init__(self, ptr, device_index):
        self.ptr, self.device_index = ptr, device_index
        self.entered = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def fake_cupy(monkeypatch):
    launches = []
    cp = types.ModuleType("cupy")
    cp.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDevice=lambda: 0),
        ExternalStream=_FakeStream,
        Device=lambda i: pytest.fail("no device switch expected"))
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(torch.cuda, "current_stream",
                        lambda device=None: types.SimpleNamespace(cuda_stream=1234))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    from adaptqr.paths.kernels import panel_cuda

    # torch's current stream as the launchers ask for it (a CUDA build's raw pointer).
    monkeypatch.setattr(panel_cuda, "_raw_stream", lambda device_index: 1234)
    panel_cuda._stream.cache_clear()

    def kernel(name):
        def launch(grid, block, args, shared_mem=0):
            launches.append((name, grid, block, args, shared_mem))
        return launch

    yield launches, kernel
    panel_cuda._stream.cache_clear()


def _ptr(t):
    return np.uint64(t.data_ptr())


def test_panel_launch_passes_the_gram_outcomes(fake_cupy, monkeypatch):
    launches, kernel = fake_cupy
    from adaptqr.paths.kernels import panel_cuda
    from adaptqr.paths.kernels.panel_gram import gram_smem

    monkeypatch.setattr(panel_cuda, "_kernel", lambda nt, r, dev, fuse, cl, gram: kernel(
        (nt, r, fuse, cl, gram)))
    B, m, n = 3, 300, 64
    Ht, tau = torch.zeros(B, n, m), torch.zeros(B, n)
    TW, na = torch.zeros(B, 2, 32, 32), torch.zeros(B, dtype=torch.int32)
    gout = torch.zeros(B, 2, dtype=torch.int32)
    panel_cuda.launch(Ht, tau, TW, na, 32, m, n, 32, 1, 2, 32, 512, True, 0.5, True, 128,
                      True, gout)
    panel_cuda.launch(Ht, tau, TW, na, 0, m, n, 32, 0, 2, 32, 512, False, 0.0, True, 0,
                      False, gout)
    (name, grid, block, args, smem), (name2, grid2, block2, args2, smem2) = launches
    # A cluster of four 128-row CTAs a matrix, the Gram build: its outcomes' pointer last.
    assert name == (128, 1, True, 4, True) and grid == (B * 4,) and block == (128,)
    assert smem == gram_smem(128)
    assert list(args) == [_ptr(Ht), _ptr(tau), _ptr(TW), _ptr(na), 32, m, n, 32, 1, 2, 1,
                          np.float32(0.5), _ptr(gout)]
    assert [type(a) for a in args] == [np.uint64] * 4 + [np.int32] * 7 + [np.float32, np.uint64]
    # One CTA of 256 threads, two rows each, no Gram build: a null outcomes pointer.
    assert name2 == (256, 2, True, 1, False) and grid2 == (B,) and smem2 == 0
    assert args2[-1] == 0 and args2[10] == 0
    # Both on torch's current stream (cupy's stand-in for it, entered once a launch).
    assert panel_cuda._stream(1234, 0).entered == 2


def test_panel_launch_in_clusters_of_16(fake_cupy, monkeypatch):
    # EXPERIMENTS.md H33 (knob cluster_max): a 4096-row panel at CTAs of 256 rows in 16 CTAs
    # of one row a thread instead of 8 of two; 2048 rows stay 8; sizes not built are refused;
    # where the driver says no cluster of 16 CTAs fits (a MIG slice, small GPCs), 8 of 512
    # rows (H33's guard).
    launches, kernel = fake_cupy
    from adaptqr.paths.kernels import panel_cuda

    monkeypatch.setattr(panel_cuda, "_kernel", lambda nt, r, dev, fuse, cl, gram: kernel(
        (nt, r, cl, gram)))
    asked = []
    monkeypatch.setattr(panel_cuda, "_clusters_fit", lambda *a: asked.append(a) or True)
    B, m, n = 2, 4096, 64
    Ht, tau = torch.zeros(B, n, m), torch.zeros(B, n)
    TW, na = torch.zeros(B, 2, 32, 32), torch.zeros(B, dtype=torch.int32)
    for mb, k in ((4096, 0), (2048, 2048)):
        panel_cuda.launch(Ht, tau, TW, na, k, m, n, 32, k // 32, 2, 32, mb, False, 0.0, True, 256,
                          True, None, 16)
    (name, grid, block, _, _), (name2, grid2, _, _, _) = launches
    assert name == (256, 1, 16, True) and grid == (B * 16,) and block == (256,)
    assert name2 == (256, 1, 8, True) and grid2 == (B * 8,)
    assert asked == [(256, 1, 0, True, 16, True)]  # asked above 8 CTAs only
    with pytest.raises(ValueError, match="at most 12 CTAs"):
        panel_cuda.launch(Ht, tau, TW, na, 0, m, n, 32, 0, 2, 32, 4096, False, 0.0, True, 256,
                          True, None, 12)
    monkeypatch.setattr(panel_cuda, "_clusters_fit", lambda *a: False)
    panel_cuda.launch(Ht, tau, TW, na, 0, m, n, 32, 0, 2, 32, 4096, False, 0.0, True, 256,
                      True, None, 16)
    name3, grid3, block3, _, _ = launches[-1]
    assert name3 == (256, 2, 8, True) and grid3 == (B * 8,) and block3 == (256,)


def test_cluster_fit_asks_the_driver_for_one_cluster():
    # The driver's CUlaunchConfig and CUlaunchAttribute as laid out in cuda.h (64-bit): a
    # config of 56 bytes whose attrs pointer sits at 40; an attribute of 72, its value at 8.
    import ctypes

    from adaptqr.paths.kernels import cluster_fit

    assert ctypes.sizeof(cluster_fit.LaunchConfig) == 56
    assert cluster_fit.LaunchConfig.attrs.offset == 40
    assert ctypes.sizeof(cluster_fit._Attr) == 72 and cluster_fit._Attr.value.offset == 8
    seen = []

    def driver(count, func, config):
        c = config._obj
        a = c.attrs[0]
        seen.append((func.value, c.grid_x, c.block_x, c.shared_mem, c.num_attrs, a.id,
                     a.value.cluster_dim.x, a.value.cluster_dim.y, a.value.cluster_dim.z))
        count._obj.value = 3
        return 0

    assert cluster_fit.max_active_clusters(99, 16, 256, 36864, driver=driver) == 3
    assert seen == [(99, 16, 256, 36864, 1, 4, 16, 1, 1)]
    # An error, or no function, is "cannot tell": 0, so the launcher keeps 8.
    assert cluster_fit.max_active_clusters(99, 16, 256, 0, driver=lambda *a: 1) == 0
    assert cluster_fit.max_active_clusters(0, 16, 256, 0, driver=driver) == 0


def test_kernel_build_opts_in_to_clusters_of_16(monkeypatch):
    # Clusters above 8 CTAs launch only once the function allows a non-portable size
    # (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14); 8 and fewer never ask.
    built, attrs = [], []

    class _Fn:  # cupy's RawKernel: the driver's handle is its kernel's
        kernel = types.SimpleNamespace(ptr=77)
        max_dynamic_shared_size_bytes = 0

    class _Module:
        def __init__(self, code, options):
            built.append(options)

        def get_function(self, name):
            assert name == "panel_cuda"
            return _Fn()

    class _Device:
        def __init__(self, i):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    cp = types.ModuleType("cupy")
    cp.RawModule = _Module
    cp.cuda = types.SimpleNamespace(
        Device=_Device,
        driver=types.SimpleNamespace(funcSetAttribute=lambda *a: attrs.append(a)))
    monkeypatch.setitem(sys.modules, "cupy", cp)
    from adaptqr.paths.kernels import panel_cuda

    build = panel_cuda._kernel.__wrapped__
    build(256, 1, 0, True, 16, True)
    assert "-DCL=16" in built[-1] and "-DGRAM=1" in built[-1] and attrs == [(77, 14, 1)]
    build(256, 2, 0, True, 8, True)
    assert "-DCL=8" in built[-1] and attrs == [(77, 14, 1)]


def test_small_kernels_compile_with_subnormals_kept(monkeypatch):
    # EXPERIMENTS.md H37: cupy's RawModule appends -ftz=true; the small kernels' builds go
    # through NVRTC with -ftz=false and nothing after it, on the asked device, and load the
    # binary NVRTC gives (cupy 14 gives it with the names' mapping, older cupy alone).
    calls, loaded, devices = [], [], []

    class _Module:
        def load(self, binary):
            loaded.append(binary)

        def get_function(self, name):
            return ("fn", name)

    class _Device:
        def __init__(self, i):
            devices.append(i)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def compile_using_nvrtc(src, options=(), **kw):
        calls.append((src, options, kw))
        return (b"cubin", {}) if len(calls) == 1 else b"ptx"

    compiler = types.SimpleNamespace(compile_using_nvrtc=compile_using_nvrtc)
    function = types.SimpleNamespace(Module=_Module)
    cp = types.ModuleType("cupy")
    cp.cuda = types.SimpleNamespace(Device=_Device, compiler=compiler, function=function)
    cuda = types.ModuleType("cupy.cuda")
    cuda.compiler, cuda.function = compiler, function
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    from adaptqr.paths.kernels import panel_cuda

    assert panel_cuda.compile_function("SRC", "k", 3, "-DMR=32") == ("fn", "k")
    assert panel_cuda.compile_function("SRC", "k", 1) == ("fn", "k")
    (src, opts, kw), (_, opts2, _) = calls
    assert src == "SRC" and opts == ("-std=c++17", "-ftz=false", "-DMR=32")
    assert opts2 == ("-std=c++17", "-ftz=false") and kw == {"cache_in_memory": True}
    assert loaded == [b"cubin", b"ptx"] and devices == [3, 1]


def test_small_q_launch(fake_cupy, monkeypatch):
    # EXPERIMENTS.md QF24: one CTA a matrix, a warp a pair of columns, the build by the rows
    # (32 or 64), the inputs' pointers with their element strides in the kernel's order;
    # nothing launched for an empty batch or no columns.
    launches, kernel = fake_cupy
    from adaptqr.paths.kernels import qform_small_cuda

    monkeypatch.setattr(qform_small_cuda, "_kernel", lambda mr, dev: kernel(mr))
    H = torch.zeros(5, 40, 40)[::2].mT  # (3, 40, 40), column-major, every other matrix
    wide = torch.zeros(3, 80)
    tau = wide[:, ::2][:, :33]
    Q = torch.empty(3, 40, 40).mT
    qform_small_cuda.launch(H, tau, Q)
    (mr, grid, block, args, smem), = launches
    assert (mr, grid, block, smem) == (64, (3,), (640,), 0)
    assert args == (_ptr(H), 3200, 1, 40, _ptr(tau), 80, 2, _ptr(Q), 40, 40, 33)
    assert [type(a) for a in args[1:4]] == [np.int64] * 3 and type(args[-1]) is np.int32
    # One matrix (a 2-D input's view): the batch stride of a size-1 dim is the view's own.
    one = torch.empty(5, 7).mT.reshape(1, 7, 5)
    assert one.stride() == (7, 1, 7)
    qform_small_cuda.launch(torch.zeros(1, 7, 5), torch.zeros(1, 5), one)
    assert launches[-1][2] == (96,) and launches[-1][3][-3:] == (7, 5, 5)
    with pytest.raises(ValueError, match="column-major"):
        qform_small_cuda.launch_args(torch.zeros(2, 7, 5), torch.zeros(2, 5),
                                     torch.empty(2, 5, 7).mT.contiguous())
    del launches[1:]
    qform_small_cuda.launch(H[:0], tau[:0], Q[:0])
    qform_small_cuda.launch(H[..., :0], tau[:, :0], Q[..., :0])
    assert len(launches) == 1


def test_small_qr_launch(fake_cupy, monkeypatch):
    # EXPERIMENTS.md H37: one CTA a matrix, a warp a pair of columns, the build by the rows
    # (32 or 64); the input's pointer with its element strides, geqrf's outputs packed;
    # nothing launched for an empty batch; the shape's scalars as the kernel's types.
    launches, kernel = fake_cupy
    from adaptqr.paths.kernels import geqrf_small_cuda, panel_cuda

    monkeypatch.setattr(geqrf_small_cuda, "_kernel", lambda mr, dev: kernel(mr))
    A = torch.zeros(5, 40, 30)[::2]  # (3, 40, 30), row-major, every other matrix
    H = torch.empty(3, 30, 40).mT
    tau = torch.empty(3, 30)
    geqrf_small_cuda.launch(A, H, tau)
    (mr, grid, block, args, smem), = launches
    assert (mr, grid, block, smem) == (64, (3,), (480,), 0)
    assert args == (_ptr(A), 2400, 30, 1, _ptr(H), _ptr(tau), 40, 30)
    assert [type(a) for a in args[1:4]] == [np.int64] * 3
    assert [type(a) for a in args[-2:]] == [np.int32] * 2
    assert panel_cuda._stream(1234, 0).entered == 1
    # Wide, one matrix from a 2-D input's view, in place.
    one = torch.zeros(1, 10, 3).mT  # (1, 3, 10) column-major
    geqrf_small_cuda.launch(one, one, torch.empty(1, 3))
    assert launches[-1][0] == 32 and launches[-1][2] == (160,)
    assert launches[-1][3][-2:] == (3, 10)
    with pytest.raises(ValueError, match="H must be"):
        geqrf_small_cuda.launch(A, torch.empty(3, 40, 30), tau)
    del launches[1:]
    geqrf_small_cuda.launch(A[:0], H[:0], tau[:0])
    assert len(launches) == 1
