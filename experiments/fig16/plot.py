#!/usr/bin/env python
"""Paper Fig. 16 (Sec. 6.1): sub-layer speedups of T3, T3-MCA and the ideal configurations over Sequential.

Reads only results files (results/<experiment>/<hash>/...); writes fig16.csv and fig16.png (--formats png,pdf,svg)
under --out (default results/figures/). Usage: python experiments/fig16/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fig16", __doc__)
