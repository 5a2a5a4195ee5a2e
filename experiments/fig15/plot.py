#!/usr/bin/env python
"""Paper Fig. 15 (Sec. 6.1): runtime distribution of GEMM, RS and AG per sub-layer (Sequential).

Reads only results files (results/<experiment>/<hash>/...); writes fig15.csv and fig15.png (--formats png,pdf,svg)
under --out (default results/figures/). Usage: python experiments/fig15/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fig15", __doc__)
