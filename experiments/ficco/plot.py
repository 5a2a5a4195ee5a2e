#!/usr/bin/env python
"""FiCCO's evaluation (speedups per scenario, Figs. 12(b)-14); the characterization: ../ficco-char/plot.py.

Reads only results files (results/ficco-*/); writes ficco.csv and ficco.png under --out (default results/figures/).
Usage: python experiments/ficco/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("ficco", __doc__)
