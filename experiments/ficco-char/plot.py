#!/usr/bin/env python
"""FiCCO's characterization (DIL, CIL; FiCCO Secs. IV-C, IV-D, Figs. 7-9) from results/ficco-char/.

Writes ficco-char.csv and ficco-char.png under --out (default results/figures/).
Usage: python experiments/ficco-char/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("ficco-char", __doc__)
