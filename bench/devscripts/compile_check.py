"""Offline (no GPU): compile the panel, prescale and probe kernels for sm_90 with this triton,
so that a change to them is known to compile before a device call. Prints each kernel and
its PTX size.

Usage: python3 bench/devscripts/compile_check.py
"""
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from adaptqr.paths.kernels import panel as P
from adaptqr.paths.kernels.scale import scale_kernel
from adaptqr.detectors.kernels.probe_kernel import probe_columns_kernel, combine_rows_kernel
import inspect
base = {"Ht": "*fp32", "TAU": "*fp32", "TW": "*fp32", "NA": "*i32", "k": "i32", "m": "i32", "n": "i32", "pw": "i32", "tw_index": "i32", "n_tw": "i32"}
def comp(fn, sig, cx, warps=4):
    c = triton.compile(ASTSource(fn=fn, signature=dict(sig, **{k: "constexpr" for k in cx}), constexprs=cx),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    print(fn.__name__, "ok", len(c.asm["ptx"]))
comp(P.panel_chunked_kernel, base, dict(NB=32, CH=512, HAS_NA=True, WRITE_T=True, FLOOR=P.NEGLIGIBLE_SUBCOLUMN.value), 8)
comp(P.panel_reg_kernel, base, dict(NB=32, MB=512, HAS_NA=True, WRITE_T=True, WRITE_S=True, LOG2NB=5, FLOOR=P.NEGLIGIBLE_SUBCOLUMN.value), 8)
sp = dict(base, WS="*fp32", SP="*fp32", CNT="*i32", P="i32")
order = list(inspect.signature(P.panel_split_kernel.fn).parameters)
sp = {k: sp[k] for k in order if k in sp}
comp(P.panel_split_kernel, sp, dict(NB=32, RB=64, PMAX=64, HAS_NA=True, WRITE_T=True, PAIRS=True, FLOOR=P.NEGLIGIBLE_SUBCOLUMN.value))
comp(scale_kernel, {"Ht": "*fp32", "EXP": "*i32", "m": "i32", "n": "i32"}, dict(SIGN=-1, UPPER=True, BLOCK_C=32, BLOCK_M=128))
from adaptqr.detectors.kernels.route_kernel import route_columns_kernel
sig = {"H_ptr": "*fp32", "m": "i32", "n": "i32", "stride_b": "i64", "stride_c": "i32", "n1_ptr": "*fp32", "n2_ptr": "*fp32",
       "below_ptr": "*i8", "bad_ptr": "*i8", "S_ptr": "*fp32", "s_b": "i64", "s_r": "i32", "s_c": "i32"}
comp(route_columns_kernel, sig, dict(BLOCK_N=32, BLOCK_M=32, COPY=True))
sig = {"H_ptr": "*fp32", "m": "i32", "n": "i32", "stride_b": "i64", "stride_r": "i32", "stride_c": "i32", "n1_ptr": "*fp32",
       "n2_ptr": "*fp32", "mx_ptr": "*fp32", "last_ptr": "*i32", "bad_ptr": "*i8", "rmax_ptr": "*fp32", "rss_ptr": "*fp32", "T": "i32"}
comp(probe_columns_kernel, sig, dict(BLOCK_N=32, BLOCK_M=64, ROWS=True))
comp(combine_rows_kernel, {"rmax_ptr": "*fp32", "rss_ptr": "*fp32", "out_ptr": "*fp32", "m": "i32", "T": "i32"}, dict(BLOCK_M=128))
