#!/usr/bin/env bash
# One device call (< 600 s) for session 17's candidates, built but not run (EXPERIMENTS.md
# OC9): H15 (cuda_panel_fill), H16 (cuda_panel_cluster) and G4 (a graph for 60x1024).
#   1. their GPU variant tests (correctness first; a cluster deadlock would stop here)
#   2. the 12 cases: default, H15, H16 at CTAs of 512 rows, G4 (every output checked)
#   3. 8x2048 and 2x4096 with H16 at CTAs of 256 / 512 / 1024 rows; batch 1 at 256 / 512,
#      and with every panel above 256 rows in clusters of 128-row CTAs
# Each step's own timeout is on the Python process (see gpu_tests.sh's note).
# Back under $OUT: log.txt, variant_tests.txt, b12/*.json, big/*.json, single/*.json.
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/b12" "$OUT/big" "$OUT/single"
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
echo "== 1. variant tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 150 python3 -m pytest -q -m "gpu and variant" -k "fill or clusters" \
  tests/gpu/test_householder_gpu.py -p no:cacheprovider -rfE > "$OUT/variant_tests.txt" 2>&1
echo "variant tests: exit $?"; tail -n 8 "$OUT/variant_tests.txt"
echo "== 2. bench, 12 cases  (t=$(( $(date +%s) - T0 ))s)"
timeout 260 python3 -m adaptqr bench --budget 0.5 --out "$OUT/b12" \
  --knobs fill:cuda_panel_fill=1 --knobs c512:cuda_panel_cluster=512 \
  --env g256:ADAPTQR_GRAPH_MAX_INPUT=268435456 2>&1 | grep -E "geomean|wrote|FAIL|rror"
echo "== 3. tall panels  (t=$(( $(date +%s) - T0 ))s)"
timeout 70 python3 -m adaptqr bench --budget 0.5 --out "$OUT/big" --cases bench/devscripts/cases_big.json \
  --knobs c256:cuda_panel_cluster=256 --knobs c512:cuda_panel_cluster=512 \
  --knobs c1024:cuda_panel_cluster=1024 2>&1 | grep -E "geomean|wrote|FAIL|rror"
timeout 80 python3 -m adaptqr bench --budget 0.5 --out "$OUT/single" --cases single \
  --knobs c256:cuda_panel_cluster=256 --knobs c512:cuda_panel_cluster=512 \
  --knobs b128:cuda_panel_rows=256,cuda_panel_cluster=128 2>&1 | grep -E "geomean|wrote|FAIL|rror"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
