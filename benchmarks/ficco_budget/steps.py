"""How far sampling by schedule steps could cut the FiCCO study's cost, estimated from the study's own results.

Usage: python benchmarks/ficco_budget/steps.py DIR [--prefix F.jsonl]   (DIR/res/<experiment>/<hash>/: study.sh's
results; F: ``prefix_run.py --out`` of configs named ``<experiment>__<hash>.yaml``, compared with those whole runs)

A FiCCO schedule runs ``tp`` = 8 steps (1D: one row chunk of every GPU's shard a step; 2D: one K slice), and in
steady state every step takes the same time. A sampled run could simulate the first ``S`` steps in detail and
advance the other ``8 - S`` at the measured step period. This script does not run that; it asks what it would give
if the first ``S`` steps of a detailed run were those of the whole run (an idealisation, stated below), from each
schedule point's kernel times in ``stats.json``:

- a step ends when its last GEMM kernel on GPU 0 ends (``gemm_s<j>``, or ``gemm_s<j>_p<p>`` for hetero-unfused-1D;
  ``gemm_local`` is before the steps); ``e[j]`` is step ``j``'s end, ``T`` the run's total time;
- the step period is ``P = (e[S-1] - e[1]) / (S - 2)`` (step 0 has no earlier step to overlap, so it is left out);
- the tail ``T - e[7]`` (the last step's scatter; 0 where there is none) is taken from the whole run, as a detailed
  run of ``S`` steps that ends like the whole would measure it;
- the estimate is ``e[S-1] + (8 - S) P + tail``, its error against ``T``; the cost kept is the point's wall time
  times ``(e[S-1] + tail) / T`` (cost taken as proportional to simulated time).

What the idealisation leaves out: in the whole run step ``S``'s communication overlaps step ``S-1``'s GEMM; a run of
``S`` steps has none there, so its last steps run differently. The errors here are therefore neither a lower nor an
upper bound on a real sampled run's, and the costs are estimates. The other points of the study (baselines, shard
overlap, the characterization) are counted whole.

With ``--prefix`` it compares real prefix runs instead (``prefix_run.py`` on a copy of the tree patched with
``prefix_steps.patch``: each a schedule's first ``S`` steps, estimating the whole as its own total plus ``(8 - S) P``)
with the whole runs in DIR: per schedule the error and the ratio of wall times (docs/performance.md).
"""

import glob
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from t3sim.analysis.runs import read_run
from t3sim.reproduction.ficco.speedups import method_of

STEP = re.compile(r"gemm_s(\d+)(_p\d+)?$")
DETAIL = (3, 4, 5)


def step_ends(stats: dict) -> list:
    """Each step's end (us), in step order, from GPU 0's kernel times."""
    ends = {}
    for name, k in stats["kernels"]["gpu0"].items():
        m = STEP.match(name)
        if m:
            j = int(m.group(1))
            ends[j] = max(ends.get(j, 0.0), k["end_us"]["value"])
    return [ends[j] for j in sorted(ends)]


def period(e: list, s: int) -> float:
    """The step period (us) measured over the first ``s`` step ends ``e``: steps 2..s-1 (step 0 overlaps nothing)."""
    return (e[s - 1] - e[1]) / (s - 2)


def estimate(e: list, total: float, s: int):
    """(relative error, fraction of the simulated time kept) of the ``s``-step estimate (module doc)."""
    n = len(e)
    tail = total - e[-1]
    est = e[s - 1] + (n - s) * period(e, s) + tail
    return est / total - 1.0, (e[s - 1] + tail) / total


def spread(es: list) -> str:
    """``|error| p50 .., p90 .., max ..`` of errors ``es`` (%)."""
    es = sorted(es)
    return f"|error| p50 {es[len(es) // 2]:.1f}%, p90 {es[int(0.9 * len(es))]:.1f}%, max {es[-1]:.1f}%"


def main(root: str) -> None:
    wall_all = 0.0
    rows = defaultdict(list)  # (method, schedule) -> [(wall, cv, {s: (err, kept)})]
    for m in sorted(glob.glob(f"{root}/res/*/*/meta.json")):
        p = Path(m).parent
        wall = json.loads((p / "meta.json").read_text())["wall_s"]
        wall_all += wall
        run = read_run(p)
        mv = method_of(run)
        if mv is None or not mv[0].startswith("ficco-"):
            continue
        stats = json.loads((p / "stats.json").read_text())
        e = step_ends(stats)
        if len(e) != int(run.cfg("workload.tp")):
            raise SystemExit(f"{p}: {len(e)} step ends, expected {run.cfg('workload.tp')}")
        total = float(stats["time"]["total_us"]["value"])
        periods = [e[j] - e[j - 1] for j in range(2, len(e))]
        cv = statistics.pstdev(periods) / statistics.mean(periods)
        rows[mv].append((wall, cv, {s: estimate(e, total, s) for s in DETAIL}))
    print(f"{'method':10s} {'schedule':18s} points CPU-h  step CV mean/max " +
          " ".join(f" S={s}: |err| mean/max" for s in DETAIL))
    kept = {s: wall_all for s in DETAIL}
    errs = {s: [] for s in DETAIL}
    for (method, sched), v in sorted(rows.items()):
        w = sum(x[0] for x in v)
        cvs = [100 * x[1] for x in v]
        line = f"{method:10s} {sched:18s} {len(v):6d} {w / 3600:5.2f}  {statistics.mean(cvs):5.1f}% {max(cvs):5.1f}%   "
        for s in DETAIL:
            es = [100 * abs(x[2][s][0]) for x in v]
            errs[s] += es
            kept[s] -= sum(x[0] * (1 - x[2][s][1]) for x in v)
            line += f"  {statistics.mean(es):5.1f}% {max(es):5.1f}%    "
        print(line)
    n = sum(len(v) for v in rows.values())
    print(f"the whole study: {wall_all / 3600:.2f} CPU-hours; {n} schedule points")
    for s in DETAIL:
        print(f"S={s}: about {kept[s] / 3600:.2f} CPU-hours; {spread(errs[s])}")


def compare(root: str, prefix: str) -> None:
    """Real prefix runs (``prefix_run.py --out``) against the whole runs of the same configs: error and cost."""
    rows = defaultdict(list)  # (method, schedule) -> [(error, prefix wall, whole wall)]
    for line in Path(prefix).read_text().splitlines():
        r = json.loads(line)
        exp, chash = Path(r["config"]).stem.split("__")
        run = read_run(Path(root) / "res" / exp / chash)
        wall = json.loads((run.path / "meta.json").read_text())["wall_s"]
        rows[method_of(run)].append((r["estimate_us"] / run.stat("time.total_us") - 1.0, r["wall_s"], wall))
    print(f"{'method':10s} {'schedule':18s} points  error mean/max |error| mean/max  prefix/whole wall")
    errs, pw, ww = [], 0.0, 0.0
    for (method, sched), v in sorted(rows.items()):
        es = [100 * x[0] for x in v]
        ab = [abs(x) for x in es]
        errs += ab
        pw += sum(x[1] for x in v)
        ww += sum(x[2] for x in v)
        print(f"{method:10s} {sched:18s} {len(v):6d}  {statistics.mean(es):+5.1f}% {max(es, key=abs):+6.1f}%  "
              f"{statistics.mean(ab):5.1f}% {max(ab):5.1f}%   {sum(x[1] for x in v) / sum(x[2] for x in v):.2f}x")
    print(f"{len(errs)} points: {spread(errs)}; prefix walls {pw / 3600:.2f} h against {ww / 3600:.2f} h whole")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[2] == "--prefix":
        compare(sys.argv[1], sys.argv[3])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        raise SystemExit("\n".join(__doc__.splitlines()[2:4]))
