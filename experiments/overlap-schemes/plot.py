#!/usr/bin/env python
"""Every overlap scheme side by side -- speedup over Sequential and FLUX's overlap efficiency.

Reads only results files (results/overlap-schemes/, overlap-schemes-h200/, overlap-schemes-mi300x/); writes overlap-schemes.csv
and overlap-schemes.png under --out (default results/figures/).
Usage: python experiments/overlap-schemes/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.analysis.overlap import overlap_figure
from t3sim.analysis.plotting import plot_args
from t3sim.analysis.runs import load_runs

if __name__ == "__main__":
    a = plot_args(__doc__, "results/figures")
    runs = (load_runs(a.results, "overlap-schemes") + load_runs(a.results, "overlap-schemes-h200")
            + load_runs(a.results, "overlap-schemes-mi300x"))
    if not runs:
        raise SystemExit(f"overlap-schemes: no results under {a.results}/ (run the experiments first; see the README)")
    for p in overlap_figure(runs, a.out, a.formats):
        print(p)
