#!/usr/bin/env python
"""Fused computation-collective paper: the 128-node DLRM study's iteration times, baseline and fused (Fig. 15's quantities; rows from study.py's results.csv).

Reads only results files; writes fused-scale.csv and fused-scale.png under --out (default results/figures/).
Usage: python experiments/fused-scale/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fused-scale", __doc__)
