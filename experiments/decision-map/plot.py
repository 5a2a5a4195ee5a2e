#!/usr/bin/env python
"""The decision map's figures: per machine, the winning overlap scheme over (M, GEMM) per direction and TP.

Reads only the CSV that ``t3sim decision-map`` writes (``--csv``; default results/figures/decision-map.csv, or
decision-map-quick.csv with ``--quick``) and writes ``decision-map[-quick]-<machine>.png`` under ``--out`` (default:
the CSV's folder), one per machine (t3sim/analysis/decision_map_plot.py).
Usage: python experiments/decision-map/plot.py [--quick] [--csv FILE] [--out DIR] [--formats png,pdf]
"""

import argparse
import sys
from pathlib import Path

from t3sim.analysis.decision_map_plot import draw
from t3sim.analysis.tables import read_table

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the quick map's CSV and figure names")
    p.add_argument("--csv", help="the decision map CSV (default results/figures/decision-map[-quick].csv)")
    p.add_argument("--out", help="output folder (default: the CSV's)")
    p.add_argument("--formats", default="png", help="comma-separated figure formats: png, pdf, svg (default: png)")
    a = p.parse_args()
    csv = Path(a.csv or f"results/figures/decision-map{'-quick' if a.quick else ''}.csv")
    if not csv.is_file():
        sys.stderr.write(f"decision-map: {csv}: no such file; run `t3sim decision-map{' --quick' if a.quick else ''}` "
                         "first (experiments/decision-map/README.md)\n")
        raise SystemExit(2)
    for path in draw(read_table(csv), a.out or csv.parent, [f.strip() for f in a.formats.split(",") if f.strip()],
                     quick=a.quick):
        print(path)
