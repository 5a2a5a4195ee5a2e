#!/usr/bin/env python
"""Paper Fig. 17 (Sec. 6.1.2): DRAM bandwidth over time, isolated GEMM vs T3 / T3-MCA, T-NLG FC-2 TP=8.

Reads only results files (results/<experiment>/<hash>/...); writes fig17.csv and fig17.png (--formats png,pdf,svg)
under --out (default results/figures/). Usage: python experiments/fig17/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fig17", __doc__)
