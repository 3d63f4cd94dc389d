#!/usr/bin/env bash
# Session 8, after final_s8.sh (H200): 5 other seeds of the five benchmark cases the FP16 route
# is not offered at (their kernels changed with fit_bn), then the GPU tests final_s8.sh's
# timeout cut or left out.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/final_s8b.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. 5 other seeds, the other benchmark cases"
timeout 90 python3 -m adaptqr check --cases bench/devscripts/cases_seeds5_rest.json > "$OUT/check_seeds5_rest.txt" 2>/dev/null
echo "exit $?"; tail -n 3 "$OUT/check_seeds5_rest.txt"
echo "== 2. GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 380 python3 -m pytest -q -m "gpu and not variant" tests/gpu/test_householder_gpu.py \
  tests/gpu/test_contract_gpu.py tests/gpu/test_detectors_gpu.py tests/gpu/test_graphs_gpu.py \
  tests/gpu/test_reference_gpu.py -p no:cacheprovider -rfE --durations=5 > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests exit $?"; tail -n 14 "$OUT/gpu_tests.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
