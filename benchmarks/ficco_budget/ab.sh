#!/bin/bash
# A/B sample of the FiCCO study's cost: the 8 dma-schedule points of ficco-dma8.yaml (ficco-sp's g1 and g2,
# the study's scaled shapes and values) run by a base tree and by this one at the same time, JOBS points each, after a
# numba warm-up of both (--force: a warm-up whose results exist would reuse them and compile nothing). Prints each
# point's wall time in both trees and whether its statistics (less sim.events) are equal.
#   usage: benchmarks/ficco_budget/ab.sh BASE_TREE OUT_DIR [JOBS]    (BASE_TREE: e.g. a `git worktree add` of the base)
# BASE_TREE needs its own copy of this folder (copy it there if the base predates it).
# Spread: an A/A run (the same code in both trees) gave 1.001x in sum, 0.80-1.06x per point.
set -u
B=$(cd "$1" && pwd); OUT=$2; J=${3:-8}; R=$(cd "$(dirname "$0")/../.." && pwd); H=benchmarks/ficco_budget
mkdir -p "$OUT"
warm() { for s in hetero_fused_1d uniform_fused_2d uniform_fused_1d; do
  python3 -m t3sim.cli run $H/warm.yaml --set scheme.ficco_schedule=$s --force --out "$OUT/warm_$1" > /dev/null 2>&1 \
    || echo "warm-up $1 $s failed"; done; }
(cd "$B" && PYTHONPATH="$B${PYTHONPATH:+:$PYTHONPATH}" warm base) &
(cd "$R" && PYTHONPATH="$R${PYTHONPATH:+:$PYTHONPATH}" warm new) &
wait
(cd "$B" && PYTHONPATH="$B${PYTHONPATH:+:$PYTHONPATH}" python3 -m t3sim.cli run $H/ficco-dma8.yaml -j "$J" --force \
  --out "$OUT/base" > "$OUT/base.log" 2>&1) &
(cd "$R" && PYTHONPATH="$R${PYTHONPATH:+:$PYTHONPATH}" python3 -m t3sim.cli run $H/ficco-dma8.yaml -j "$J" --force \
  --out "$OUT/new" > "$OUT/new.log" 2>&1) &
wait
python3 "$R/$H/compare.py" "$OUT"
