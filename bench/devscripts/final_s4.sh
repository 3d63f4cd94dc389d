#!/usr/bin/env bash
# Session 4's last device call (H200): validate.sh's bench (12 cases, default and without
# the detectors), the low-rank cases with the deferred tail off / resident against the
# default (EXPERIMENTS.md D1), the GPU tests but the variant comparisons, and the checks.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/final_s4.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/main" "$OUT/lowrank"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
echo "== 1. bench (12 cases): default and noprobe"
timeout 215 python3 -m adaptqr bench --budget 1.5 --env noprobe:ADAPTQR_DETECT=0 --out "$OUT/main" | grep -v "^  "
echo "== 2. low-rank: deferred tail  (t=$(( $(date +%s) - T0 ))s)"
timeout 100 python3 -m adaptqr bench --budget 1.0 --cases bench/devscripts/cases_lowrank.json --env deferoff:ADAPTQR_TAIL_DEFER=off --env resident:ADAPTQR_TAIL_DEFER=resident --no-baseline --out "$OUT/lowrank" | grep -v "^  \|^\["
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== 3. GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 150 python3 -m pytest -q -m "gpu and not variant" tests/gpu -p no:cacheprovider -rfE --durations=5 > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests exit $?"; tail -n 12 "$OUT/gpu_tests.txt"
echo "== 4. checks  (t=$(( $(date +%s) - T0 ))s)"
timeout 45 python3 -m adaptqr check --cases tests > "$OUT/check_tests.txt" 2>/dev/null; echo "tests: exit $?"; tail -n 2 "$OUT/check_tests.txt"
timeout 45 python3 -m adaptqr check --cases bench/devscripts/cases_other_seeds.json > "$OUT/check_other_seeds.txt" 2>/dev/null; echo "other seeds: exit $?"; tail -n 15 "$OUT/check_other_seeds.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
