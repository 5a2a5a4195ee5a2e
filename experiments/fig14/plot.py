#!/usr/bin/env python
"""Paper Fig. 14 (Sec. 5.1.1): simulated vs measured reduce-scatter (t3sim validate output).

Reads only results files (results/<experiment>/<hash>/...); writes fig14.csv and fig14.png (--formats png,pdf,svg)
under --out (default results/figures/). Usage: python experiments/fig14/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fig14", __doc__)
