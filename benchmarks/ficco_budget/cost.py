"""The cost of a measured (part of the) FiCCO study: per experiment and per schedule kind, the points, the sum of
their wall times (``meta.json``, host-CPU-hours at the concurrency they ran at) and the mean per point.
Usage: python benchmarks/ficco_budget/cost.py DIR   (DIR/res/<experiment>/<hash>/: study.sh's results)"""

import glob
import json
import sys
from collections import Counter
from pathlib import Path

import yaml


def kind(config: dict) -> str:
    """``baseline``-like scheme name, or ``ficco <comm> <1d|2d>`` for a FiCCO schedule."""
    s = config["scheme"]
    if s["kind"] != "ficco":
        return s["kind"]
    return f"ficco {s.get('ficco_comm')} {'2d' if '2d' in s.get('ficco_schedule', '') else '1d'}"


def main(root: str) -> None:
    by_exp, by_kind, n_exp, n_kind = Counter(), Counter(), Counter(), Counter()
    for m in glob.glob(f"{root}/res/*/*/meta.json"):
        p = Path(m).parent
        w = json.loads((p / "meta.json").read_text())["wall_s"]
        k = kind(yaml.safe_load((p / "config.yaml").read_text()))
        by_exp[p.parent.name] += w
        n_exp[p.parent.name] += 1
        by_kind[k] += w
        n_kind[k] += 1
    total = sum(by_exp.values())
    for title, sums, counts in (("experiment", by_exp, n_exp), ("kind", by_kind, n_kind)):
        print(f"{title:22s} points  host-h  share  mean s")
        for k in sorted(sums, key=lambda k: -sums[k]):
            print(f"{k:22s} {counts[k]:6d} {sums[k] / 3600:7.3f} {100 * sums[k] / total:5.1f}% {sums[k] / counts[k]:7.1f}")
    print(f"total {sum(n_exp.values())} points, {total / 3600:.3f} host-CPU-hours")


if __name__ == "__main__":
    main(sys.argv[1])
