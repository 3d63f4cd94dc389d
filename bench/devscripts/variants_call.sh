#!/usr/bin/env bash
# One device call (< 600 s) that measures built-but-not-run variants side by side:
#   1. their GPU variant tests, `pytest -m "gpu and variant" -k "$TESTS_K"` (correctness
#      first: a deadlocking kernel stops here, at this step's timeout)
#   2. (unless SKIP_B12 is set) the 12 cases with the bench variant options in $B12 (e.g. "--knobs fill:cuda_panel_fill=1
#      --env g256:ADAPTQR_GRAPH_MAX_INPUT=268435456"); every output checked before timing
#   3. 8x2048 and 2x4096 with $BIG, then the batch-1 cases with $SINGLE, then the cases of
#      $SWEEP_CASES (no torch baseline; timeout $SWEEP_TIMEOUT, 120 s) with $SWEEP, then the wide cases with $WIDE (each
#      skipped if empty)
#   3e/3f. with $HP, householder_product on $HP_CASES (default cases_qf7.json; no baseline); with $QR, linalg.qr
#      on $QR_CASES (default 8x2048 and 2x4096) and batch 1 (against torch's)
#   0. (first, with $HP_HOST, e.g. 20x32) hp_host.py: the host's share of householder_product
#      (with $HP_HOST_KNOBS, e.g. qform_small_cuda=1, the Q ops again under those knobs)
#   4. trace.py on the shapes of $TRACE (e.g. "2x4096,640x512") with $TRACE_KNOBS
# Each step's timeout is on the Python process itself (see gpu_tests.sh's note).
# Back under $OUT: log.txt, hp_host.txt, variant_tests.txt, b12/*.json, big/*.json, single/*.json,
# sweep/*.json, wide/*.json, hp/*.json, qr/*.json, qr1/*.json, trace.txt, trace.json.
# Session 17's candidates (EXPERIMENTS.md OC9: H15, H16, G4; run 0138):
#   TESTS_K="fill or clusters" \
#   B12="--knobs fill:cuda_panel_fill=1 --knobs c512:cuda_panel_cluster=512 --env g256:ADAPTQR_GRAPH_MAX_INPUT=268435456" \
#   BIG="--knobs c256:cuda_panel_cluster=256 --knobs c512:cuda_panel_cluster=512 --knobs c1024:cuda_panel_cluster=1024" \
#   SINGLE="--knobs c256:cuda_panel_cluster=256 --knobs c512:cuda_panel_cluster=512 --knobs b128:cuda_panel_rows=256,cuda_panel_cluster=128" \
#   bash bench/devscripts/variants_call.sh
# Session 18's (H17, the small-batch cluster rows):
#   TESTS_K="fuse" B12="--knobs fuse:cuda_panel_fuse=1" BIG="--knobs fuse:cuda_panel_fuse=1" \
#   SINGLE="--knobs fuse:cuda_panel_fuse=1 --knobs b128:cuda_panel_rows=256,cuda_panel_cluster=128 --knobs b128f:cuda_panel_rows=256,cuda_panel_cluster=128,cuda_panel_fuse=1" \
#   SWEEP_CASES=bench/devscripts/cases_batch_sweep.json SWEEP="--knobs b128:cuda_panel_rows=256,cuda_panel_cluster=128 --knobs b256:cuda_panel_rows=256,cuda_panel_cluster=256" \
#   TRACE=2x4096,640x512 TRACE_KNOBS="--knobs fuse:cuda_panel_fuse=1" bash bench/devscripts/variants_call.sh
# Session 19's (T2, T3, L3; run 0416):
#   TESTS_K="trailing_variants or lookahead_variants" \
#   B12="--knobs tm:trailing_tile_major=1 --knobs la2:lookahead=2" \
#   BIG="--knobs pair:split_pair_update=1 --knobs pairtm:split_pair_update=1,trailing_tile_major=1" \
#   SINGLE="--knobs pair:split_pair_update=1" bash bench/devscripts/variants_call.sh
# Session 19's later ones (T4, N15, L3's reserve; runs 0429, 0435):
#   TESTS_K="slice_floor" BIG="--knobs s64:slice_min_rows=64 --knobs g1:fp16_group=1 \
#   --knobs r16:lookahead_reserve=16" SINGLE="--knobs s64:slice_min_rows=64"
# Built in session 19, run in session 20 (EXPERIMENTS.md W3, N16, H18, N17, X3; run 0643):
#   TESTS_K="overlapped or fp16_launch_variants or small_n_nb or replay_probe_load" \
#   B12="--knobs nb32:small_n_nb=32 --knobs r16k:fp16_resident_tile=16384 --knobs x3:replay_probe_load=1" \
#   BIG="--knobs both:split_both_routes=1" SINGLE="--knobs both:split_both_routes=1" \
#   WIDE="--knobs c4:wide_chunk=4 --knobs c8:wide_chunk=8 --knobs c16:wide_chunk=16" \
#   bash bench/devscripts/variants_call.sh
# Built in session 20, not run (EXPERIMENTS.md T5):
#   TESTS_K="blas_group" BIG="--knobs bg4:blas_group=4 --knobs bg8:blas_group=8" \
#   SINGLE="--knobs bg4:blas_group=4 --knobs bg8:blas_group=8" bash bench/devscripts/variants_call.sh
# Session 21's (QF10, X4; run 1140): rejected and removed.
# Session 22's: H21 (run 1210) rejected; T6 (run 1216) kept. Session 23: W5 kept, QF12
# and QF13 rejected (run 1321-1324). Built, not run: T7 and W6 (EXPERIMENTS.md):
#   T7: SKIP_B12=1 SWEEP_CASES=bench/devscripts/cases_t6_batch.json SWEEP="--knobs b16:tile_split_batch=16 \
#   --knobs b32:tile_split_batch=32 --knobs b64:tile_split_batch=64" bash bench/devscripts/variants_call.sh
#   W6: SKIP_B12=1 TESTS_K="probed_block" WIDE_BUDGET=1.0 WIDE="--knobs p:wide_probe=1" \
#   bash bench/devscripts/variants_call.sh   (then QF14's cases: adaptqr bench --op qr
#   --no-baseline --cases bench/devscripts/cases_qf14.json --knobs p:wide_probe=1)
# Session 24: H22 kept (batches of at most 8). Built, not run: H22's batch bound and the
# 1024-row panels as clusters of two 512-row Gram CTAs (60x1024), with T7 in the same sweep:
#   SWEEP_CASES=bench/devscripts/cases_t6_batch.json SWEEP="--knobs g16:gram_max_batch=16 \
#   --knobs g40:gram_max_batch=40 --knobs g64r:gram_max_batch=64,cuda_panel_rows=512 \
#   --knobs b16:tile_split_batch=16 --knobs b32:tile_split_batch=32" \
#   B12="--knobs g64r:gram_max_batch=64,cuda_panel_rows=512" TESTS_K="gram_panel" \
#   bash bench/devscripts/variants_call.sh
# Session 25: H23 kept, T7 rejected (run 0014); W6 kept (0022-0023). Built, not run: QF15
# (Q's rows padded) and A2 (wide rows padded), EXPERIMENTS.md:
#   SKIP_B12=1 TESTS_K="padded_rows" SWEEP_CASES=bench/devscripts/cases_a2_wide.json \
#   SWEEP="--knobs a:wide_row_align=16" HP_CASES=bench/devscripts/cases_qf15.json \
#   HP="--knobs p:qform_row_align=16" bash bench/devscripts/variants_call.sh
# Session 26: QF15 kept, A2 rejected and removed (run 0605-0607).
# Session 26: QF16 kept (run 0631, 0637). Built, not run: N19 (route lanes), QF17 (the Q
# strip kernel's stages) and QF18 (its panels one pass each), EXPERIMENTS.md:
#   TESTS_K="route_lanes or (q_kernel_variants and fuse)" \
#   BIG="--knobs rl1:route_lanes=1 --knobs rl2:route_lanes=2" SINGLE="--knobs rl1:route_lanes=1" \
#   SWEEP_CASES=bench/devscripts/cases_n18.json SWEEP="--knobs rl1:route_lanes=1" HP_CASES=bench \
#   HP="--knobs s2:qform_stages=2 --knobs s4:qform_stages=4 --knobs f32:qform_fuse=32 \
#   --knobs f64:qform_fuse=64" bash bench/devscripts/variants_call.sh
# Session 27: N19 kept at route_lanes 3, QF17 and QF18 rejected (runs 0819-0840). Built, not
# run: QF19 (Q of small inputs through the graph cache; hp_host.py's host times first) and
# QF20 (the Q strip kernel in CUDA C, the strip in shared memory):
#   HP_HOST=20x32 TESTS_K="graph_cache or cuda_strip or (q_kernel_variants and qform_cuda)" \
#   HP_CASES=bench HP="--knobs g8:qform_graph_max_input=8388608 --knobs c32:qform_cuda=32 \
#   --knobs c16:qform_cuda=16" QR_CASES=bench \
#   QR="--knobs g8:qform_graph_max_input=8388608 --knobs c32:qform_cuda=32" bash bench/devscripts/variants_call.sh
# Session 28: QF19 rejected, QF20 and QF21 (float4 shared reads) rejected, all removed
# (runs 1121, 1150).
# Session 30: T8 (`w_pingpong`) kept (run 1620: TESTS_K="w_pingpong", BIG, SINGLE, and a
# TRACE with TRACE_KNOBS="--replay --knobs pp:w_pingpong=1").
# Session 38: built, not run: T13 (the FP32 route's pair update) and QF23 (small Q in one
# cupy launch), EXPERIMENTS.md:
#   SKIP_B12=1 TESTS_K="fp32_pair or small_q_by_cuda" SWEEP_CASES=bench/devscripts/cases_t13.json \
#   SWEEP_TIMEOUT=240 SWEEP="--knobs p32:fp32_pair=32 --knobs p16:fp32_pair=16" HP_HOST=20x32 \
#   HP_CASES=bench/devscripts/cases_20x32.json HP="--knobs s:qform_small_cuda=1" \
#   bash bench/devscripts/variants_call.sh
# Session 39: built, not run: H32 (the Gram build's chains with their pivots off shared
# memory, the same bits; 1 loops, 2 the Cholesky unrolled) and H33 (4096-row panels in
# clusters of 16 CTAs), EXPERIMENTS.md:
#   SKIP_B12=1 TESTS_K="gram_chain or clusters_of_16" \
#   BIG="--knobs c1:gram_chain=1 --knobs c2:gram_chain=2 --knobs x16:cluster_max=16 --knobs x16c2:cluster_max=16,gram_chain=2 --knobs x16r128:cluster_max=16,cuda_panel_cluster=128,gram_chain=2" \
#   SINGLE="--knobs c1:gram_chain=1 --knobs c2:gram_chain=2 --knobs x16:cluster_max=16 --knobs x16c2:cluster_max=16,gram_chain=2" \
#   SWEEP_CASES=bench/devscripts/cases_h32_small.json \
#   SWEEP="--knobs c2:gram_chain=2 --knobs g64:gram_max_batch=64 --knobs g64c2:gram_max_batch=64,gram_chain=2" \
#   bash bench/devscripts/variants_call.sh
# Session 40 (no machine started): sessions 38's and 39's calls merged into one, for a session
# that may get only one call (the sweeps left out; worst case ~560 s), EXPERIMENTS.md OC32:
#   HP_HOST=20x32 TESTS_K="fp32_pair or small_q_by_cuda or gram_chain or clusters_of_16" SKIP_B12=1 \
#   BIG="--knobs c2:gram_chain=2 --knobs x16:cluster_max=16 --knobs x16c2:cluster_max=16,gram_chain=2" \
#   SINGLE="--knobs c2:gram_chain=2 --knobs x16:cluster_max=16 --knobs x16c2:cluster_max=16,gram_chain=2" \
#   HP_CASES=bench/devscripts/cases_20x32.json HP="--knobs s:qform_small_cuda=1" \
#   bash bench/devscripts/variants_call.sh
# Session 42 (runs 1620-1652): H32 kept (gram_chain gone), QF23 rejected and removed; H33
# and T13 measured on an H100 only. Next, on the H200 (EXPERIMENTS.md OC33): main's 12
# cases and householder_product beside them, with H33 beside the default:
#   TESTS_K="clusters_of_16" B12="--knobs x16:cluster_max=16" SINGLE="--knobs x16:cluster_max=16" \
#   HP=" " HP_CASES=bench bash bench/devscripts/variants_call.sh
# then T13 (its test now against float64; the test alone may take most of the 150 s):
#   SKIP_B12=1 TESTS_K="fp32_pair" SWEEP_CASES=bench/devscripts/cases_t13.json SWEEP_TIMEOUT=240 \
#   SWEEP="--knobs p32:fp32_pair=32 --knobs p16:fp32_pair=16" bash bench/devscripts/variants_call.sh
# Session 43 (H100 runs 1855-1922; no H200 came): H33, T13 and H34 kept, the defaults. Built,
# not run: QF24 (EXPERIMENTS.md). Next (OC34), on the H200 if one comes: main's 12 cases,
# householder_product on them with QF24 beside its default, and QF24's host times and tests:
#   HP_HOST=20x32 HP_HOST_KNOBS=qform_small_cuda=1 TESTS_K="small_q_by_cuda_c or clusters_of_16 or (gram_panel_matches and 48)" \
#   HP="--knobs q:qform_small_cuda=1" HP_CASES=bench TRACE=40x176,40x352 TRACE_KNOBS="--replay --cond 1" \
#   B12="--knobs g640:gram_max_batch=640" bash bench/devscripts/variants_call.sh
# (the trace sizes OC34's family 3: what 40x176's panels and updates take now; g640 is H35).
# Then the SOAP example on that machine, both optimizers (carry .whl):
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#   --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site; timeout 130 python3 \
#   examples/soap_step.py --steps 21; timeout 250 python3 examples/soap_step.py --steps 21 --optimizer heavyball
#   (H36's prototype, run 1212: rejected and removed.)
# Session 44 (no device time left: none ran). Built, not run: H37 (the small path, named
# only). The next session's calls (EXPERIMENTS.md OC35), each under 600 s:
#   1. (hp_host.py now times geqrf by the small path too, and each geqrf's GPU time alone;
#      the steps' timeouts are 60 + 150 + 260 + 90 s)
#      HP_HOST=20x32 TESTS_K="small_path or small_q_by_cuda_c or clusters_of_16 or (gram_panel_matches and 48)" \
#      B12="--knobs g640:gram_max_batch=640" SWEEP_CASES=bench/devscripts/cases_h37.json \
#      SWEEP="--paths householder,small" SWEEP_TIMEOUT=90 bash bench/devscripts/variants_call.sh
#   2. SKIP_B12=1 HP="--knobs q:qform_small_cuda=1" HP_CASES=bench TRACE=40x176,40x352 \
#      TRACE_KNOBS="--replay --cond 1" bash bench/devscripts/variants_call.sh
#   3. The SOAP example, both optimizers (carry .whl; the session-43 lines above).
# Session 45 (H100 runs 0422-0512): H37 and QF24 kept within bounds, H35 rejected, D6 kept.
# Built, not run: H38 (DIRECT_NORM). The next session's calls (EXPERIMENTS.md OC36):
#   1. timeout 120 python3 bench/devscripts/small_ab.py --out $OUT/small_ab.json; then
#      timeout 300 python3 -m pytest -q -m gpu tests/gpu/test_compile_gpu.py \
#      tests/gpu/test_degenerate_gpu.py -p no:cacheprovider -rfE (the small path the default)
#   2. The 12 cases, then --op householder_product on the same (issue 25's comparison:
#      HP="--knobs off:qform_small_cuda=0" HP_CASES=bench bash bench/devscripts/variants_call.sh)
#   3. The SOAP example, both optimizers; 4. session 44's call 2 (H36, the traces).
# Session 46 (H100 runs 0706-0749): QF25 (wide Q panels), QF26 (grouped strips) and QF27
# kept. Next (EXPERIMENTS.md OC37): the trace of householder_product at 60x1024
#   timeout 120 python3 bench/devscripts/trace.py --op householder_product --shapes 60x1024
# then session 45's calls 1 and 4 (H38, H36), and issue 25's comparison on an H200 if one
# comes: python3 bench/devscripts/qform_bench.py --cases bench+optimizer --no-blocked.
# Session 47 (H100 runs 0911-1003): QF28, QF29, QF30 kept (Q formation from operand halves
# made once). Built, not run: T14 (knob fp32_halves). Next (EXPERIMENTS.md OC38):
#   TESTS_K="fp32_pair_from_halves" B12="--knobs h:fp32_halves=1" \
#   bash bench/devscripts/variants_call.sh     (the variant test, then the 12 cases)
# then QF31 (built, not run): python3 bench/devscripts/qform_bench.py --cases bench+optimizer \
#   --no-blocked --budget 0.3 --knobs f:qform_flag_block=1 (on an H200 if one comes: issue
#   25's comparison too).
# Session 48 (H100 runs 1202-1217): T14 and QF31 kept (the defaults), H36 rejected. Built,
# not run: H38 (small_ab.py's segfault mended: its launchers now outlive the graphs):
#   timeout 60 python3 -X faulthandler -u bench/devscripts/small_ab.py --out $OUT/small_ab.json
# Session 49 (H100 runs 1410, 1545): H38 and H39 kept (the direct norm in the small kernel
# and the CUDA C panel; the A/B scripts removed). Next (EXPERIMENTS.md OC40): the 12 cases
# with every default, then the small path's bounds again after H38:
#   SWEEP_CASES=bench/devscripts/cases_h37.json SWEEP="--paths householder,small" \
#   SWEEP_TIMEOUT=90 bash bench/devscripts/variants_call.sh
# Session 50 (H100 runs 1659-1758): H40 (small path to 56 columns) and H42 (tau * w once a
# column step) kept, H41 rejected. Next (EXPERIMENTS.md OC41), one call, not this script:
#   (cd bench/devscripts && timeout 200 python3 panel_ab.py --builds \
#     "u1=STEP_UNROLL=1;u2=STEP_UNROLL=2")        # H43
#   timeout 300 python3 -m pytest -q -m gpu tests/gpu/test_householder_gpu.py -k "cuda_panel or gram"
#   timeout 120 python3 -m pytest -q -m gpu tests/gpu/test_small_gpu.py tests/gpu/test_wide_gpu.py
#   then `adaptqr bench` (the 12 cases) if time is left.
# Session 51 (H100 runs 1958-2031): H43 and H44 rejected, H45 (the LU two steps a pass)
# kept. Next (EXPERIMENTS.md OC42), one call, not this script:
#   (cd bench/devscripts && timeout 150 python3 gram_phases.py --shapes 40x176,40x352,60x1024 \
#     --out $OUT/gram_phases.json)                # H46: where a Gram panel's time goes
#   timeout 120 python3 -m adaptqr bench --budget 0.4 --out $OUT/h47 \
#     --cases bench/devscripts/cases_s51_clusters.json --knobs c64:cluster_small_batch=64 \
#     --knobs c64r128:cluster_small_batch=64,cluster_small_rows=128   # H47
#   then `adaptqr bench` (the 12 cases) if time is left.
# Session 52 (no device time: 226 s left, under the 240 s a start needs): N31 built (routes
# composed, knob fp16_compose, off). Next, two calls, not this script: the session-51 lines
# above and N31's GPU tests,
#   timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_fp16_route_gpu.py > $OUT/n31_tests.txt 2>&1
# then, on the warm machine, N31's cases beside the default and the 12 cases:
#   timeout 200 python3 -m adaptqr bench --budget 0.4 --no-baseline --out $OUT/n31 \
#     --cases bench/devscripts/cases_n31.json --knobs new:fp16_compose=1
#   timeout 330 python3 -m adaptqr bench --budget 0.4 --out $OUT/b12
# Session 53: no machine in twelve calls (EXPERIMENTS.md V18); the session-52 lines stand.
# Session 54: no machine in sixteen calls (V19); the session-52 lines became one script,
#   pending_call.sh, which session 55 ran (V20) and then rewrote for the work after it.
# Session 56 (V21) ran pending_call.sh and four one-off drivers (git has them at 3e15b59:
#   h48_call.sh, h48b_call.sh, final_s56.sh, h51b_call.sh), then removed them all. In this
#   script's terms, H48b and H51b were:
#   SKIP_B12=1 TESTS_K="cluster_budget or gram_panel_degenerate" \
#   SWEEP_CASES=bench/devscripts/cases_h48b.json SWEEP="--knobs p64:cluster_pair_ctas=64 \
#   --knobs p128:cluster_pair_ctas=128" bash bench/devscripts/variants_call.sh
#   SKIP_B12=1 TESTS_K="gram_panel" SWEEP_CASES=bench/devscripts/cases_h51.json \
#   SWEEP="--knobs off:gram_small_batch=0 --knobs g640:gram_max_batch=640" bash bench/devscripts/variants_call.sh
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/b12" "$OUT/big" "$OUT/single" "$OUT/sweep" "$OUT/wide" "$OUT/hp" "$OUT/qr" "$OUT/qr1"
# Variants in an option string; steps 3a and 3b get their timeouts by it (run 1209: five
# variants ran past 3a's fixed 70 s and wrote nothing).
nv() { grep -o -- "--knobs\|--env" <<< "$1" | wc -l; }
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
if [ -n "${HP_HOST:-}" ]; then
  echo "== 0. host time, $HP_HOST  (t=$(( $(date +%s) - T0 ))s)"
  timeout 60 python3 bench/devscripts/hp_host.py --shape "$HP_HOST" ${HP_HOST_KNOBS:+--knobs "$HP_HOST_KNOBS"} \
    > "$OUT/hp_host.txt" 2>&1
  echo "hp_host: exit $?"; head -n 2 "$OUT/hp_host.txt"
fi
if [ -n "${TESTS_K:-}" ]; then
  echo "== 1. variant tests  (t=$(( $(date +%s) - T0 ))s)"
  timeout 150 python3 -m pytest -q -m "gpu and variant" -k "$TESTS_K" tests/gpu -p no:cacheprovider \
    -rfE > "$OUT/variant_tests.txt" 2>&1
  echo "variant tests: exit $?"; tail -n 8 "$OUT/variant_tests.txt"
fi
if [ -z "${SKIP_B12:-}" ]; then
  echo "== 2. bench, 12 cases  (t=$(( $(date +%s) - T0 ))s)"
  # shellcheck disable=SC2086
  timeout 260 python3 -m adaptqr bench --budget 0.5 --out "$OUT/b12" ${B12:-} 2>&1 | grep -E "geomean|wrote|FAIL|rror"
fi
if [ -n "${BIG:-}" ]; then
  echo "== 3a. 8x2048, 2x4096  (t=$(( $(date +%s) - T0 ))s)"
  # shellcheck disable=SC2086
  timeout $(( 40 + 15 * ($(nv "$BIG") + 1) )) python3 -m adaptqr bench --budget 0.5 --out "$OUT/big" \
    --cases bench/devscripts/cases_big.json \
    $BIG 2>&1 | grep -E "geomean|wrote|FAIL|rror"
fi
if [ -n "${SINGLE:-}" ]; then
  echo "== 3b. batch 1  (t=$(( $(date +%s) - T0 ))s)"
  # shellcheck disable=SC2086
  timeout $(( 50 + 10 * ($(nv "$SINGLE") + 1) )) python3 -m adaptqr bench --budget 0.5 --out "$OUT/single" --cases single \
    $SINGLE 2>&1 | grep -E "geomean|wrote|FAIL|rror"
fi
if [ -n "${SWEEP_CASES:-}" ]; then
  echo "== 3c. $SWEEP_CASES  (t=$(( $(date +%s) - T0 ))s)"
  # shellcheck disable=SC2086
  timeout "${SWEEP_TIMEOUT:-120}" python3 -m adaptqr bench --budget 0.4 --no-baseline --out "$OUT/sweep" \
    --cases "$SWEEP_CASES" ${SWEEP:-} 2>&1 | grep -E "geomean|wrote|FAIL|rror"
fi
if [ -n "${WIDE:-}" ]; then
  echo "== 3d. wide  (t=$(( $(date +%s) - T0 ))s)"
  # shellcheck disable=SC2086
  timeout 100 python3 -m adaptqr bench --budget "${WIDE_BUDGET:-0.5}" --out "$OUT/wide" --cases wide $WIDE 2>&1 \
    | grep -E "geomean|wrote|FAIL|rror"
fi
if [ -n "${HP:-}" ]; then
  echo "== 3e. householder_product, ${HP_CASES:-bench/devscripts/cases_qf7.json}  (t=$(( $(date +%s) - T0 ))s)"
  # shellcheck disable=SC2086
  timeout 120 python3 -m adaptqr bench --op householder_product --no-baseline --budget 0.3 \
    --out "$OUT/hp" --cases "${HP_CASES:-bench/devscripts/cases_qf7.json}" $HP 2>&1 | grep -E "geomean|wrote|FAIL|rror"
fi
if [ -n "${QR:-}" ]; then
  echo "== 3f. linalg.qr, ${QR_CASES:-8x2048 and 2x4096}, and batch 1  (t=$(( $(date +%s) - T0 ))s)"
  # shellcheck disable=SC2086
  timeout 100 python3 -m adaptqr bench --op qr --budget 0.3 --out "$OUT/qr" \
    --cases "${QR_CASES:-bench/devscripts/cases_big.json}" $QR 2>&1 | grep -E "geomean|wrote|FAIL|rror"
  # shellcheck disable=SC2086
  timeout 100 python3 -m adaptqr bench --op qr --budget 0.3 --out "$OUT/qr1" --cases single \
    $QR 2>&1 | grep -E "geomean|wrote|FAIL|rror"
fi
if [ -n "${TRACE:-}" ]; then
  echo "== 4. trace $TRACE  (t=$(( $(date +%s) - T0 ))s)"
  # shellcheck disable=SC2086
  timeout 120 python3 bench/devscripts/trace.py --shapes "$TRACE" ${TRACE_KNOBS:-} > "$OUT/trace.txt" 2>&1
  echo "trace: exit $?"
fi
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
