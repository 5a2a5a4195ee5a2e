#!/usr/bin/env python
"""Paper Fig. 4 (Sec. 2.4): Transformer layer time in sliced GEMMs, RS, AG and other operations.

Reads only results files (results/<experiment>/<hash>/...); writes fig04.csv and fig04.png (--formats png,pdf,svg)
under --out (default results/figures/). Usage: python experiments/fig04/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fig04", __doc__)
