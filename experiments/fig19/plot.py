#!/usr/bin/env python
"""Paper Fig. 19 (Secs. 6.3, 6.4): end-to-end training and prompt-phase speedups.

Reads only results files (results/<experiment>/<hash>/...); writes fig19.csv and fig19.png (--formats png,pdf,svg)
under --out (default results/figures/). Usage: python experiments/fig19/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fig19", __doc__)
