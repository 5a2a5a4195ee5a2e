"""``t3sim decision-map``: which overlap scheme wins where, over machines, TP degrees, directions, shapes and tokens.

    t3sim decision-map [--quick] [--budget-cpu-h H] [--list] [--out DIR] [--csv FILE] [-j N] [--force]

The sweep is :mod:`t3sim.analysis.decision_map`'s (``--quick``: its handful of points). Every operation is planned
as ``t3sim advise`` plans one (:func:`t3sim.commands.advise_cmd.plan_advice`: each scheme of
:data:`~t3sim.analysis.decision_map.SCHEMES` in each variant, the ones that cannot run it listed with the reason),
as experiment ``decision-map``: an operation from ``SAMPLE_FROM_M`` tokens asks for sampled simulation
(``simulation.sampling.mode=waves``), and a scheme the sampler refuses (its reason names
``simulation.sampling.mode``) is planned whole. Each operation's simulations are costed before anything runs
(:func:`t3sim.analysis.decision_map.run_cost_s`: measured CPU seconds per run; a sampled run at the rows its
detailed runs may hold, :func:`_detailed_rows`); the budget (``--budget-cpu-h``, default
:data:`~t3sim.analysis.decision_map.BUDGET_CPU_H`) keeps the operations of the
:data:`~t3sim.analysis.decision_map.SPINE` GEMMs, then the others, each cheapest first, while their sum fits
(:func:`~t3sim.analysis.decision_map.over_budget`), and every other operation is a row with status ``over_budget``
and its estimate. The points of all kept operations run
in one pool (:func:`t3sim.exec.runner.run_points`, ``-j N``, results in ``<out>/decision-map/<hash>/``, reused by the
next call), each operation is ranked (:func:`t3sim.commands.advise_cmd.finish_advice`) and read
(:func:`t3sim.analysis.decision_map.decide`), and the CSV (:data:`~t3sim.analysis.decision_map.COLUMNS`) is written
to ``--csv`` (default ``results/figures/decision-map.csv``, ``decision-map-quick.csv`` with ``--quick``).
``--list`` prints the plan -- operations, simulations, skipped combinations, sampled and over-budget operations, the
estimated CPU-hours -- and simulates nothing. ``experiments/decision-map/plot.py`` draws the CSV.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from t3sim.analysis import decision_map as D
from t3sim.errors import InputError

EXPERIMENT = "decision-map"
SAMPLING = "simulation.sampling.mode=waves"


@dataclass
class PlannedOp:
    """One operation: its candidates and points (``planned``, None when nothing can run it: ``reason``), the
    schemes asked to run sampled (``sampled``: (scheme, variant) pairs) and its estimated CPU seconds."""

    op: D.Op
    planned: Any = None
    reason: str = ""
    sampled: List[Tuple[str, str]] = field(default_factory=list)
    est_s: float = 0.0
    run: bool = True


def _pairs(planned) -> List[Tuple[Dict[str, Any], Any]]:
    points = dict(planned.points)
    return [(c, points.get(i)) for i, c in enumerate(planned.cands)]


def _refused(c: Dict[str, Any]) -> bool:
    """A candidate the sampler refused (run it whole)."""
    return c["status"] == "not_applicable" and str(c.get("reason", "")).startswith(D.SAMPLING_FIELD)


def plan_op(op: D.Op) -> PlannedOp:
    """Plan one operation (module doc); bad input of the operation itself becomes its ``reason``."""
    from t3sim.commands.advise_cmd import Operation, Planned, plan_advice

    operation = Operation(direction=op.direction, tp=op.tp, dtype=D.DTYPE, M=op.M, N=op.shape.N, K=op.shape.K)

    def plan(overrides, schemes):
        return plan_advice(op.machine, operation, overrides=overrides, schemes=schemes, experiment=EXPERIMENT)

    sampled_plan = None
    if op.sampled:
        try:
            sampled_plan = plan([SAMPLING], list(D.SCHEMES))
        except InputError:  # the sampler refuses even Sequential: every scheme whole
            sampled_plan = None
    whole = set(D.SCHEMES) if sampled_plan is None else {c["scheme"] for c in sampled_plan.cands if _refused(c)}
    try:
        whole_plan = plan([], sorted(whole)) if whole else None
    except InputError as exc:
        if sampled_plan is None:
            return PlannedOp(op, None, exc.one_line())
        whole_plan = None
    if sampled_plan is None:
        return PlannedOp(op, whole_plan)
    pairs = []
    from_whole = {c["scheme"]: [] for c in whole_plan.cands} if whole_plan else {}
    for c, p in (_pairs(whole_plan) if whole_plan else []):
        from_whole[c["scheme"]].append((c, p))
    done = set()
    for c, p in _pairs(sampled_plan):
        if c["scheme"] in whole and c["scheme"] in from_whole:
            if c["scheme"] not in done:
                pairs += from_whole[c["scheme"]]
                done.add(c["scheme"])
            continue
        pairs.append((c, p))
    merged = Planned(operation, [c for c, _ in pairs], [(i, p) for i, (_, p) in enumerate(pairs) if p is not None],
                     sampled_plan.kernel or (whole_plan.kernel if whole_plan else None))
    asked = [(c["scheme"], c["variant"] or "") for c, p in _pairs(sampled_plan) if p is not None]
    return PlannedOp(op, merged, sampled=asked)


def _detailed_rows(config) -> int:
    """Rows a sampled point's detailed runs hold together (:func:`t3sim.sampling.plan.ladder`), to cost it: for a
    scheme of :data:`~t3sim.analysis.decision_map.SAMPLING_CONVERGES_FIRST`, its first detailed runs; for any other,
    which may fail the criterion and double its runs, the runs of the doubling up to ``max_detail_waves`` (the
    earlier, smaller runs counted as half the last three's rows), at most the whole workload's rows."""
    from t3sim.exec.dispatch import resolve
    from t3sim.sampling.plan import ladder

    r = resolve(config)
    s = config.simulation.sampling
    if config.scheme.kind in D.SAMPLING_CONVERGES_FIRST:
        return sum(ladder(r.plan, s.detail_waves))
    return min(sum(ladder(r.plan, s.max_detail_waves)) * 3 // 2, r.plan.rows)


def estimate(p: PlannedOp) -> float:
    """Estimated CPU seconds of ``p``'s simulations (:func:`t3sim.analysis.decision_map.run_cost_s`); points that
    share a simulation are counted once."""
    if p.planned is None:
        return 0.0
    from t3sim.system.core import shared_groups

    o, s = p.op, p.op.shape
    points = [pt for _, pt in p.planned.points]
    total = 0.0
    for group in shared_groups([pt.config for pt in points]):
        pt = points[group[0]]
        rows = _detailed_rows(pt.config) if pt.config.simulation.sampling.mode == "waves" else None
        total += D.run_cost_s(o.direction, o.M, s.N, s.K, o.tp, pt.config.scheme.kind, rows)
    return total


@dataclass
class MapPlan:
    ops: List[PlannedOp]
    skipped: List[Tuple[Any, int, str]]
    budget_s: float

    @property
    def kept(self) -> List[PlannedOp]:
        return [p for p in self.ops if p.run and p.planned is not None]


def plan_map(quick: bool = False, budget_cpu_h: Optional[float] = None) -> MapPlan:
    """Every operation planned and costed; those that fit the budget (:func:`t3sim.analysis.decision_map.over_budget`,
    the :data:`~t3sim.analysis.decision_map.SPINE` GEMMs first) marked to run."""
    ops, skipped = D.operations(quick)
    planned = [plan_op(o) for o in ops]
    for p in planned:
        p.est_s = estimate(p)
    budget_s = 3600.0 * (D.BUDGET_CPU_H if budget_cpu_h is None else budget_cpu_h)
    first = [(p.op.shape.model, p.op.shape.projection) in D.SPINE for p in planned]
    for i in D.over_budget([p.est_s if p.planned is not None else 0.0 for p in planned], budget_s, first):
        planned[i].run = False
    return MapPlan(planned, skipped, budget_s)


def _label(op: D.Op, point_label: str) -> str:
    return f"{op.machine} tp{op.tp} {D.DIRECTION_LABELS[op.direction]} {op.shape.label} M={op.M} {point_label}"


def run_map(mp: MapPlan, *, out="results", jobs: int = 1, force: bool = False,
            progress=None) -> Tuple[List[Dict[str, Any]], float]:
    """Simulate every kept operation in one pool; return the CSV rows (:data:`~t3sim.analysis.decision_map.COLUMNS`)
    of every operation, in plan order, and the simulations' measured cost (the sum of their ``meta.json`` wall
    seconds, reused ones included, a shared simulation once)."""
    from t3sim.commands.advise_cmd import finish_advice
    from t3sim.exec.runner import run_points

    kept = mp.kept
    points = [dataclasses.replace(pt, label=_label(p.op, pt.label)) for p in kept for _, pt in p.planned.points]
    outcomes = run_points(points, out=out, jobs=jobs, force=force, progress=progress) if points else []
    by_op, k = {}, 0
    for p in kept:
        n = len(p.planned.points)
        by_op[id(p)] = outcomes[k:k + n]
        k += n
    rows, walls = [], {}
    for p in mp.ops:
        gemm = (None, None, None)
        if p.planned is not None and p.planned.kernel is not None:
            kn = p.planned.kernel
            gemm = (kn.M, kn.N, kn.K)
        row = D.op_columns(p.op, gemm)
        if id(p) in by_op:
            outs = by_op[id(p)]
            advice = finish_advice(p.planned, outs)
            colors, sampled, wall = {}, [], {}
            for (i, _), o in zip(p.planned.points, outs):
                if o.ok:
                    c = p.planned.cands[i]
                    colors[c["scheme"]] = str(o.result.summary.get("scheme_color", ""))
                    if "sampling.sampled" in o.result.stats and o.result.stats.value("sampling.sampled"):
                        sampled.append((c["scheme"], c["variant"] or ""))
                    wall[str(o.path)] = float(o.result.meta.get("wall_s", 0.0))
            row.update(D.decide(advice.rows, colors, sampled))
            walls.update(wall)  # shared simulations once
        elif p.planned is None:
            row.update(D.decide([]), reason=p.reason)
        else:
            row.update(D.decide([]), status="over_budget",
                       reason=f"estimated {p.est_s / 60:.1f} CPU-minutes, beyond the budget")
        row["est_cpu_s"] = round(p.est_s, 1)
        rows.append(row)
    return rows, sum(walls.values())


def describe(mp: MapPlan) -> str:
    """The plan in words (``--list``)."""
    kept = mp.kept
    sims = sum(len(p.planned.points) for p in kept)
    lines = [f"{len(mp.ops)} operations: {len(kept)} to run ({sims} simulations, estimated "
             f"{sum(p.est_s for p in kept) / 3600:.2f} CPU-hours of a {mp.budget_s / 3600:.2f} budget), "
             f"{sum(1 for p in mp.ops if p.planned is not None and not p.run)} over the budget (estimated "
             f"{sum(p.est_s for p in mp.ops if p.planned is not None and not p.run) / 3600:.1f} CPU-hours), "
             f"{sum(1 for p in mp.ops if p.planned is None)} that no scheme can run"]
    for m, tp, why in mp.skipped:
        lines.append(f"skipped: {m.preset} TP={tp}: {why}")
    for p in mp.ops:
        if p.planned is None:
            lines.append(f"not runnable: {_label(p.op, '')}: {p.reason}")
    sampled = [p for p in kept if p.sampled]
    lines.append(f"sampled (simulation.sampling.mode=waves): {len(sampled)} operations run "
                 f"{sum(len(p.sampled) for p in sampled)} simulations sampled")
    for p in mp.ops:
        tag = "run " if p.run and p.planned is not None else ("over" if p.planned is not None else "n/a ")
        lines.append(f"  {tag} {_label(p.op, '').rstrip():70} {p.est_s / 60:8.1f} CPU-min"
                     + (f"  sampled: {len(p.sampled)}" if p.sampled else ""))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------------- command


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("decision-map", help="which overlap scheme wins where: machines x TP x direction x shape x tokens")
    p.add_argument("--quick", action="store_true", help="the quick map: a handful of points (about a minute at -j 2)")
    p.add_argument("--budget-cpu-h", type=float, metavar="H",
                   help=f"CPU-hours the simulations may cost by estimate (default {D.BUDGET_CPU_H}); cheapest first")
    p.add_argument("--list", action="store_true", help="print the plan and its estimated cost; simulate nothing")
    p.add_argument("--out", default="results", help="results root (default: results/; runs land in decision-map/)")
    p.add_argument("--csv", help="the CSV to write (default results/figures/decision-map.csv, -quick.csv with --quick)")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="local worker processes (default 1: in this process; 0: one per CPU)")
    p.add_argument("--force", action="store_true", help="simulate again points that already have results")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from t3sim.analysis.plotting import rows_csv
    from t3sim.analysis.tables import write_csv_atomic
    from t3sim.errors import check_writable_dir
    from t3sim.exec.progress import Progress

    if args.budget_cpu_h is not None and not args.budget_cpu_h > 0:
        raise InputError("--budget-cpu-h", str(args.budget_cpu_h), "a number of CPU-hours > 0")
    csv_path = Path(args.csv or f"results/figures/decision-map{'-quick' if args.quick else ''}.csv")
    if not args.list:
        check_writable_dir(csv_path.parent, "--csv")
    mp = plan_map(args.quick, args.budget_cpu_h)
    if args.list:
        sys.stdout.write(describe(mp))
        return 0
    rows, wall_s = run_map(mp, out=args.out, jobs=args.jobs, force=args.force, progress=Progress(sys.stderr))
    write_csv_atomic(csv_path, rows_csv(rows, D.COLUMNS))
    ok = [r for r in rows if r["status"] == "ok"]
    sys.stdout.write(f"{len(ok)} of {len(rows)} operations decided; their simulations cost {wall_s / 3600:.3f} "
                     f"CPU-hours (the runs' wall times), {sum(r['est_cpu_s'] for r in ok) / 3600:.3f} by estimate "
                     f"-> {csv_path}\n")
    return 0
