#!/usr/bin/env python
"""Fused computation-collective paper: fused GEMV + AllReduce vs the bulk-synchronous baseline per GEMV (Fig. 9's quantities).

Reads only results files; writes fused-gemv.csv and fused-gemv.png under --out (default results/figures/).
Usage: python experiments/fused-gemv/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fused-gemv", __doc__)
