"""The fused GEMV+AllReduce study's table: reads results/fused-gemv, writes fused-gemv.csv, prints Markdown.

    python experiments/fused-gemv/table.py [--results results] [--out experiments/fused-gemv]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from t3sim.reproduction.fused.gemv_table import STATED, markdown, rows, summary, write_csv


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results")
    ap.add_argument("--out", default=str(Path(__file__).parent))
    a = ap.parse_args(argv)
    rs = rows(a.results)
    if not rs:
        print(f"no results of fused-gemv under {a.results}: run `t3sim run configs/experiments/fused-gemv.yaml`",
              file=sys.stderr)
        return 2
    write_csv(rs, Path(a.out) / "fused-gemv.csv")
    print(markdown(rs))
    for g, s in summary(rs).items():
        print(f"{g}: mean reduction {100 * s['mean']:.1f} %, max {100 * s['max']:.1f} %, min {100 * s['min']:.1f} % "
              f"over {s['n']} GEMVs")
    for k, (v, src) in STATED.items():
        print(f"paper {k}: {v} ({src})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
