#!/bin/bash
# A/B sample of the FLUX study's cost (benchmarks/RESULTS.md, session 26): flux-op-h800's 21 cases at one m, run by a
# base tree and by this one at the same time, JOBS points each, after a numba warm-up of both on the 21 cases at m = 64.
# Prints each point's wall time (meta.json) in both trees, whether its statistics (less sim.events) are equal, and the sums.
#   usage: benchmarks/flux_ab.sh BASE_TREE OUT_DIR [M] [JOBS]    (BASE_TREE: e.g. a `git worktree add` of the base)
set -u
B=$(cd "$1" && pwd); OUT=$2; M=${3:-2048}; J=${4:-8}; R=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
run() { (cd "$1" && PYTHONPATH="$1${PYTHONPATH:+:$PYTHONPATH}" python3 -m t3sim.cli run configs/experiments/flux-op-h800.yaml \
  --set "sweep.grid={workload.tokens: [$2]}" -j "$J" --force --out "$3" > "$3.log" 2>&1) || echo "run $3 failed"; }
run "$B" 64 "$OUT/warm_base" & run "$R" 64 "$OUT/warm_new" & wait
run "$B" "$M" "$OUT/base" & run "$R" "$M" "$OUT/new" & wait
python3 - "$OUT" <<'PY'
import hashlib, json, pathlib, sys

out = pathlib.Path(sys.argv[1])


def md5(p):
    def strip(x):
        return {k: strip(v) for k, v in x.items() if k not in ("sim.events", "events")} if isinstance(x, dict) else x
    return hashlib.md5(json.dumps(strip(json.load(open(p))), sort_keys=True).encode()).hexdigest()


def points(root):
    return {p.parent.relative_to(out / root): (md5(p), json.load(open(p.parent / "meta.json"))["wall_s"])
            for p in (out / root).rglob("stats.json")}


b, n = points("base"), points("new")
sb = sn = 0.0
equal = 0
for k in sorted(set(b) & set(n)):
    equal += b[k][0] == n[k][0]
    sb, sn = sb + b[k][1], sn + n[k][1]
    print(f"{str(k):40s} base {b[k][1]:7.1f} s new {n[k][1]:7.1f} s ratio {n[k][1] / b[k][1]:.3f}"
          f" stats {'equal' if b[k][0] == n[k][0] else 'DIFFER'}")
print(f"points {len(b)}/{len(n)}, statistics equal {equal}; sum base {sb:.1f} s new {sn:.1f} s ratio {sn / max(sb, 1e-9):.3f}")
PY
