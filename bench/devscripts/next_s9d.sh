#!/usr/bin/env bash
# Session 9, issue 9 (EXPERIMENTS.md C7): the orthogonality estimate's calibration.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s9d.sh
source "$(dirname "$0")/_preamble.sh"
timeout 300 python3 bench/devscripts/cholqr_calib.py
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
