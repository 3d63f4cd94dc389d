#!/usr/bin/env bash
# The measurements prepared for the next session (EXPERIMENTS.md H9 and candidates 2, 4), one
# device call (H200): panel variants (base / separate T kernel / 4 warps / both) on the 12
# benchmark cases, path alone with accuracy at full batch; what T costs in a panel launch
# and the separate T kernel alone (micro.py tbuild); the one-launch kernel against
# blocked nb 16 for n = 80..128; the Householder GPU tests (the T kernel's among them).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_panels.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/a" "$OUT/b"
OUT="$OUT/a" timeout 330 python3 bench/devscripts/hh_bench.py --sections panels --budget 310
echo "== T costs  (t=$(( $(date +%s) - T0 ))s)"
timeout 40 python3 bench/devscripts/micro.py --sections tbuild
echo "== small  (t=$(( $(date +%s) - T0 ))s)"
OUT="$OUT/b" timeout 60 python3 bench/devscripts/hh_bench.py --sections small --budget 50
echo "== GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_householder_gpu.py -p no:cacheprovider -rfE > "$OUT/gpu_tests.txt" 2>&1
echo "exit $?"; tail -n 5 "$OUT/gpu_tests.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
