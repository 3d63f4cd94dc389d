#!/usr/bin/env bash
# The quoted benchmark run (H200): adaptqr bench on the 12 qr_v2 cases, then the launch-bound
# cases with graphs on and off. Usage there: ADAPTQR_COMMIT=<sha> bash bench/devscripts/quoted_bench.sh
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/main" "$OUT/small"
timeout 150 python3 -m adaptqr bench --budget 1.5 --out "$OUT/main" | tail -n 20
echo "== graphs on/off  (t=$(( $(date +%s) - T0 ))s)"
timeout 40 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_small.json --env nographs:ADAPTQR_GRAPHS=0 --out "$OUT/small" | tail -n 10
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
