#!/usr/bin/env bash
# EXPERIMENTS.md N26 (knob w_partials): the row-split updates' W as each slice's sums,
# added in slice order. Steps (each skipped if its variable is set):
#   tests (SKIP_TESTS): its GPU test (the same bits every call, both modes), ~120 s
#   bench (SKIP_BENCH): cases where updates split over rows, default / partials side by
#                       side, ~120 s
source "$(dirname "$0")/_preamble.sh"
if [ -z "${SKIP_TESTS:-}" ]; then
  timeout 240 python3 -m pytest -q -p no:cacheprovider -rfE \
    tests/gpu/test_householder_gpu.py::test_w_partials_give_the_same_bits_every_call > "$OUT/tests.txt" 2>&1
  echo "tests: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -5 "$OUT/tests.txt"
fi
if [ -z "${SKIP_BENCH:-}" ]; then
  timeout 300 python3 -m adaptqr bench --cases bench/devscripts/cases_n26.json --no-baseline \
    --knobs wp:w_partials=1 --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
  echo "bench: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "^[0-9].*adaptqr|geomean" "$OUT/bench.txt"
fi
