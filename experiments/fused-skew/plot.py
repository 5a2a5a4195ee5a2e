#!/usr/bin/env python
"""Fused computation-collective paper: each node's fused kernel time with and without communication-aware WG order, and their skew (Fig. 14's quantities).

Reads only results files; writes fused-skew.csv and fused-skew.png under --out (default results/figures/).
Usage: python experiments/fused-skew/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fused-skew", __doc__)
