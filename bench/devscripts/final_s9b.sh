#!/usr/bin/env bash
# Session 9: the GPU test files final_s9.sh left out (householder, detectors, reference) and
# the cholqr tests at the kept leaves (C9).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/final_s9b.sh
source "$(dirname "$0")/_preamble.sh"
timeout 420 python3 -m pytest -q -m "gpu and not variant" tests/gpu/test_cholqr_gpu.py \
  tests/gpu/test_detectors_gpu.py tests/gpu/test_householder_gpu.py tests/gpu/test_reference_gpu.py \
  -p no:cacheprovider -rfE > "$OUT/gpu_tests_b.txt" 2>&1
echo "gpu tests exit $?"; tail -n 12 "$OUT/gpu_tests_b.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
