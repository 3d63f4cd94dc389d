#!/usr/bin/env bash
# One short device call: worst residuals per qr_v2 test case for the default dispatch and for
# the reference path, the benchmark cases at other seeds, and the detector GPU tests.
# Back under $OUT: log.txt, check_default.txt, check_reference.txt, check_other_seeds.txt.
source "$(dirname "$0")/_preamble.sh"
timeout 60 python3 -m adaptqr check --cases tests > "$OUT/check_default.txt" 2>/dev/null; echo "default: exit $?"; tail -n 26 "$OUT/check_default.txt"
timeout 70 python3 -m adaptqr check --cases tests --path reference > "$OUT/check_reference.txt" 2>/dev/null; echo "reference: exit $?"; tail -n 26 "$OUT/check_reference.txt"
timeout 30 python3 -m pytest -q -m gpu tests/gpu/test_detectors_gpu.py -p no:cacheprovider 2>&1 | tail -n 3
timeout 50 python3 -m adaptqr check --cases bench/devscripts/cases_other_seeds.json > "$OUT/check_other_seeds.txt" 2>/dev/null; echo "other seeds: exit $?"; tail -n 16 "$OUT/check_other_seeds.txt"
