#!/usr/bin/env bash
# One device call that measures and checks everything a session resolves (H200):
#   1. adaptqr bench on the 12 qr_v2 cases, default dispatch and ADAPTQR_DETECT=0 (probe cost)
#   2. adaptqr check: the 22 test cases, and the 12 benchmark cases at other seeds
#   3. every GPU test but the schedule-variant comparisons (marker `variant`)
#   4. the launch-bound cases with and without CUDA graphs (ADAPTQR_GRAPHS=0)
# (in the order of what a session's claims need most, should the device time run out)
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/validate.sh
# BENCH_ENV (default noprobe:ADAPTQR_DETECT=0): the bench's second variant, e.g.
# fp32:ADAPTQR_FP16=0 to compare the FP16 route with the FP32 one in the same run (issue 8);
# BENCH_BUDGET (default 1.5): seconds of repeats a case.
# Back under $OUT (at most 8 files): log.txt, main/*.json, small/*.json, gpu_tests.txt,
# check_tests.txt, check_other_seeds.txt.
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/main" "$OUT/small"
python3 -c "import adaptqr.paths.householder, adaptqr.detectors, adaptqr.graphs, torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv
echo "== 1. bench (12 cases): default and ${BENCH_ENV:=noprobe:ADAPTQR_DETECT=0}"
timeout 240 python3 -m adaptqr bench --budget "${BENCH_BUDGET:-1.5}" --env "$BENCH_ENV" --out "$OUT/main"
echo "== 2. checks  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 -m adaptqr check --cases tests > "$OUT/check_tests.txt" 2>/dev/null; echo "tests: exit $?"; tail -n 4 "$OUT/check_tests.txt"
timeout 60 python3 -m adaptqr check --cases bench/devscripts/cases_other_seeds.json > "$OUT/check_other_seeds.txt" 2>/dev/null; echo "other seeds: exit $?"; tail -n 16 "$OUT/check_other_seeds.txt"
echo "== 3. GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 230 python3 -m pytest -q -m "gpu and not variant" tests/gpu -p no:cacheprovider -rfE --durations=8 > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests exit $?"; tail -n 25 "$OUT/gpu_tests.txt"
echo "== 4. graphs on/off, launch-bound cases  (t=$(( $(date +%s) - T0 ))s)"
timeout 35 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_small.json --env nographs:ADAPTQR_GRAPHS=0 --out "$OUT/small"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
