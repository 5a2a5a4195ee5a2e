#!/bin/bash
# The FiCCO study (or part of it) measured whole on a many-core machine, in runs of at most SECONDS that resume one
# another (its CPU-hour budget).
#   usage: benchmarks/ficco_budget/study.sh SECONDS EXP:JOBS [EXP:JOBS ...]
#   e.g.   benchmarks/ficco_budget/study.sh 480 ficco-ep:6 ficco-sp:10
# Runs each configs/experiments/EXP.yaml with JOBS workers, all at once, for at most SECONDS, into $PACK/res
# (PACK: a folder of the working tree, default pack/); points an earlier run finished (packed in $PACK/res-EXP.tgz)
# are reused. numba's cache is packed the same way ($PACK/nbc.tgz): a fresh machine compiles once (~70 s), a resumed
# run loads it (~20 s). Writes $OUT/res-EXP.tgz (one per experiment, ~60 KB a point) and $OUT/nbc.tgz (OUT: default
# $PACK/out) -- move them into $PACK to resume -- and the runs' logs.
# Afterwards: python benchmarks/ficco_budget/cost.py DIR (DIR: where the res-*.tgz were unpacked) sums the points'
# wall times by experiment and schedule kind; experiments/ficco/plot.py --results DIR/res remakes ficco.csv.
# Wheel files in $PACK (the package's dependencies, for a machine without an index) are installed first.
set -u
T=$1; shift
PACK=${PACK:-pack}
OUT=${OUT:-$PACK/out}
mkdir -p "$PACK/res" "$PACK/nbc" "$OUT"
if compgen -G "$PACK/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$PACK"/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD NUMBA_CACHE_DIR=$PWD/$PACK/nbc PYTHONUNBUFFERED=1
for f in "$PACK"/res-*.tgz "$PACK/nbc.tgz"; do [ -f "$f" ] && tar xzf "$f" -C "$PACK"; done
s=$(date +%s)
python3 -m t3sim.cli run benchmarks/ficco_budget/warm.yaml --force --out /tmp/warm > "$OUT/warm.log" 2>&1
echo "cores $(nproc) ($(lscpu 2>/dev/null | grep -i 'thread(s) per core' | tr -s ' ')); numba warm-up $(( $(date +%s) - s )) s"
for ej in "$@"; do
  timeout "$T" python3 -m t3sim.cli run "configs/experiments/${ej%%:*}.yaml" -j "${ej##*:}" --out "$PACK/res" \
    > "$OUT/${ej%%:*}.log" 2>&1 &
done
wait
echo "runs done at $(( $(date +%s) - s )) s; points with results: $(find "$PACK/res" -name meta.json | wc -l)"
for ej in "$@"; do [ -d "$PACK/res/${ej%%:*}" ] && tar czf "$OUT/res-${ej%%:*}.tgz" -C "$PACK" "res/${ej%%:*}"; done
tar czf "$OUT/nbc.tgz" -C "$PACK" nbc
for ej in "$@"; do tail -n 2 "$OUT/${ej%%:*}.log"; done
