"""``t3sim run EXPERIMENT.yaml``: simulate every point of an experiment and print a table."""

from __future__ import annotations

import argparse
import json
import sys

from t3sim.analysis.comparison import compare, format_tables, group_cases, to_csv, write_csv_atomic
from t3sim.system.run import run_experiment

COLUMNS = [("label", "point", "{}"), ("scheme", "scheme", "{}"), ("gemm_us", "GEMM us", "{:.1f}"),
           ("rs_us", "RS us", "{:.1f}"), ("ag_us", "AG us", "{:.1f}"), ("total_us", "total us", "{:.1f}"),
           ("gemm_read_MB", "GEMM rd MB", "{:.1f}"), ("gemm_write_MB", "GEMM wr MB", "{:.1f}"),
           ("rs_read_MB", "RS rd MB", "{:.1f}"), ("rs_write_MB", "RS wr MB", "{:.1f}"),
           ("rs_update_MB", "RS upd MB", "{:.1f}"), ("ag_read_MB", "AG rd MB", "{:.1f}"),
           ("ag_write_MB", "AG wr MB", "{:.1f}")]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="simulate an experiment (every sweep point) and print its results")
    p.add_argument("config", help="experiment YAML")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a field (repeatable)")
    p.add_argument("--out", default="results", help="results root (default: results/)")
    p.add_argument("--force", action="store_true", help="recompute points that already have results")
    p.add_argument("--json", action="store_true", help="print the summaries as JSON instead of a table")
    p.set_defaults(func=_run)


def table(rows) -> str:
    cells = [[h for _, h, _ in COLUMNS]]
    for r in rows:
        cells.append([fmt.format(_num(r.get(k, ""))) if k in r else "" for k, _, fmt in COLUMNS])
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]]) + "\n"


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def _run(args: argparse.Namespace) -> int:
    outcomes = run_experiment(args.config, args.overrides, out=args.out, force=args.force)
    rows = [{"label": o.point.label, **o.result.summary, "result_dir": str(o.path), "reused": o.reused}
            for o in outcomes]
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(table(rows))
        sys.stdout.write(f"results: {outcomes[0].path.parent if outcomes else args.out}\n")
    summaries = [o.result.summary for o in outcomes]
    if outcomes and any(len(v) > 1 and "sequential" in v for v in group_cases(summaries).values()):
        # several schemes per case: the comparison beside the paper's Sec. 6 figures
        c = compare(summaries)
        path = write_csv_atomic(outcomes[0].path.parent / "comparison.csv", to_csv(c))
        if not args.json:
            sys.stdout.write("\n" + format_tables(c) + f"comparison: {path}\n")
    return 0
