#!/usr/bin/env python
"""Tracker sweep: entries, associativity, granularity vs T3-MCA speedup.

Reads only results files (results/<experiment>/<hash>/...); writes sweep-tracker.csv and sweep-tracker.png (--formats png,pdf,svg)
under --out (default results/figures/). Usage: python experiments/sweep-tracker/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("sweep-tracker", __doc__)
