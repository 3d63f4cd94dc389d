#!/usr/bin/env bash
# Session 56's fourth call: the degenerate-input and cluster GPU tests under the session's
# defaults (N31, H48, H48b), H49 beside the default, the 12 cases, and every case at five
# seeds not used before (the float64 check). Ran as run 0913-0914; H49's knob was removed
# after it (rejected; git has it at d46ed5f). Run there: bash bench/devscripts/final_s56.sh
source "$(dirname "$0")/_preamble.sh"
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== gpu tests"
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rfE tests/gpu/test_degenerate_gpu.py
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider -rfE tests/gpu/test_householder_gpu.py \
  -k "cluster_budget or gram_panel_degenerate"
echo "== h49 (t=$(( $(date +%s) - T0 ))s)"
timeout 150 python3 -m adaptqr bench --budget 0.4 --no-baseline --out "$OUT/h49" \
  --cases bench/devscripts/cases_h49.json --knobs w256:cluster_wide_ctas=256
echo "== b12 (t=$(( $(date +%s) - T0 ))s)"
timeout 120 python3 -m adaptqr bench --budget 0.4 --out "$OUT/b12"
echo "== seeds (t=$(( $(date +%s) - T0 ))s)"
timeout 200 python3 -m adaptqr check --cases bench/devscripts/cases_s56_seeds.json > "$OUT/seeds.txt" 2>&1
echo "seeds: exit $?"; tail -n 20 "$OUT/seeds.txt"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "elapsed $(( $(date +%s) - T0 )) s"
