"""CUDA C kernels of the library run on the host, for tests without a GPU.

A kernel's source is compiled by the host's C++20 compiler under a shim: each CTA's
threads run as host threads, ``__syncthreads`` is a barrier among them, a warp's shuffles
are exchanges among its 32 threads between two barriers of their own, and shared memory,
static and dynamic, is a host buffer a CTA filled with NaN (a read of a slot nothing wrote
shows). The CTAs of a cluster run at once (one CTA where the kernel has no clusters), a
cluster barrier is a barrier among all their threads, and each CTA's static shared arrays
lie a fixed distance from the next CTA's, so a read of another CTA's copy is one address
away. The kernel's indexing, masks, barriers, warp exchanges and cluster exchanges run as
written; the GPU's memory model, lockstep and timing do not. Each kernel gets a ``main`` of
its own (:func:`build`, :func:`run`): :func:`panel_launch` is
:func:`adaptqr.paths.kernels.panel_cuda.launch`'s.

Example (where ``g++`` is on the path): one 32-column panel of a 40 x 32 matrix, whose
R's first entry is minus the first column's norm (LAPACK's sign)::

    >>> import torch
    >>> from adaptqr.testing import cuda_host
    >>> X = torch.ones(1, 40, 32) + torch.eye(40, 32)
    >>> Ht, tau, TW = X.mT.contiguous(), torch.zeros(1, 32), torch.zeros(1, 1, 32, 32)
    >>> if cuda_host.available():
    ...     cuda_host.panel_launch(Ht, tau, TW, torch.full((1,), 32.0), 0, 40, 32, 32, 0, 1,
    ...                            64, False, 0.0)
    ... else:
    ...     Ht[0, 0, 0] = -X[0, :, 0].norm()
    >>> round(Ht[0, 0, 0].item(), 4) == round(-X[0, :, 0].norm().item(), 4)
    True
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import torch

SHIM = r"""
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>
#define ADAPTQR_HOST 1
struct dim3_ { unsigned x, y, z; };
static thread_local dim3_ threadIdx, blockIdx;
static dim3_ gridDim, blockDim;
// One CTA of the cluster being run: its barrier, its warps' barriers and exchange slots,
// its dynamic and its static shared memory; each host thread points at its own CTA's.
struct Cta_ {
    std::unique_ptr<std::barrier<>> bar;
    std::unique_ptr<std::barrier<>> warp_bar[32];
    float xchg[32][32];
    float* smem;
    char* statics;
    unsigned rank;
};
static thread_local Cta_* g_cta;
static std::barrier<>* g_cluster_bar;
// Static shared arrays (build() rewrites each declaration): one arena a CTA, each array at
// the same offset in every CTA's, the arenas STATIC_STRIDE bytes apart, so that another
// CTA's copy of an array is a fixed distance away (ld_cta).
static constexpr long STATIC_STRIDE = 1 << 16;
static std::atomic<size_t> g_static_top{0};
static size_t static_offset(size_t size, size_t align) {
    size_t cur = g_static_top.load();
    for (;;) {
        const size_t off = (cur + align - 1) / align * align;
        if (g_static_top.compare_exchange_weak(cur, off + size)) {
            if (off + size > (size_t)STATIC_STRIDE) std::abort();
            return off;
        }
    }
}
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __cluster_dims__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __syncthreads() g_cta->bar->arrive_and_wait()
using std::min;
// Warps: 32 host threads that meet at a barrier of their own around every exchange.
static void __syncwarp(unsigned = 0xffffffffu) { g_cta->warp_bar[threadIdx.x / 32]->arrive_and_wait(); }
static float warp_exchange(float v, int src) {
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    g_cta->xchg[w][l] = v;
    g_cta->warp_bar[w]->arrive_and_wait();
    const float r = g_cta->xchg[w][src & 31];
    g_cta->warp_bar[w]->arrive_and_wait();
    return r;
}
static float __shfl_xor_sync(unsigned, float v, int mask) {
    return warp_exchange(v, (threadIdx.x % 32) ^ mask);
}
static float __shfl_sync(unsigned, float v, int src) { return warp_exchange(v, src); }
// Clusters: every thread of the cluster's CTAs at one barrier; a read of another CTA's
// static shared memory at its copy's address.
static unsigned cta_rank() { return g_cta->rank; }
static void cluster_barrier() { g_cluster_bar->arrive_and_wait(); }
static float ld_cta(const float* p, unsigned rank) {
    const long hop = ((long)rank - (long)g_cta->rank) * STATIC_STRIDE;
    return *reinterpret_cast<const float*>(reinterpret_cast<const char*>(p) + hop);
}
struct alignas(16) float4 { float x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static bool __all_sync(unsigned, int pred) {
    bool all = true;
    const float mine = pred ? 1.f : 0.f;
    for (int l = 0; l < 32; ++l) all = all && warp_exchange(mine, l) != 0.f;
    return all;
}
static std::vector<float> read_floats(const char* path, size_t count) {
    std::vector<float> v(count);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(v.data(), sizeof(float), count, f) != count) std::exit(2);
    std::fclose(f);
    return v;
}
static void write_floats(const char* path, const std::vector<float>& v) {
    FILE* f = std::fopen(path, "wb");
    if (!f || std::fwrite(v.data(), sizeof(float), v.size(), f) != v.size()) std::exit(3);
    std::fclose(f);
}
// The grid's clusters of CL CTAs in turn, the CL NTH threads of one at once; shared memory,
// dynamic and static, NaN at each cluster's start (a read of a slot nothing wrote shows).
template <int NTH, class F> static void run_grid(size_t smem_bytes, F body, unsigned cl = 1) {
    blockDim = {(unsigned)NTH, 1, 1};
    for (unsigned by = 0; by < gridDim.y; ++by)
        for (unsigned bx0 = 0; bx0 < gridDim.x; bx0 += cl) {
            std::vector<Cta_> ctas(cl);
            std::vector<float> dyn(cl * (smem_bytes / sizeof(float) + 4), NAN);
            std::vector<float> statics(cl * STATIC_STRIDE / sizeof(float), NAN);
            std::barrier<> cluster_bar(cl * NTH);
            g_cluster_bar = &cluster_bar;
            for (unsigned r = 0; r < cl; ++r) {
                ctas[r].bar = std::make_unique<std::barrier<>>(NTH);
                for (int w = 0; w < (NTH + 31) / 32; ++w) ctas[r].warp_bar[w] = std::make_unique<std::barrier<>>(32);
                ctas[r].smem = dyn.data() + r * (smem_bytes / sizeof(float) + 4);
                ctas[r].statics = reinterpret_cast<char*>(statics.data()) + r * STATIC_STRIDE;
                ctas[r].rank = r;
            }
            std::vector<std::thread> threads;
            for (unsigned r = 0; r < cl; ++r)
                for (int t = 0; t < NTH; ++t)
                    threads.emplace_back([&, r, t] {
                        threadIdx = {(unsigned)t, 0, 0};
                        blockIdx = {bx0 + r, by, 0};
                        g_cta = &ctas[r];
                        body();
                    });
            for (auto& th : threads) th.join();
        }
}
"""

PANEL_MAIN = r"""
int main(int argc, char** argv) {
    const int B = std::atoi(argv[1]), m = std::atoi(argv[2]), n = std::atoi(argv[3]);
    const int k = std::atoi(argv[4]), pw = std::atoi(argv[5]), tw_index = std::atoi(argv[6]);
    const int n_tw = std::atoi(argv[7]), has_na = std::atoi(argv[8]);
    const float floor_ = (float)std::atof(argv[9]);
    std::vector<float> H = read_floats(argv[10], (size_t)B * n * m);
    std::vector<float> tau = read_floats(argv[11], (size_t)B * n);
    std::vector<float> T = read_floats(argv[12], (size_t)B * n_tw * NB * NB);
    std::vector<float> naf = read_floats(argv[13], (size_t)B);
    std::vector<int> na(naf.begin(), naf.end());
    std::vector<float> goutf = read_floats(argv[14], (size_t)B * n_tw);
    std::vector<int> gout(goutf.begin(), goutf.end());
    gridDim = {(unsigned)(B * CL), 1, 1};
    run_grid<NT>((size_t)std::atol(argv[15]), [&] {
        panel_cuda(H.data(), tau.data(), T.data(), na.data(), k, m, n, pw, tw_index, n_tw,
                   has_na, floor_, gout.data());
    }, CL);
    write_floats(argv[10], H);
    write_floats(argv[11], tau);
    write_floats(argv[12], T);
    write_floats(argv[14], std::vector<float>(gout.begin(), gout.end()));
    return 0;
}
"""


QFORM_SMALL_MAIN = r"""
int main(int argc, char** argv) {
    const int B = std::atoi(argv[1]), m = std::atoi(argv[2]), n = std::atoi(argv[3]);
    const int k = std::atoi(argv[4]);
    const long long hb = std::atoll(argv[5]), hr = std::atoll(argv[6]), hc = std::atoll(argv[7]);
    const long long tb = std::atoll(argv[8]), tk = std::atoll(argv[9]);
    const size_t h_count = std::atoll(argv[10]), t_count = std::atoll(argv[11]);
    std::vector<float> Q = read_floats(argv[12], (size_t)B * m * n);
    std::vector<float> H = read_floats(argv[13], h_count);
    std::vector<float> tau = read_floats(argv[14], t_count);
    gridDim = {(unsigned)B, 1, 1};
    run_grid<QTHREADS>(0, [&] {
        qform_small(H.data(), hb, hr, hc, tau.data(), tb, tk, Q.data(), m, n, k);
    });
    write_floats(argv[12], Q);
    return 0;
}
"""


GEQRF_SMALL_MAIN = r"""
int main(int argc, char** argv) {
    const int B = std::atoi(argv[1]), m = std::atoi(argv[2]), n = std::atoi(argv[3]);
    const long long ab = std::atoll(argv[4]), ar = std::atoll(argv[5]), ac = std::atoll(argv[6]);
    const size_t a_count = std::atoll(argv[7]);
    const bool inplace = std::atoi(argv[8]) != 0;
    const int k = m < n ? m : n;
    std::vector<float> H = read_floats(argv[9], (size_t)B * m * n);
    std::vector<float> tau = read_floats(argv[10], (size_t)B * k);
    std::vector<float> A = read_floats(argv[11], a_count);
    gridDim = {(unsigned)B, 1, 1};
    float* h = inplace ? A.data() : H.data();
    run_grid<QTHREADS>(0, [&] { geqrf_small(A.data(), ab, ar, ac, h, tau.data(), m, n); });
    write_floats(argv[9], inplace ? A : H);
    write_floats(argv[10], tau);
    return 0;
}
"""


def available() -> bool:
    """Whether a host C++ compiler is on the path."""
    return shutil.which("g++") is not None


@functools.lru_cache(maxsize=None)
def _build_root() -> str:
    """The process's directory for its builds, removed when the process exits (each build's
    executable lives as long as :func:`build`'s cache does: the whole process)."""
    root = tempfile.TemporaryDirectory(prefix="adaptqr_cuda_host_")
    _roots.append(root)  # its finalizer removes it at exit
    return root.name


_roots: list = []


def _statics(match: re.Match) -> str:
    """One ``__shared__ [__align__(A)] float a[..], b;`` as references into the CTA's arena,
    at offsets the same for every CTA (the shim's ``static_offset``)."""
    align = match.group(1) or "alignof(float)"
    out = []
    for decl in re.split(r",\s*(?![^\[]*\])", match.group(2)):
        name, dims = re.fullmatch(r"\s*(\w+)\s*((?:\[[^\]]+\])*)\s*", decl).groups()
        t = f"adaptqr_{name}_t"
        out.append(f"typedef float {t}{dims}; "
                   f"static const size_t adaptqr_{name}_off = static_offset(sizeof({t}), {align}); "
                   f"{t}& {name} = *reinterpret_cast<{t}*>(g_cta->statics + adaptqr_{name}_off);")
    return " ".join(out)


@functools.lru_cache(maxsize=None)
def build(src: str, main: str, defines: tuple) -> str:
    """The host build of the kernel source ``src`` (``extern __shared__ float x[];`` made
    the shim's buffer) with ``main``, a C++ ``main`` that reads its tensors with
    ``read_floats`` and calls the kernel through ``run_grid``; ``defines``: ``(name,
    value)`` pairs. Cached for the process; returns the executable's path (for :func:`run`)."""
    # Dynamic shared memory: the CTA's buffer; static: the CTA's arena (_statics).
    body = re.sub(r"extern __shared__ (__align__\(\d+\) )?float (\w+)\[\];",
                  r"float* \2 = g_cta->smem;", src)
    body = re.sub(r"__shared__ (?:__align__\((\d+)\) )?float ([^;]+);", _statics, body)
    if "__shared__" in re.sub(r"//[^\n]*", "", body):
        raise ValueError("cuda_host: a __shared__ declaration the shim does not rewrite")
    head = "".join(f"#define {k} {v}\n" for k, v in defines)
    d = tempfile.mkdtemp(dir=_build_root())
    path = os.path.join(d, "kernel")
    with open(path + ".cpp", "w") as f:
        f.write(head + SHIM + body + main)
    subprocess.run(["g++", "-std=c++20", "-O1", "-pthread", "-o", path, path + ".cpp"],
                   check=True, capture_output=True)
    return path


def run(exe: str, before: list, tensors: tuple, after: list, written: int) -> None:
    """Run the build ``exe`` (:func:`build`) with the arguments ``before``, then one file a
    tensor of ``tensors`` (written as float32), then ``after``; then copy the files of the
    first ``written`` tensors back into them."""
    with tempfile.TemporaryDirectory(prefix="adaptqr_cuda_host_") as d:
        paths = [os.path.join(d, f"{i}.bin") for i in range(len(tensors))]
        for path, x in zip(paths, tensors):
            x.detach().float().contiguous().numpy().tofile(path)
        subprocess.run([exe] + [str(a) for a in before] + paths + [str(a) for a in after],
                       check=True, timeout=600)
        for path, x in zip(paths[:written], tensors):
            x.copy_(torch.from_numpy(np.fromfile(path, dtype=np.float32)).view(x.shape))


def panel_launch(Ht: torch.Tensor, tau: torch.Tensor, TW: torch.Tensor, na: torch.Tensor,
                 k: int, m: int, n: int, pw: int, tw_index: int, n_tw: int, mb: int,
                 has_na: bool, floor: float, fuse: bool = False, gram: bool = False,
                 gram_out: torch.Tensor | None = None,
                 cta_rows: int = 0, max_cluster: int = 8, defines: tuple = ()) -> None:
    """:func:`adaptqr.paths.kernels.panel_cuda.launch` on the host: ``Ht`` ``(B, n, m)``,
    ``tau`` ``(B, n)``, ``TW`` ``(B, n_tw, 32, 32)``
    (float32, CPU, contiguous) updated in place, ``na`` ``(B,)``; ``gram``: the Gram build
    (:func:`~adaptqr.paths.kernels.panel_gram.gram_build` must allow it; 2: its Grams on
    tensor cores, the mma emulated); ``gram_out``:
    ``(B, n_tw)`` (any dtype), the Gram build's outcomes written into it (else none kept);
    ``cta_rows``: 0, one CTA a matrix, else a cluster of
    CTAs of that many rows, at most ``max_cluster`` (``panel_cuda.cluster_shape``; the
    cluster's CTAs run at once, their threads at one barrier for each cluster barrier);
    ``defines``: more ``(name, value)`` macros for the source (a build's experiment)."""
    from adaptqr.paths.kernels import panel_cuda
    from adaptqr.paths.kernels.panel_gram import gram_build, gram_smem

    cl, nt, r = panel_cuda.launch_shape(mb, cta_rows, max_cluster)
    if gram and not gram_build(nt, pw, 32):
        raise ValueError(f"no Gram build for {nt} threads and {pw} columns")
    exe = build(panel_cuda.SRC, PANEL_MAIN,
                panel_cuda.defines(nt, r, fuse, cl, int(gram)) + tuple(defines))
    gout = torch.full((Ht.shape[0], n_tw), -1.0)
    if gram_out is not None:
        gout.copy_(gram_out)
    run(exe, [Ht.shape[0], m, n, k, pw, tw_index, n_tw, int(has_na), repr(float(floor))],
        (Ht, tau, TW, na, gout), [gram_smem(nt) if gram else 0], 5)
    if gram_out is not None:
        gram_out.copy_(gout)


def _storage(x: torch.Tensor) -> torch.Tensor:
    """All of ``x``'s storage as a 1-D float32 tensor (``x`` starts at its offset 0), so that
    a kernel reads ``x`` through its own strides."""
    if x.storage_offset() != 0:
        raise ValueError("cuda_host: a view at a storage offset")
    st = x.untyped_storage()
    return torch.empty(0, dtype=x.dtype).set_(st, 0, (st.nbytes() // x.element_size(),))


def qform_small_launch(H: torch.Tensor, tau: torch.Tensor, Q: torch.Tensor) -> None:
    """:func:`adaptqr.paths.kernels.qform_small_cuda.launch` on the host: ``Q`` ``(B, m, n)``
    column-major (float32, CPU) written from ``H`` ``(B, m, n)`` and ``tau`` ``(B, k)``, both
    read through their strides (views at storage offset 0)."""
    from adaptqr.paths.kernels import qform_small_cuda

    mr, nw, _ = qform_small_cuda.launch_args(H, tau, Q)
    B, m, n = H.shape
    exe = build(qform_small_cuda.SRC, QFORM_SMALL_MAIN, (("MR", mr), ("QTHREADS", 32 * nw)))
    hs, ts = _storage(H), _storage(tau)
    run(exe, [B, m, n, tau.shape[-1], *H.stride(), *tau.stride(), hs.numel(), ts.numel()],
        (Q.mT, hs, ts), [], 1)


def geqrf_small_launch(A: torch.Tensor, H: torch.Tensor, tau: torch.Tensor,
                       defines: tuple = ()) -> None:
    """:func:`adaptqr.paths.kernels.geqrf_small_cuda.launch` on the host: ``H`` ``(B, m, n)``
    column-major and ``tau`` ``(B, min(m, n))`` (float32, CPU) written from ``A`` ``(B, m,
    n)``, read through its strides (a view at storage offset 0); ``H`` may be ``A`` itself
    (the kernel then reads and writes one buffer, as in place on the GPU). ``defines``: more
    ``(name, value)`` macros for the build (an A/B variant's)."""
    from adaptqr.paths.kernels import geqrf_small_cuda

    mr, nw, _ = geqrf_small_cuda.launch_args(A, H, tau)
    B, m, n = A.shape
    if B == 0:
        return
    inplace = A.data_ptr() == H.data_ptr()
    if inplace and A.stride() != H.stride():
        raise ValueError("cuda_host: in place, A must be H itself")
    exe = build(geqrf_small_cuda.SRC, GEQRF_SMALL_MAIN,
                (("MR", mr), ("QTHREADS", 32 * nw)) + tuple(defines))
    st = _storage(A)
    if inplace and st.numel() != B * m * n:
        raise ValueError("cuda_host: in place, H must be the whole of its storage")
    run(exe, [B, m, n, *A.stride(), st.numel(), int(inplace)], (H.mT, tau, st), [], 2)
