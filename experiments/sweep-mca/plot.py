#!/usr/bin/env python
"""MCA sweep: occupancy thresholds and starvation limit vs speedup.

Reads only results files (results/<experiment>/<hash>/...); writes sweep-mca.csv and sweep-mca.png (--formats png,pdf,svg)
under --out (default results/figures/). Usage: python experiments/sweep-mca/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("sweep-mca", __doc__)
