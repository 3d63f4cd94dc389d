#!/usr/bin/env bash
# Session 30's second measuring call (EXPERIMENTS.md T8, G5): the 160x512 CUDA-vs-Triton panel
# comparison that failed in part a (run 1641) at four seeds, with and without T8; the four
# 640x512 cases eager (the default) against a graph (ADAPTQR_GRAPH_MAX_INPUT 2 GiB); GPU
# test parts b and d at T8's default.
source "$(dirname "$0")/_preamble.sh"
echo "== diag160  (t=$(( $(date +%s) - T0 ))s)"
timeout 120 python3 bench/devscripts/diag160_tmp.py > "$OUT/diag160.txt" 2>&1
echo "diag160: exit $?"; grep -v Warn "$OUT/diag160.txt" | tail -n 24
echo "== 640x512 eager / graph  (t=$(( $(date +%s) - T0 ))s)"
mkdir -p "$OUT/g640"
timeout 150 python3 -m adaptqr bench --budget 0.5 --out "$OUT/g640" --cases bench/devscripts/cases_640.json \
  --env g2g:ADAPTQR_GRAPH_MAX_INPUT=2147483648 2>&1 | grep -E "geomean|wrote|FAIL|rror"
GPU_TESTS_TIMEOUT=80 bash bench/devscripts/gpu_tests.sh b 2>&1 | grep -E "gpu tests|passed|failed|FAIL"
GPU_TESTS_TIMEOUT=150 bash bench/devscripts/gpu_tests.sh d 2>&1 | grep -E "gpu tests|passed|failed|FAIL"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
