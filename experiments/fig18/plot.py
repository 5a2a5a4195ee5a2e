#!/usr/bin/env python
"""Paper Fig. 18 (Sec. 6.2): GPU 0 DRAM accesses per sub-layer, Sequential vs T3-MCA.

Reads only results files (results/<experiment>/<hash>/...); writes fig18.csv and fig18.png (--formats png,pdf,svg)
under --out (default results/figures/). Usage: python experiments/fig18/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fig18", __doc__)
