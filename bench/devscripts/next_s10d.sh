#!/usr/bin/env bash
# Session 10, fourth call (H200): cholqr_sweep.py alone (4x4096, 1x8192, direct calls).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s10d.sh
source "$(dirname "$0")/_preamble.sh"
timeout 300 python3 bench/devscripts/cholqr_sweep.py
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
