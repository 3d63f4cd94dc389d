#!/usr/bin/env bash
# The quoted benchmark run (H200): adaptqr bench on the 12 qr_v2 cases, then the launch-bound
# cases with graphs on and off. Usage there: ADAPTQR_COMMIT=<sha> bash bench/devscripts/final_bench.sh
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/main" "$OUT/small"
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip install -e failed"
timeout 150 python3 -m adaptqr bench --budget 1.5 --out "$OUT/main" | tail -n 20
echo "== graphs on/off  (t=$(( $(date +%s) - T0 ))s)"
timeout 40 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_small.json --env nographs:ADAPTQR_GRAPHS=0 --out "$OUT/small" | tail -n 10
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
