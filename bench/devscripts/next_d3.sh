#!/usr/bin/env bash
# Session 6's first run (H200): EXPERIMENTS.md D3, the clustered tail's cost (tail_diag.py).
# Usage there:  bash bench/devscripts/next_d3.sh
source "$(dirname "$0")/_preamble.sh"
timeout 400 python3 bench/devscripts/tail_diag.py
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
