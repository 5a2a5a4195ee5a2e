#!/usr/bin/env python
"""Fused computation-collective paper: fused embedding + All-to-All between two nodes vs the baseline per batch (Fig. 12's quantities).

Reads only results files; writes fused-emb-a2a-2node.csv and fused-emb-a2a-2node.png under --out (default results/figures/).
Usage: python experiments/fused-emb-a2a-2node/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fused-emb-a2a-2node", __doc__)
