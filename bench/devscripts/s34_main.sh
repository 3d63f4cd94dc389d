#!/usr/bin/env bash
# Session 34: main after N26b and G6. GPU tests (graphs, FP16 route, the deterministic
# mode and N26's partials), the 640x512 cases side by side with the old graph bound, the
# 12 cases and batch 1 with the torch baseline, householder_product, other seeds.
source "$(dirname "$0")/_preamble.sh"
timeout 240 python3 -m pytest -q -m "gpu and not variant" -p no:cacheprovider -rfE \
  tests/gpu/test_graphs_gpu.py tests/gpu/test_fp16_route_gpu.py \
  "tests/gpu/test_householder_gpu.py::test_deterministic_mode_gives_the_same_bits" \
  "tests/gpu/test_householder_gpu.py::test_w_partials_give_the_same_bits_every_call" \
  > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -n 4 "$OUT/gpu_tests.txt"
timeout 200 python3 -m adaptqr bench --cases bench/devscripts/cases_640.json --no-baseline \
  --budget 1.0 --env e256:ADAPTQR_GRAPH_MAX_INPUT=268435456 --out "$OUT/g6" > "$OUT/g6.txt" 2>&1
echo "g6: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "^[0-9].*adaptqr|geomean" "$OUT/g6.txt"
timeout 150 python3 -m adaptqr bench --budget 0.5 --out "$OUT/b12" > "$OUT/b12.txt" 2>&1
echo "b12: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "^[0-9].*adaptqr|geomean" "$OUT/b12.txt"
timeout 60 python3 -m adaptqr bench --budget 0.5 --out "$OUT/single" --cases single > "$OUT/single.txt" 2>&1
echo "single: exit $?"; grep -E "^1x4096|geomean" "$OUT/single.txt"
timeout 120 python3 -m adaptqr bench --op householder_product --no-baseline --budget 0.3 \
  --out "$OUT/hp" --cases bench > "$OUT/hp.txt" 2>&1
echo "hp: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "^[0-9].*adaptqr|geomean" "$OUT/hp.txt"
timeout 60 python3 -m adaptqr check --cases bench/devscripts/cases_other_seeds.json \
  > "$OUT/check_other_seeds.txt" 2>/dev/null; echo "other seeds: exit $?"; tail -n 3 "$OUT/check_other_seeds.txt"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done (t=$(( $(date +%s) - T0 ))s)"
