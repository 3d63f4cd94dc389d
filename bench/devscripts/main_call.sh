#!/usr/bin/env bash
# One device call (< 600 s) that re-measures main after a kept change:
#   1. the GPU tests of $TEST_FILES (default: the FP16 route, graphs, compile; marker
#      `gpu and not variant`) and the variant tests matching $TESTS_K (if set)
#   2. the 12 cases, then batch 1 (1x4096 against torch.geqrf), both with their baseline
#   3. householder_product on the 12 cases (issue 25's pairing: same call as step 2)
#   4. the benchmark cases at other seeds through `adaptqr check`
# Back under $OUT: log.txt, gpu_main.txt, variant_tests.txt, b12/, single/, hp/,
# check_other_seeds.txt.
source "$(dirname "$0")/_preamble.sh"
files=${TEST_FILES:-tests/gpu/test_fp16_route_gpu.py tests/gpu/test_graphs_gpu.py tests/gpu/test_compile_gpu.py}
echo "== 1. GPU tests  (t=$(( $(date +%s) - T0 ))s)"
# shellcheck disable=SC2086
timeout 200 python3 -m pytest -q -m "gpu and not variant" $files -p no:cacheprovider -rfE \
  > "$OUT/gpu_main.txt" 2>&1
echo "gpu tests: exit $?"; tail -n 6 "$OUT/gpu_main.txt"
if [ -n "${TESTS_K:-}" ]; then
  timeout 120 python3 -m pytest -q -m "gpu and variant" -k "$TESTS_K" tests/gpu -p no:cacheprovider \
    -rfE > "$OUT/variant_tests.txt" 2>&1
  echo "variant tests: exit $?"; tail -n 4 "$OUT/variant_tests.txt"
fi
echo "== 2. bench  (t=$(( $(date +%s) - T0 ))s)"
timeout 150 python3 -m adaptqr bench --budget 0.5 --out "$OUT/b12" 2>&1 | grep -E "geomean|wrote|FAIL|rror"
timeout 60 python3 -m adaptqr bench --budget 0.5 --out "$OUT/single" --cases single 2>&1 \
  | grep -E "geomean|wrote|FAIL|rror"
echo "== 3. householder_product  (t=$(( $(date +%s) - T0 ))s)"
timeout 120 python3 -m adaptqr bench --op householder_product --no-baseline --budget 0.3 \
  --out "$OUT/hp" --cases bench 2>&1 | grep -E "geomean|wrote|FAIL|rror"
echo "== 4. other seeds  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 -m adaptqr check --cases bench/devscripts/cases_other_seeds.json \
  > "$OUT/check_other_seeds.txt" 2>/dev/null; echo "other seeds: exit $?"
tail -n 16 "$OUT/check_other_seeds.txt"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
