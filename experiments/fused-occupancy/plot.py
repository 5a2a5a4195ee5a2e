#!/usr/bin/env python
"""Fused computation-collective paper: the fused kernel's time against its occupancy (Fig. 13's quantities).

Reads only results files; writes fused-occupancy.csv and fused-occupancy.png under --out (default results/figures/).
Usage: python experiments/fused-occupancy/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fused-occupancy", __doc__)
