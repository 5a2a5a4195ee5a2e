#!/usr/bin/env python
"""FLUX's operation-level evaluation (Chang et al. 2024, Sec. 5.1, Figs. 11-14) on its three nodes.

Reads only results files (results/flux-op-a100-pcie/, flux-op-a100-nvlink/, flux-op-h800/); writes flux-op.csv (every
run: operation time, best non-split GEMM, ECT, E_overlap) and flux-op.png under --out (default results/figures/).
Usage: python experiments/flux-op/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("flux-op", __doc__)
