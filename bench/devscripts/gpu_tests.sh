#!/usr/bin/env bash
# The GPU test suite in parts that each fit one device call (10 minutes):
#   a: householder, FP16 route, detectors, reference
#   b: contract, graphs
#   d: issues 25, 26, 28: Q formation (householder_product, linalg.qr), foreach, wide, compile
#   c: the degenerate-input property suite, DEGENERATE_EXAMPLES examples (default 2000)
# The schedule-variant comparisons (marker `variant`) are left out.
# Usage there:  bash bench/devscripts/gpu_tests.sh a|b|c|d    (log under $OUT/gpu_tests_<part>.txt)
# GPU_TESTS_TIMEOUT (seconds, default 540) bounds pytest itself: a `timeout` around this
# script stops the script, not the pytest it started, which then runs on beside the next
# step of the call (it did in session 17, under a bench).
source "$(dirname "$0")/_preamble.sh"
part=${1:?give the part: a, b, c or d}
case $part in
  a) files="tests/gpu/test_householder_gpu.py tests/gpu/test_fp16_route_gpu.py tests/gpu/test_detectors_gpu.py tests/gpu/test_reference_gpu.py" ;;
  b) files="tests/gpu/test_contract_gpu.py tests/gpu/test_graphs_gpu.py" ;;
  d) files="tests/gpu/test_qform_gpu.py tests/gpu/test_foreach_gpu.py tests/gpu/test_wide_gpu.py tests/gpu/test_compile_gpu.py" ;;
  c) files="tests/gpu/test_degenerate_gpu.py"; export DEGENERATE_EXAMPLES=${DEGENERATE_EXAMPLES:-2000} ;;
  *) echo "unknown part $part (a, b, c or d)"; exit 2 ;;
esac
# shellcheck disable=SC2086
timeout "${GPU_TESTS_TIMEOUT:-540}" python3 -m pytest -q -m "gpu and not variant" $files -p no:cacheprovider -rfE \
  --durations=10 --hypothesis-show-statistics > "$OUT/gpu_tests_$part.txt" 2>&1
echo "gpu tests $part: exit $?  (t=$(( $(date +%s) - T0 ))s)"
tail -n 30 "$OUT/gpu_tests_$part.txt"
