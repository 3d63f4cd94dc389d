#!/usr/bin/env bash
# EXPERIMENTS.md H29: the few-large-matrix cases' knobs again after N21-N26 (clusters,
# slices, one-tile split, FP16 group, pair split, route lanes), side by side, ~250 s.
source "$(dirname "$0")/_preamble.sh"
timeout 500 python3 -m adaptqr bench --cases bench/devscripts/cases_h29.json --no-baseline \
  --budget "${BUDGET:-0.6}" \
  --knobs cl128:cuda_panel_cluster=128 --knobs cl512:cuda_panel_cluster=512 \
  --knobs sl0:slice_min_rows=0 --knobs sl128:slice_min_rows=128 \
  --knobs ts128:tile_split_rows=128 --knobs ts512:tile_split_rows=512 \
  --knobs g1:fp16_group=1 --knobs g2:fp16_group=2 \
  --knobs ps0:pair_split=0 --knobs ps256:pair_split=256 \
  --knobs rl0:route_lanes=0 --knobs rl1:route_lanes=1 \
  --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
echo "bench: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "^[0-9].*adaptqr|geomean" "$OUT/bench.txt"
rm -f "$OUT"/bench/*.csv
