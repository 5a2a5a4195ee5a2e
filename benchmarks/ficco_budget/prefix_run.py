"""One FiCCO schedule point run as a prefix of its steps, and the step-sampled estimate of its whole total.

Usage (on a copy of the tree with ``prefix_steps.patch`` applied, which launches only the first ``PREFIX_STEPS``
steps' peer pushes and kernels; dma communication only -- FiCCO-rccl's step collectives are launched elsewhere):

    PREFIX_STEPS=4 PYTHONPATH=COPY python benchmarks/ficco_budget/prefix_run.py CONFIG

Prints the wall time, the prefix run's total and step ends (GPU 0's last GEMM of each step, us) and the estimate of
the whole run, ``total + (tp - S) P`` with ``P = (e[S-1] - e[1]) / (S - 2)`` (benchmarks/PROFILE.md step 21).
"""

import os
import sys
import time
from pathlib import Path

from t3sim.config import load_experiment
from t3sim.system import simulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from steps import step_ends  # noqa: E402  (this folder's: a step ends with its last GEMM on GPU 0)


def main(config: str) -> None:
    exp = load_experiment(config)
    t = time.time()
    r = simulate(exp)
    wall = time.time() - t
    e = step_ends(r.stats.to_dict())
    total = float(r.summary["total_us"])
    n, s = int(exp.workload.tp), len(e)
    line = f"wall {wall:.1f} s; total {total:.2f} us; {s} step ends {[round(x, 1) for x in e]}"
    if 2 < s < n:
        line += f"; estimate for {n} steps {total + (n - s) * (e[s - 1] - e[1]) / (s - 2):.1f} us"
    print(line)
    if os.environ.get("PREFIX_STEPS") and int(os.environ["PREFIX_STEPS"]) != s:
        raise SystemExit(f"ran {s} steps, PREFIX_STEPS={os.environ['PREFIX_STEPS']}: is the patch applied?")


if __name__ == "__main__":
    main(sys.argv[1])
