#!/bin/bash
# A/B sample of the FLUX study's cost (docs/performance.md): flux-op-h800's 21 cases at one m, run by a
# base tree and by this one at the same time, JOBS points each, after a numba warm-up of both on the 21 cases at m = 64.
# Prints each point's wall time in both trees, whether its statistics (less sim.events) are equal, and the sums
# (ficco_budget/compare.py).
#   usage: benchmarks/flux_ab.sh BASE_TREE OUT_DIR [M] [JOBS]    (BASE_TREE: e.g. a `git worktree add` of the base)
set -u
B=$(cd "$1" && pwd); OUT=$2; M=${3:-2048}; J=${4:-8}; R=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
run() { (cd "$1" && PYTHONPATH="$1${PYTHONPATH:+:$PYTHONPATH}" python3 -m t3sim.cli run configs/experiments/flux-op-h800.yaml \
  --set "sweep.grid={workload.tokens: [$2]}" -j "$J" --force --out "$3" > "$3.log" 2>&1) || echo "run $3 failed"; }
run "$B" 64 "$OUT/warm_base" & run "$R" 64 "$OUT/warm_new" & wait
run "$B" "$M" "$OUT/base" & run "$R" "$M" "$OUT/new" & wait
python3 "$R/benchmarks/ficco_budget/compare.py" "$OUT"
