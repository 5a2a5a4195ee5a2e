"""Sampled simulation of an embedding-bag layer by its tables (``simulation.sampling.mode: tables``).

An embedding-bag layer (:mod:`t3sim.config.embedding`) is ``tables_per_gpu`` copies of one table's work: the same
bags, the same pooling, the same share of the all-to-all. Under a scheme whose kernels repeat table by table (the
baseline's one pooling kernel per table, then one all-to-all of all pooled vectors), its cost grows by a fixed
amount per table once past its start-up (the first kernels' cold caches and empty queues), so a layer of many
tables is the line through runs of fewer tables. This is the kernel-level reading of the sampling methods
:mod:`t3sim.sampling.plan` cites (PKA, Accel-Sim's kernel sampling: simulate until the rate is stable, project
the rest at that rate; TBPoint: simulate one representative of a homogeneous group): here the homogeneous units are
whole tables, and a detailed run is the layer cut to its first tables, which is what the full layer runs first.

Which schemes: each declares it (:attr:`t3sim.schemes.runtime.base.Scheme.table_sampling`: "" or why not); the others are
simulated whole, and ``sampling.note`` gives the reason (so one sweep may mix schemes, as a too-small layer is
simulated whole too). The fused kernel is declined: it orders its remote slices destination by destination, so
during each destination's share one link carries all of its stores, the link's backlog (and the fences that wait
on it) grows with the layer, and its time per table keeps changing (batch 256: the same per-table rate, 3.59-3.60
us, from runs of 9, 22 and 35 tables, whose last rounds of the 832-WG grid end alike, yet 3.77 us from 35 to 256
tables; a whole 256-table run is 4.1 % above the extrapolation although the criterion held).

What a sampled run does (:func:`simulate_tables`):

1. **Detailed runs** of the layer cut to ``d/4``, ``d/2`` and ``d`` tables per GPU (``d = detail_tables``), every
   other field as given (the batch, the per-table kernels and the library all-to-all).
2. **Steady state**: every phase time (``time.gemm_us``, ``time.rs_us``, ``time.ag_us``: the pooling and the
   all-to-all of these schemes) and the total, extrapolated to the full table count on the line through the two
   smaller and through the two larger runs, differ by at most ``tolerance_pct`` percent of the second total
   (:func:`t3sim.sampling.plan.extrapolate`; the per-table rates agree as the layer grows). If not, the tables
   double (``d/2``, ``d``, ``2d``: the two larger runs are kept) up to ``max_detail_tables``; when the next run
   would reach the layer, or the detailed runs would hold as many tables as the layer, it is simulated whole
   (``sampling.sampled`` false); a run that stops at ``max_detail_tables`` is extrapolated with
   ``sampling.criterion_met`` false.
3. **Extrapolation**: every additive statistic (times, bytes, counts, cycles; kernel start times too: on this
   line a kernel that starts after the pooling starts where the extrapolated pooling ends) is the value on the
   line through the two larger runs at the full table count (:func:`t3sim.sampling.plan.extrapolate_stats`);
   statistics that do not add up (means, maxima, rates, ratios, histograms, text) are the largest run's. Every
   description says which, and ``sampling.*`` records the detailed runs, the criterion and the per-table rates.

Error against whole 256-table runs (the fused-a2a node and the 2-node preset): experiments/fused-a2a/README.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import List, Sequence, Tuple, Union

from t3sim.config.experiment import ExperimentConfig
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.sampling.plan import (FIELD, detailed_events, detailed_stats, extrapolate, extrapolate_stats, result,
                                 sampling_header)
from t3sim.sim.clock import TICKS_PER_US
from t3sim.system.core import Resolved, resolve, simulate_shared, traffic_summary

PHASES = ("gemm", "rs", "ag")


@dataclass
class TableRun:
    """One detailed run of the layer cut to ``tables`` tables per GPU."""

    tables: int
    results: list  #: RunResult per point
    phases: Tuple[int, ...]  #: gemm, rs, ag, total (ticks)
    wall_s: float = 0.0
    difference_pct: float = float("inf")  #: the criterion with this run the largest of three (inf: not checked)


def tables_of(exp: ExperimentConfig) -> int:
    """Tables per GPU of the full layer (InputError for a workload that is not an embedding-bag layer)."""
    w = exp.workload
    if w.kind != "embedding_bag":
        raise InputError(FIELD, f"tables with a {w.kind} workload, which has no tables",
                         "sampling.mode tables with a workload.embedding_bag layer (waves for a model sub-layer or "
                         "a workload.gemm shape)")
    return w.embedding_bag.tables_per_gpu


def with_tables(exp: ExperimentConfig, tables: int) -> ExperimentConfig:
    """``exp`` with ``tables`` tables per GPU and sampling off (one detailed run)."""
    d = exp.model_dump(mode="json", exclude_unset=True)
    d.setdefault("simulation", {})["sampling"] = {"mode": "off"}
    d["workload"].setdefault("embedding_bag", exp.workload.embedding_bag.model_dump(mode="json"))
    d["workload"]["embedding_bag"]["tables_per_gpu"] = tables
    try:
        return ExperimentConfig.model_validate(d)
    except ValueError as exc:
        raise InputError(FIELD, f"tables, but the layer cut to {tables} tables per GPU is invalid "
                                f"({' '.join(str(exc).split())[:300]})", "simulation.sampling.mode=off") from None


@dataclass(frozen=True)
class TablePlan:
    """How a sampled run by tables cuts the layer."""

    tables: int  #: tables per GPU of the full layer
    declined: str  #: why the scheme cannot be sampled by tables ("" if it can: its work repeats table by table)


def plan(point: Union[Resolved, ExperimentConfig]) -> TablePlan:
    """The plan of a point sampled by tables (InputError for a workload that is not an embedding-bag layer);
    ``point``: resolved (:func:`t3sim.system.core.resolve`: its scheme) or its config, resolved here."""
    exp = point.exp if isinstance(point, Resolved) else point
    full = tables_of(exp)
    r = point if isinstance(point, Resolved) else resolve(exp)
    return TablePlan(full, r.scheme.table_sampling)


def ladder(detail_tables: int) -> List[int]:
    """Tables of the three first detailed runs: a quarter, a half and all of ``detail_tables``."""
    return [detail_tables // 4, detail_tables // 2, detail_tables]


def criterion(phases: Sequence[Sequence[int]], tables: Sequence[int], full: int) -> float:
    """The largest difference, in percent of the second total, between a phase (or the total) extrapolated to
    ``full`` tables from runs 0-1 and from runs 1-2 (``phases[i]``: run ``i``'s phases and total, ticks)."""
    a, b, c = phases
    ta, tb, tc = tables
    first = [Fraction(extrapolate(x, y, ta, tb, full)) for x, y in zip(a, b)]
    second = [Fraction(extrapolate(y, z, tb, tc, full)) for y, z in zip(b, c)]
    if second[-1] <= 0:
        return float("inf")
    return float(max(abs(y - x) for x, y in zip(first, second)) / second[-1] * 100)


def _whole_next(tables: Sequence[int], full: int) -> bool:
    """Whether the next doubling would reach the layer or simulate at least as many tables as it holds."""
    nxt = 2 * tables[-1]
    return nxt >= full or sum(tables) + nxt >= full


def detailed_configs(point: Union[Resolved, ExperimentConfig]) -> List[ExperimentConfig]:
    """The largest runs a sampled point may simulate (for :mod:`t3sim.exec.checks`): the doubling's largest
    detailed run, and the whole layer when the doubling may end in a full simulation. ``point``: resolved (with
    its plan) or a config."""
    exp = point.exp if isinstance(point, Resolved) else point
    p = point.plan if isinstance(point, Resolved) and point.plan is not None else plan(point)
    s = exp.simulation.sampling
    full = p.tables
    runs = ladder(s.detail_tables)
    if runs[-1] >= full or p.declined:
        return [with_tables(exp, full)]
    while 2 * runs[-1] <= s.max_detail_tables:
        if _whole_next(runs, full):
            return [with_tables(exp, runs[-1]), with_tables(exp, full)]
        runs.append(2 * runs[-1])
    return [with_tables(exp, runs[-1])]


def _detailed(points: Sequence[Resolved], tables: int) -> TableRun:
    t0 = time.perf_counter()
    results = simulate_shared([with_tables(e.exp, tables) for e in points])
    st = results[0].stats
    ph = tuple(int(round(st.value(f"time.{p}_us") * TICKS_PER_US)) for p in PHASES + ("total",))
    return TableRun(tables, results, ph, time.perf_counter() - t0)


def simulate_tables(points: Sequence[Resolved], timeline: bool = False) -> list:
    """Simulate resolved points sharing one simulation with ``simulation.sampling.mode: tables`` (module doc;
    each point's ``plan``: its :class:`TablePlan`); one :class:`~t3sim.results.store.RunResult` per point, as
    :func:`t3sim.system.core.simulate_resolved`."""
    if timeline:
        raise InputError(FIELD, "tables with --timeline (a timeline traces one detailed simulation)",
                         "simulation.sampling.mode=off for a timeline")
    t0 = time.perf_counter()
    exp = points[0].exp
    s = exp.simulation.sampling
    full = points[0].plan.tables
    why = points[0].plan.declined
    if why:
        return _whole(points, full, [], f"sampling by tables declined for scheme.kind={exp.scheme.kind}: {why}", t0)
    tables = ladder(s.detail_tables)
    if tables[-1] >= full:
        return _whole(points, full, [], f"the layer has {full} tables per GPU, not more than the {tables[-1]} of the "
                                      "largest first detailed run", t0)
    runs = [_detailed(points, t) for t in tables]
    while True:
        last = runs[-3:]
        runs[-1].difference_pct = criterion([r.phases for r in last], [r.tables for r in last], full)
        if runs[-1].difference_pct <= s.tolerance_pct or 2 * runs[-1].tables > s.max_detail_tables:
            break
        if _whole_next([r.tables for r in runs], full):
            return _whole(points, full, runs, f"the per-table rates did not agree with {runs[-1].tables} tables "
                                            f"({runs[-1].difference_pct:.2f} % > {s.tolerance_pct:g} %) and the next "
                                            "doubling would simulate at least as many tables as the layer", t0)
        runs.append(_detailed(points, 2 * runs[-1].tables))
    return _extrapolated(points, full, runs, t0)


def _sampling_stats(exp, full: int, runs: List[TableRun], sampled: bool, note: str) -> Stats:
    s = exp.simulation.sampling
    out = sampling_header(s.mode, sampled, note, "tables", "the embedding-bag layer's pooling and all-to-all, by tables",
                          f"every phase and the total extrapolated to the full table count from the two smaller and "
                          f"from the two larger of the last three detailed runs within {s.tolerance_pct:g} % of the "
                          "second total", "t3sim/sampling/tables.py")
    out.add("tables", full, "count", "tables per GPU of the full layer")
    for i, r in enumerate(runs):
        out.add(f"detailed.run{i}.tables", r.tables, "count", f"tables per GPU of detailed run {i}")
        detailed_stats(out, i, [(p, f"{p} time of detailed run {i}") for p in PHASES + ("total",)], r.phases, r.wall_s)
        if r.difference_pct != float("inf"):
            out.add(f"detailed.run{i}.rate_difference_pct", r.difference_pct, "%",
                    f"the criterion with runs {i - 2}-{i}, percent of the total")
    detailed_events(out, runs)
    if not sampled:
        return out
    b, c = runs[-2], runs[-1]
    out.add("tables_detailed", c.tables, "count", "tables per GPU of the larger run extrapolated from")
    out.add("tables_extrapolated", full - c.tables, "count", "tables per GPU advanced at the per-table rates")
    out.add("criterion_met", c.difference_pct <= s.tolerance_pct, "bool", "the steady-state criterion held")
    out.add("rate_difference_pct", c.difference_pct, "%", "the criterion: largest difference between the phases "
                                                         "(and totals) extrapolated from the two smaller and from "
                                                         "the two larger runs, percent of the total")
    for p, v0, v1 in zip(PHASES + ("total",), b.phases, c.phases):
        out.add(f"rate.{p}_us_per_table", float(Fraction(v1 - v0, c.tables - b.tables)) / TICKS_PER_US, "us/table",
                f"{p} time per added table per GPU (the steady-state rate)")
    return out


def _whole(points: Sequence[Resolved], full: int, runs: List[TableRun], note: str, t0: float) -> list:
    """Simulate the layer whole (sampling declined), recording why."""
    out = []
    for point, res in zip(points, simulate_shared([with_tables(e.exp, full) for e in points])):
        exp = point.exp
        st = Stats()
        st.merge("", res.stats)
        st.merge("sampling", _sampling_stats(exp, full, runs, False, note))
        out.append(result(exp, res, st, dict(res.summary),
                           {"wall_s": round(time.perf_counter() - t0, 3), "sampled": False}))
    return out


def _extrapolated(points: Sequence[Resolved], full: int, runs: List[TableRun], t0: float) -> list:
    b, c = runs[-2], runs[-1]
    s = points[0].exp.simulation.sampling
    label = f"detailed runs of {b.tables} and {c.tables} of {full} tables per GPU"
    note = "extrapolated" + ("" if c.difference_pct <= s.tolerance_pct else " although the steady-state criterion "
                                                                           "failed")
    out = []
    for i, point in enumerate(points):
        exp = point.exp
        sb, sc = b.results[i].stats, c.results[i].stats
        starts = {n: (extrapolate(sb.value(n), st.value, b.tables, c.tables, full), "extrapolated to the full table "
                      "count (a kernel's start moves with the phases before it)")
                  for n, st in sc.items() if n.startswith("kernels.") and n.endswith(".start_us") and n in sb}
        ext = extrapolate_stats(sb, sc, b.tables, c.tables, full, label, starts, unit="tables")
        st = Stats()
        for name, v in ext.items():
            if name == "sim.events":
                v = type(v)(sum(int(r.results[i].stats.value(name)) for r in runs), v.unit,
                            "simpy events processed [sampled: summed over all detailed runs, not extrapolated]")
            st.add(name, v.value, v.unit, v.description)
        st.merge("sampling", _sampling_stats(exp, full, runs, True, note))
        summary = {**c.results[i].summary, **{f"{p}_us": round(st.value(f"time.{p}_us"), 6)
                                               for p in PHASES + ("total",)}, **traffic_summary(st)}
        out.append(result(exp, c.results[i], st, summary,
                           {"wall_s": round(time.perf_counter() - t0, 3), "sampled": True}))
    return out
