"""Kernels compiled without a GPU. Every Triton kernel of the library for sm_90, in the
configurations the GPU launches (EXPERIMENTS.md CI2): the interpreter runs the kernels'
arithmetic but never their code generation, where a kernel can fail on the GPU alone.
Constants come from the modules that launch them, so the configurations follow the
schedules. And the CUDA C kernels' compile probe, which falls back when NVRTC fails."""

from __future__ import annotations

import logging

import pytest

from adaptqr import qform
from adaptqr.layout import TILE
from adaptqr.paths import householder, prescale, schedules
from adaptqr.paths.kernels import panel, scale, trailing, transpose
from adaptqr.paths.kernels import qform as qk
from adaptqr.paths.kernels import qform_wide as qw
from adaptqr.paths.kernels.fp16_storage import F16_NONE, F16_ONLY, F16_SKIP
from adaptqr.testing import offline_compile

needs_backend = pytest.mark.skipif(not offline_compile.available(),
                                   reason="triton without its NVIDIA backend")

S = schedules.schedule_for(512, 512)
_TRAIL = dict(NB=S.nb, BM=S.bm, HAS_NA=1, PREC=S.prec, PREC_TAIL=S.tail_prec, BM16=S.bm,
              USE_V16=0)
_RES_BN, _RES_MB = 32, 64  # a resident trailing tile: bn * MB <= RESIDENT_MAX_TILE

CASES = [
    # (kernel, constexprs, warps, stages)
    # Triton panels: 16 columns (n <= 384 not a multiple of 16, H19) writing T (CI2's),
    # 32 with the S rows for the separate T kernel, the T kernel both ways, chunked, split.
    (panel.panel_reg_kernel, dict(NB=16, MB=256, HAS_NA=1, WRITE_T=1, WRITE_S=0, LOG2NB=4), 4, 3),
    (panel.panel_reg_kernel, dict(NB=32, MB=512, HAS_NA=1, WRITE_T=0, WRITE_S=1, LOG2NB=5), 8, 3),
    (panel.panel_t_kernel, dict(NB=32, CH=schedules.T_KERNEL_ROWS, HAS_NA=1, FROM_S=0), 1, 3),
    (panel.panel_t_kernel, dict(NB=32, CH=schedules.T_KERNEL_ROWS, HAS_NA=1, FROM_S=1), 1, 3),
    (panel.panel_chunked_kernel, dict(NB=32, CH=64, HAS_NA=1, WRITE_T=1), 4, 3),
    (panel.panel_split_kernel, dict(NB=32, RB=64, PMAX=64, HAS_NA=1, WRITE_T=1, PAIRS=0), 4, 3),
    (panel.panel_split_kernel, dict(NB=32, RB=64, PMAX=64, HAS_NA=1, WRITE_T=1, PAIRS=1), 4, 3),
    # Trailing updates: FP32 streamed, the FP16 route's pair update, resident, row-split.
    (trailing.trailing_kernel, dict(_TRAIL, BN=S.bn, RESIDENT=0, F16=F16_NONE.value, PAIR16=0,
                                    TILE_MAJOR=1), schedules.TRAILING_WARPS, schedules.TRAILING_STAGES),
    (trailing.trailing_kernel, dict(_TRAIL, BN=S.fp16_bn, RESIDENT=0, F16=F16_ONLY.value, PAIR16=1,
                                    TILE_MAJOR=1), schedules.TRAILING_WARPS, S.fp16_stages),
    (trailing.trailing_kernel, dict(_TRAIL, BN=S.fp16_bn, RESIDENT=0, F16=F16_ONLY.value, PAIR16=1,
                                    TILE_MAJOR=1, USE_V16=1), schedules.TRAILING_WARPS, S.fp16_stages),
    (trailing.v16_kernel, dict(NB=S.nb, HAS_NA=1, BM=householder.V16_BM, NP=2), 4, 3),
    # The FP32 launch's own pair (T13, knob fp32_pair: its row chunk).
    (trailing.trailing_kernel, dict(_TRAIL, BN=S.bn, BM=32, RESIDENT=0, F16=F16_SKIP.value,
                                    PAIR16=0, PAIR32=1, TILE_MAJOR=1),
     schedules.TRAILING_WARPS, schedules.TRAILING_STAGES),
    # ... from the reflectors' halves made once an update (T14, knob fp32_halves).
    (trailing.v16_kernel, dict(NB=S.nb, HAS_NA=1, BM=householder.V16_BM, NP=2, LO=1), 4, 3),
    (trailing.trailing_kernel, dict(_TRAIL, BN=S.bn, BM=32, RESIDENT=0, F16=F16_SKIP.value,
                                    PAIR16=0, PAIR32=1, TILE_MAJOR=1, HALVES32=1),
     schedules.TRAILING_WARPS, schedules.TRAILING_STAGES),
    # The pair update in two launches (N25).
    (trailing.pair_y_kernel, dict(NB=S.nb, BN=S.fp16_bn, BM=S.bm, HAS_NA=1, PREC=S.prec,
                                  TILE_MAJOR=1, USE_V16=1), schedules.TRAILING_WARPS, S.fp16_stages),
    (trailing.pair_u_kernel, dict(NB=S.nb, BN=S.fp16_bn, BM=S.bm, HAS_NA=1, USE_V16=1),
     schedules.TRAILING_WARPS, S.fp16_stages),
    (trailing.trailing_kernel, dict(_TRAIL, BN=_RES_BN, BM=_RES_MB, BM16=_RES_MB, RESIDENT=1,
                                    F16=F16_SKIP.value, PAIR16=0, TILE_MAJOR=0),
     householder._warps(_RES_BN * _RES_MB), schedules.TRAILING_STAGES),
    (trailing.trailing_w_kernel, dict(_TRAIL, BN=S.bn, F16=F16_ONLY.value),
     schedules.TRAILING_WARPS, schedules.TRAILING_STAGES),
    (trailing.trailing_w_kernel, dict(_TRAIL, BN=S.bn, F16=F16_ONLY.value, USE_V16=1),
     schedules.TRAILING_WARPS, schedules.TRAILING_STAGES),
    (trailing.trailing_u_kernel, dict(_TRAIL, BN=S.bn, F16=F16_ONLY.value, USE_V16=1),
     schedules.TRAILING_WARPS, schedules.TRAILING_STAGES),
    (trailing.trailing_w_kernel, dict(_TRAIL, BN=S.bn, F16=F16_SKIP.value, ZERO=1),
     schedules.TRAILING_WARPS, schedules.TRAILING_STAGES),
    (trailing.trailing_u_kernel, dict(_TRAIL, BN=S.bn, F16=F16_SKIP.value),
     schedules.TRAILING_WARPS, schedules.TRAILING_STAGES),
    # Each slice's W sums stored, added in slice order (N26).
    (trailing.trailing_w_kernel, dict(_TRAIL, BN=S.bn, F16=F16_ONLY.value, USE_V16=1, PARTIAL=1),
     schedules.TRAILING_WARPS, schedules.TRAILING_STAGES),
    (trailing.trailing_u_kernel, dict(_TRAIL, BN=S.bn, F16=F16_SKIP.value, PARTIAL=1),
     schedules.TRAILING_WARPS, schedules.TRAILING_STAGES),
    # Q formation: T, the strip kernel chunked and resident, Q^T applied (the wide path).
    (qk.qform_t_kernel, dict(NB=qform.QFORM_NB, CH=qform.QFORM_T_ROWS, PREC=qform.QFORM_T_PREC,
                             FLAGS=1), qform.QFORM_T_WARPS, 3),
    (qk.qform_kernel, dict(NB=qform.QFORM_NB, BN=qform.QFORM_BN, BM=qform.QFORM_BM, RESIDENT=0,
                           PREC=qform.QFORM_PREC, BOUNDED=1), qform.QFORM_WARPS, 3),
    (qk.qform_kernel, dict(NB=qform.QFORM_NB, BN=qform.QFORM_BN, BM=qform.QFORM_BM, RESIDENT=0,
                           PREC="tf32x3", BOUNDED=2), qform.QFORM_WARPS, 3),
    (qk.qform_kernel, dict(NB=32, BN=32, BM=qform.QFORM_RESIDENT_ROWS, RESIDENT=1,
                           PREC="tf32x3"), 4, 3),
    # V's float16 halves: made by the T kernel, read by the strip kernel (QF29).
    (qk.qform_t_kernel, dict(NB=qform.QFORM_NB, CH=qform.QFORM_T_ROWS, PREC=qform.QFORM_T_PREC,
                             FLAGS=1, HALVES=qform.QFORM_WIDE_NB), qform.QFORM_T_WARPS, 3),
    (qk.qform_kernel, dict(NB=qform.QFORM_NB, BN=qform.QFORM_BN, BM=qform.QFORM_BM, RESIDENT=0,
                           PREC="f16x3", BOUNDED=1, HALVES=1), qform.QFORM_WARPS, 3),
    # The flags in one vector load (QF31, knob qform_flag_block).
    (qk.qform_kernel, dict(NB=qform.QFORM_NB, BN=qform.QFORM_BN, BM=qform.QFORM_BM, RESIDENT=0,
                           PREC="f16x3", BOUNDED=1, HALVES=1, NTW=32), qform.QFORM_WARPS, 3),
    (qw.wide_update_kernel, dict(NBW=qform.QFORM_WIDE_NB, SB=qform.QFORM_NB,
                                 BC=qform.QFORM_WIDE_BC, BR=qform.QFORM_WIDE_BR, PREC="f16x3",
                                 BOUNDED=1, NTW=32), qform.QFORM_WIDE_U_WARPS, 3),
    # Q in wide panels (QF25, QF28): V^T V, W and Y with -Y's halves, the update.
    (qw.wide_vtv_kernel, dict(NBW=qform.QFORM_WIDE_NB, CH=qform.QFORM_WIDE_S_ROWS,
                              PREC=qform.QFORM_T_PREC), qform.QFORM_WIDE_S_WARPS, 3),
    *[(qw.wide_w_kernel, dict(NBW=qform.QFORM_WIDE_NB, SB=qform.QFORM_NB, BC=qform.QFORM_WIDE_BC,
                              BK=qform.QFORM_WIDE_BK, PREC=prec, BOUNDED=bounded),
       qform.QFORM_WIDE_W_WARPS, 3) for prec, bounded in (("f16x3", 1), ("tf32x3", 2))],
    *[(qw.wide_update_kernel, dict(NBW=qform.QFORM_WIDE_NB, SB=qform.QFORM_NB,
                                   BC=qform.QFORM_WIDE_BC, BR=qform.QFORM_WIDE_BR, PREC=prec,
                                   BOUNDED=bounded), qform.QFORM_WIDE_U_WARPS, 3)
      for prec, bounded in (("f16x3", 1), ("tf32x3", 2))],
    (qk.apply_qt_kernel, dict(NB=qform.QFORM_NB, BN=qform.QFORM_BN, BM=qform.QFORM_BM,
                              PREC=qform.APPLY_QT_PREC), qform.QFORM_WARPS, 3),
    # Prescaling and the column-major load.
    (scale.scale_kernel, dict(SIGN=-1, UPPER=1, BLOCK_C=prescale.BLOCK_C, BLOCK_M=prescale.BLOCK_M), 4, 3),
    (transpose.column_major_copy_kernel, dict(BM=TILE, BN=TILE), 4, 3),
]


@needs_backend
@pytest.mark.parametrize("kernel,constexprs,warps,stages", CASES,
                         ids=[f"{c[0].fn.__name__}-{i}" for i, c in enumerate(CASES)])
def test_kernel_compiles_for_sm90(kernel, constexprs, warps, stages):
    compiled = offline_compile.compile_kernel(kernel, constexprs, warps, stages)
    assert compiled.asm["cubin"] and ".entry" in compiled.asm["ptx"]


def test_a_failed_cuda_compile_warns_and_says_what_runs_instead(caplog):
    # The CUDA C kernels' compile probe (panel_cuda.compiles: the panel and its clusters):
    # a build that raises gives False and one warning naming the kernel, the error and what
    # runs instead; one that builds gives True, silently.
    from adaptqr.paths.kernels.panel_cuda import compiles

    def fails():
        raise RuntimeError("NVRTC_ERROR_COMPILATION")

    with caplog.at_level(logging.WARNING, logger="adaptqr.paths"):
        assert compiles(lambda: None, "CUDA C panel", "the Triton panel runs instead")
        assert caplog.records == []
        assert not compiles(fails, "CUDA C panel", "the Triton panel runs instead")
    assert [r.getMessage() for r in caplog.records] == [
        "adaptqr: the CUDA C panel did not compile (RuntimeError: "
        "NVRTC_ERROR_COMPILATION); the Triton panel runs instead"]
