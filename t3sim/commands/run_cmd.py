"""``t3sim run EXPERIMENT.yaml``: simulate every point of an experiment and print a table.

Points run in this process (``-j 1``, the default), on ``-j N`` local worker
processes, or on a Dask cluster (``--executor dask --scheduler ADDRESS``); see
:mod:`t3sim.exec.runner` for reuse, resume and the failure rule. Progress goes
to stderr; the table (or ``--json``) to stdout. Exit code: 0 when every point
has a result; otherwise 1 if any point hit an internal error (a bug; its
traceback is printed), else 3 if any simulation failed, else 2 (bad input);
130 when interrupted.

``--timeline`` traces one run (the experiment must resolve to one point):
it is simulated in this process, its results are (re)written and
``timeline.json`` (Chrome trace-event format; open it in ui.perfetto.dev) is
written beside them (:mod:`t3sim.system.timeline`).
"""

from __future__ import annotations

import argparse
import json
import sys

from t3sim.config.sweep import expand
from t3sim.errors import InputError, check_writable_dir
from t3sim.exec.progress import Progress
from t3sim.results.store import ResultStore, summary_csv
from t3sim.sim import report

# (the simulator itself is imported when a command runs, so `t3sim --help` and bad input answer fast)

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
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="local worker processes (default 1: in this process; 0: one per CPU)")
    p.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="where points run: local processes (default) or a Dask cluster (pip install 't3sim[dask]')")
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler address (tcp://HOST:8786); implies --executor dask")
    p.add_argument("--fail-fast", action="store_true",
                   help="stop at the first failed point (default: run the others and report failures at the end)")
    p.add_argument("--timeline", action="store_true",
                   help="also write a Perfetto/Chrome trace (timeline.json) of the run; needs a single-point experiment")
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


def _timeline(args: argparse.Namespace) -> int:
    """Trace one point. A point that already has a result is re-simulated (a timeline is recorded only
    while simulating) and ``timeline.json`` is added beside the cached result, whose files stay untouched
    (``--force`` replaces them with the new run's)."""
    # lazy: the simulator loads when a command runs (fast --help)
    from t3sim.exec.checks import check_experiment
    from t3sim.exec.dispatch import run
    from t3sim.exec.runner import load_cached

    points = expand(args.config, args.overrides)
    if len(points) != 1:
        raise InputError(args.config, f"{len(points)} sweep points with --timeline",
                         "one point: --timeline traces one run (narrow the sweep with --set sweep.grid=... / sweep.cases=...)")
    cfg = points[0].config
    if cfg.simulation.sampling.mode != "off":
        raise InputError(f"{args.config}: simulation.sampling.mode", f"{cfg.simulation.sampling.mode} with --timeline "
                         "(a timeline traces one detailed simulation)", "simulation.sampling.mode=off for a timeline")
    point = check_experiment(cfg, args.config)
    store = ResultStore(args.out)
    check_writable_dir(store.root, "--out")
    found = None if args.force else store.find(cfg.name, cfg.model_dump(mode="json"))
    cached = load_cached(found) if found is not None else None
    if found is not None:
        sys.stderr.write(f"t3sim: {found} already has this point's results; re-simulating it to record the timeline "
                         "(the cached results are kept; --force replaces them)\n")
    result = simulate_with_progress(run, point, points[0].label, timeline=True)
    if cached is None:
        path = store.write(result, replace=True)
    else:
        path = found
        store.add_timeline(path, result.timeline)
        # (stats.json itself differs: sim.events counts the timeline sampler's events too)
        if (path / "summary.csv").read_text() != summary_csv(result):
            sys.stderr.write(f"t3sim: note: the re-simulated results differ from the cached ones (simulated by code "
                             f"revision {cached.meta.get('code_revision') or '?'}); the table shows the cached ones; "
                             "--force replaces them\n")
        result = cached
    sys.stdout.write(table([{"label": points[0].label, **result.summary}]))
    sys.stdout.write(f"results: {path}\ntimeline: {path / 'timeline.json'} (open in https://ui.perfetto.dev)\n")
    return 0


def simulate_with_progress(run, point, label: str = "base", **kwargs):
    """``run([point], **kwargs)[0]`` (:func:`t3sim.exec.dispatch.run` of a resolved point) in this process with
    its progress (percent, ETA) on stderr."""
    progress = Progress(sys.stderr)
    progress.begin(point.exp.name, 1, 0, "this process")
    how = "stopped"
    try:
        with report.reporting(lambda status: progress.update(0, status)):
            result = run([point], **kwargs)[0]
        progress.point_done(label, f"done in {result.meta.get('wall_s', 0):.1f} s", task=0)
        how = "done"
    except KeyboardInterrupt:
        how = "interrupted"
        raise
    finally:
        progress.end(how)
    return result


def _run(args: argparse.Namespace) -> int:
    # lazy: the simulator and analysis load when a command runs (fast --help)
    from t3sim.analysis.comparison import group_cases
    from t3sim.analysis.tables import write_csv_atomic
    from t3sim.reproduction.t3.comparison import compare, format_tables, to_csv
    from t3sim.exec.runner import run_experiment

    if args.timeline:
        return _timeline(args)
    if args.scheduler:
        args.executor = "dask"  # --scheduler alone means Dask
    outcomes = run_experiment(args.config, args.overrides, out=args.out, force=args.force, jobs=args.jobs,
                              executor=args.executor, scheduler=args.scheduler, fail_fast=args.fail_fast,
                              progress=Progress(sys.stderr))
    failed = [o for o in outcomes if not o.ok]
    outcomes = [o for o in outcomes if o.ok]
    rows = [{"label": o.point.label, **o.result.summary, "result_dir": str(o.path), "reused": o.reused}
            for o in outcomes]
    if args.json:
        errors = [{"label": o.point.label, "error_kind": o.error.kind, "error": o.error.message} for o in failed]
        json.dump(rows + errors, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif rows:
        sys.stdout.write(table(rows))
        sys.stdout.write(f"results: {outcomes[0].path.parent}\n")
    summaries = [o.result.summary for o in outcomes]
    if outcomes and any(len(v) > 1 and "sequential" in v for v in group_cases(summaries).values()):
        # several schemes per case: the comparison beside the paper's Sec. 6 figures
        c = compare(summaries)
        path = write_csv_atomic(outcomes[0].path.parent / "comparison.csv", to_csv(c))
        if not args.json:
            sys.stdout.write("\n" + format_tables(c) + f"comparison: {path}\n")
    return _report_failures(failed)


def _report_failures(failed) -> int:
    """One stderr line per failed point (internal errors add their traceback); the exit code."""
    for o in failed:
        e = o.error
        what = {"input": "error", "simulation": "simulation failed", "internal": "internal error",
                "skipped": "skipped"}.get(e.kind, e.kind)
        sys.stderr.write(f"t3sim: {what}: point {o.point.label}: {e.message}\n")
        if e.traceback:
            sys.stderr.write(e.traceback.rstrip("\n") + "\n")
    kinds = {o.error.kind for o in failed}
    if "internal" in kinds:
        return 1
    if "simulation" in kinds:
        return 3
    return 2 if kinds else 0
