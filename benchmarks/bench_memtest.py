"""Benchmark: simulated DRAM accesses (requests of hbm.access_size_B: 32 B on Table 1, 64 B in the
earlier memory model) per wall-clock second of the fast HBM model.

    python benchmarks/bench_memtest.py [--requests 2000000] [--repeat 3] [--pattern stream-read]

Runs the ``t3sim memtest`` simulation (submit + simulate to completion, no command log) on the
paper's Table 1 HBM2 after a warm-up that compiles/loads the numba kernels, ``--repeat`` times,
and prints the best and median rate. Exit code 1 when the best rate is below ``--target``
(default 1,000,000 requests/s, the target rate on a 2-core machine: docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from t3sim.config import SystemConfig  # noqa: E402
from t3sim.memory.memtest import PATTERNS, simulate, warm_up  # noqa: E402
from t3sim.memory.stats import summary  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pattern", choices=PATTERNS, default="stream-read")
    ap.add_argument("--target", type=float, default=1e6, help="requests/s the best run must reach")
    a = ap.parse_args()
    cfg = SystemConfig()
    warm_up(cfg)
    rates = []
    for _ in range(a.repeat):
        ms, wall = simulate(cfg, a.pattern, a.requests)
        rates.append(a.requests / wall)
        print(f"  {a.requests} requests in {wall:.3f} s = {rates[-1]:,.0f} requests/s")
        del ms
    s = summary(simulate(cfg, a.pattern, min(a.requests, 200_000))[0])
    best = max(rates)
    print(f"{a.pattern}: best {best:,.0f} requests/s, median {statistics.median(rates):,.0f} requests/s "
          f"on {os.cpu_count()} CPUs (efficiency of the simulated memory {100 * s['efficiency']:.1f} %)")
    return 0 if best >= a.target else 1


if __name__ == "__main__":
    sys.exit(main())
