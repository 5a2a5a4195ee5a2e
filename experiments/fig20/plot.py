#!/usr/bin/env python
"""Paper Fig. 20 (Sec. 7.5): T3 on the 2x-CU system vs the Table 1 system.

Reads only results files (results/<experiment>/<hash>/...); writes fig20.csv and fig20.png (--formats png,pdf,svg)
under --out (default results/figures/). Usage: python experiments/fig20/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fig20", __doc__)
