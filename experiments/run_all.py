"""Run every experiment point under experiments/ (deduplicated by config hash) on one process pool, into
./results, longest first, so a many-core host stays busy across experiments (`t3sim reproduce -j N` runs the
experiments one after another). Usage: python experiments/run_all.py [JOBS]  (then `t3sim reproduce --no-run`)."""
import glob
import sys

from t3sim.config.sweep import expand
from t3sim.exec.progress import Progress
from t3sim.exec.runner import run_points
from t3sim.results.store import config_hash
from t3sim.workload import workload_kernel


def main():
    pts, seen = [], set()
    for y in sorted(glob.glob("experiments/*/*.yaml")):
        try:
            ps = expand(y)
        except Exception as exc:  # validate.yaml is not an experiment
            print("skip", y, str(exc)[:80], file=sys.stderr)
            continue
        for p in ps:
            key = (p.config.name, config_hash(p.config.model_dump(mode="json")))
            if key not in seen:
                seen.add(key)
                pts.append(p)

    def cost(p):
        k = workload_kernel(p.config.workload)
        return -(k.M * k.N * k.K)

    pts.sort(key=cost)  # longest first: better packing on the pool
    print(f"{len(pts)} points", file=sys.stderr, flush=True)
    outs = run_points(pts, out="results", jobs=int(sys.argv[1]) if len(sys.argv) > 1 else 0, progress=Progress(sys.stderr))
    bad = [o for o in outs if not o.ok]
    for o in bad:
        print("FAILED", o.point.label, o.error.kind, o.error.message[:200], file=sys.stderr)
    print(f"done {len(outs) - len(bad)} ok, {len(bad)} failed", file=sys.stderr)


if __name__ == "__main__":
    main()
