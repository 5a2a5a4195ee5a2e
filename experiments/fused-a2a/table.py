"""The fused All-to-All studies' tables: reads results/fused-a2a and results/fused-gemm-a2a,
prints Markdown and the paper's stated numbers.

    python experiments/fused-a2a/table.py [--results results]
"""

from __future__ import annotations

import argparse
import sys

from t3sim.reproduction.fused.a2a_table import STATED, STUDIES, markdown, rows, summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results")
    a = ap.parse_args(argv)
    found = 0
    for exp in STUDIES:
        rs = rows(a.results, exp)
        if not rs:
            continue
        found += 1
        print(f"## {exp}\n\n{markdown(rs)}\n")
        s = summary(rs)
        print(f"t3sim: mean reduction {100 * s['mean']:.1f} %, max {100 * s['max']:.1f} %, min {100 * s['min']:.1f} % "
              f"over {s['n']} points; paper: {STATED[exp][1]}\n")
    if not found:
        print(f"no results under {a.results}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
