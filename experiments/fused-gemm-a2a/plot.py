#!/usr/bin/env python
"""Fused computation-collective paper: fused MoE GEMM + All-to-All combine vs the baseline per size (Fig. 10's quantities).

Reads only results files; writes fused-gemm-a2a.csv and fused-gemm-a2a.png under --out (default results/figures/).
Usage: python experiments/fused-gemm-a2a/plot.py [--results DIR] [--out DIR] [--formats png,pdf]
"""

from t3sim.reproduction.catalog import plot_main

if __name__ == "__main__":
    plot_main("fused-gemm-a2a", __doc__)
