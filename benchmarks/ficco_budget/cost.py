"""The cost of a measured (part of the) FiCCO study: per experiment and per kind of point, the points, the sum of
their wall times (``meta.json``: CPU-hours at the concurrency they ran at) and the mean per point.
Usage: python benchmarks/ficco_budget/cost.py DIR   (DIR/res/<experiment>/<hash>/: study.sh's results)

A point's kind is its method in ``ficco.csv`` (:func:`t3sim.reproduction.ficco.speedups.method_of`: baseline, shard, ficco-dma,
ficco-rccl), a FiCCO schedule's split into 1D and 2D, or else its scheme (the characterization's ``ficco_char``)."""

import glob
import json
import sys
from collections import Counter
from pathlib import Path

from t3sim.analysis.runs import read_run
from t3sim.reproduction.ficco.speedups import method_of


def kind(run) -> str:
    mv = method_of(run)
    if mv is None:
        return run.scheme
    method, variant = mv
    return f"{method} {'2d' if '2d' in variant else '1d'}" if method.startswith("ficco-") else method


def main(root: str) -> None:
    by_exp, by_kind, n_exp, n_kind = Counter(), Counter(), Counter(), Counter()
    for m in glob.glob(f"{root}/res/*/*/meta.json"):
        p = Path(m).parent
        w = json.loads((p / "meta.json").read_text())["wall_s"]
        k = kind(read_run(p))
        by_exp[p.parent.name] += w
        n_exp[p.parent.name] += 1
        by_kind[k] += w
        n_kind[k] += 1
    total = sum(by_exp.values())
    for title, sums, counts in (("experiment", by_exp, n_exp), ("kind", by_kind, n_kind)):
        print(f"{title:22s} points  CPU-h   share  mean s")
        for k in sorted(sums, key=lambda k: -sums[k]):
            print(f"{k:22s} {counts[k]:6d} {sums[k] / 3600:7.3f} {100 * sums[k] / total:5.1f}% {sums[k] / counts[k]:7.1f}")
    print(f"total {sum(n_exp.values())} points, {total / 3600:.3f} CPU-hours")


if __name__ == "__main__":
    main(sys.argv[1])
