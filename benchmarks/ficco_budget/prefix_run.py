"""FiCCO schedule points run as prefixes of their steps, and the step-sampled estimate of each whole total.

Usage (on a copy of the tree with ``prefix_steps.patch`` applied, which launches only the first ``PREFIX_STEPS``
steps' peer pushes, FiCCO-rccl's step collectives and the kernels):

    PREFIX_STEPS=4 PYTHONPATH=COPY python benchmarks/ficco_budget/prefix_run.py CONFIG... [--jobs N] [--out F.jsonl]

Prints, per point, the wall time, the prefix run's total and step ends (GPU 0's last GEMM of each step, us) and the
estimate of the whole run, ``total + (tp - S) P`` with ``P = (e[S-1] - e[1]) / (S - 2)`` (docs/performance.md,
profiling findings); ``--out`` also writes them as JSON lines (``steps.py DIR --prefix F.jsonl`` compares them with whole runs).
Points run in ``--jobs`` worker processes, one point each, in the order given; lines are written as points finish.
"""

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from steps import period, step_ends  # noqa: E402  (this folder's: a step ends with its last GEMM on GPU 0)


def run_point(config: str) -> dict:
    """Simulate ``config``; its wall time, total, step ends and estimate (module doc)."""
    from t3sim.config import load_experiment
    from t3sim.system import simulate

    exp = load_experiment(config)
    t = time.time()
    r = simulate(exp)
    wall = time.time() - t
    e = step_ends(r.stats.to_dict())
    total = float(r.summary["total_us"])
    n, s = int(exp.workload.tp), len(e)
    want = os.environ.get("PREFIX_STEPS")
    if want and int(want) != s:
        raise SystemExit(f"{config}: ran {s} steps, PREFIX_STEPS={want}: is the patch applied?")
    est = total + (n - s) * period(e, s) if 2 < s < n else None
    return {"config": config, "wall_s": round(wall, 3), "total_us": total, "steps": n, "step_ends_us": e,
            "estimate_us": est}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", help="also write each point as a JSON line here")
    a = ap.parse_args(argv)
    out = open(a.out, "w") if a.out else None
    try:
        with multiprocessing.get_context("spawn").Pool(a.jobs, maxtasksperchild=1) as pool:
            for r in pool.imap(run_point, a.configs):
                est = f"; estimate for {r['steps']} steps {r['estimate_us']:.1f} us" if r["estimate_us"] else ""
                print(f"{r['config']}: wall {r['wall_s']:.1f} s; total {r['total_us']:.2f} us; {len(r['step_ends_us'])} "
                      f"step ends {[round(x, 1) for x in r['step_ends_us']]}{est}", flush=True)
                if out:
                    out.write(json.dumps(r) + "\n")
                    out.flush()
    finally:
        if out:
            out.close()


if __name__ == "__main__":
    main()
