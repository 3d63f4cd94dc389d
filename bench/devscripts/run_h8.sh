#!/usr/bin/env bash
# One device call for EXPERIMENTS.md H8 (H200): the recursive T build against the column
# recurrence (path alone, every benchmark case, accuracy at full batch), then adaptqr bench
# on the 12 cases, adaptqr check (test cases, other seeds) and the Householder GPU tests.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/run_h8.sh   (files under $OUT)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/a" "$OUT/main"
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip install -e failed"
OUT="$OUT/a" timeout 115 python3 bench/devscripts/hh_bench.py --sections panels --budget 100 | grep -v "^panel .* ok$" ; grep -h '"panel"' -A0 /dev/null
python3 - <<'PY'
import json, os
d = json.load(open(os.path.join(os.environ.get("OUT", "/tmp/out"), "a", "hh_bench.json")))
for v in d["variants"]:
    print(f'{v["case"]:28s} {v["panel"]:6s} {v["ms"]:8.3f} ms factor {v["factor"]:.3f} orth {v["orth"]:.3f} {"ok" if v["bar"] else "FAIL"}')
PY
echo "== bench  (t=$(( $(date +%s) - T0 ))s)"
timeout 75 python3 -m adaptqr bench --budget 1.2 --out "$OUT/main" | tail -n 17
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== checks  (t=$(( $(date +%s) - T0 ))s)"
timeout 35 python3 -m adaptqr check --cases tests > "$OUT/check_tests.txt" 2>/dev/null; echo "tests: exit $?"; tail -n 2 "$OUT/check_tests.txt"
timeout 30 python3 -m adaptqr check --cases bench/devscripts/cases_other_seeds.json > "$OUT/check_other_seeds.txt" 2>/dev/null; echo "other seeds: exit $?"; tail -n 2 "$OUT/check_other_seeds.txt"
echo "== GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 50 python3 -m pytest -q -m gpu tests/gpu/test_householder_gpu.py -p no:cacheprovider -rfE > "$OUT/gpu_tests.txt" 2>&1; echo "exit $?"; tail -n 3 "$OUT/gpu_tests.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
