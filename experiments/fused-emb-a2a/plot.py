#!/usr/bin/env python
"""Fused computation-collective paper: fused embedding + All-to-All on one node vs the baseline per batch (Fig. 8's quantities).

Reads only results files; writes fused-emb-a2a.csv and fused-emb-a2a.png under --out (default results/figures/).
Usage: python experiments/fused-emb-a2a/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fused-emb-a2a", __doc__)
