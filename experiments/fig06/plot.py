#!/usr/bin/env python
"""Paper Fig. 6 (Sec. 3.2.1): GEMM and AR times under CU splits, potential-overlap speedups.

Reads only results files (results/<experiment>/<hash>/...); writes fig06.csv and fig06.png (--formats png,pdf,svg)
under --out (default results/figures/). Usage: python experiments/fig06/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fig06", __doc__)
