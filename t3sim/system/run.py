"""Run experiments: the Python API under ``t3sim run``.

``simulate(exp)`` runs one resolved point and returns a :class:`RunResult`;
``simulate_shared(exps)`` runs points that need the same simulation (e.g.
Sequential and Ideal-GEMM-RS-Overlap of one sub-layer) once and returns one
result per point, each identical to its own ``simulate``;
``run_experiment(path, ...)`` expands an experiment file's sweep and hands
the points to :func:`t3sim.exec.run_points`, which reuses finished points
from the results store, simulates the rest (in this process, on a local
process pool or on a Dask cluster; one simulation per group of points that
share it) and writes each as soon as it finishes.
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from t3sim.config.experiment import ExperimentConfig
from t3sim.config.sweep import expand
from t3sim.exec.progress import Progress
from t3sim.exec.runner import PointOutcome, run_points, sharer_labels  # noqa: F401  (PointOutcome: re-exported)
from t3sim.memory.system import LookaheadPastEnd
from t3sim.results.store import RunResult, canonical_json
from t3sim.schemes.runtime import scheme_for
from t3sim.sim.engine import collect_earlier_garbage, peak_rss_MiB
from t3sim.system.model import SystemModel


#: top-level fields that name or describe a point and decide nothing simulated (both ``descriptive`` in
#: :class:`~t3sim.config.experiment.ExperimentConfig`): points differing only in these share a simulation
#: (``t3sim reproduce``: Fig. 19's points are also ``sweep-mca``'s and ``sweep-tracker``'s)
NOT_SIMULATED = ("name", "description")


def simulation_key(exp: ExperimentConfig) -> Tuple[str, str]:
    """What decides the simulation a resolved point needs: its scheme's ``simulation`` key and its config
    apart from ``scheme.kind`` and the :data:`NOT_SIMULATED` fields (canonical JSON). Points with equal keys
    run the identical simulation (:mod:`t3sim.schemes.runtime.base`); a scheme that cannot run keys on its own name,
    so it shares nothing."""
    scheme = scheme_for(exp.scheme.kind)
    cfg = exp.model_dump(mode="json")
    cfg["scheme"].pop("kind")
    for field in NOT_SIMULATED:
        cfg.pop(field)
    return (scheme.simulation if scheme.runnable else f"(cannot run) {scheme.name}", canonical_json(cfg))


def shared_groups(exps: Sequence[ExperimentConfig]) -> List[List[int]]:
    """Indices of ``exps`` grouped by :func:`simulation_key`: each group is one simulation.

    Groups are ordered by their first member, members in input order.
    """
    groups: Dict[Tuple[str, str], List[int]] = {}
    for i, e in enumerate(exps):
        groups.setdefault(simulation_key(e), []).append(i)
    return list(groups.values())


def simulate(exp: ExperimentConfig, timeline: bool = False) -> RunResult:
    """Simulate one resolved experiment point (its ``sweep`` must be empty).

    ``timeline``: also record a Chrome/Perfetto trace of the run (:mod:`t3sim.system.timeline`) into
    ``result.timeline``; tracing only observes, so the statistics are the same either way.
    """
    return simulate_shared([exp], timeline=timeline)[0]


def simulate_shared(exps: Sequence[ExperimentConfig], timeline: bool = False, probe=None) -> List[RunResult]:
    """Simulate resolved points that share one simulation once; one :class:`RunResult` per point, in order.

    The points must have the same :func:`simulation_key` (the same scheme ``simulation`` key and the same
    config apart from ``scheme.kind``, ``name`` and ``description``), e.g. a ``sequential`` and an
    ``ideal_gemm_rs_overlap`` point of one sub-layer, or one point in two experiment files; otherwise
    ValueError. One :class:`SystemModel` is built and simulated once; each point's
    scheme then composes the phase times (:attr:`Scheme.compose`), so every result -- ``stats.json``,
    ``summary.csv`` -- is exactly what :func:`simulate` of that point alone produces (the simulation is
    deterministic). Only ``meta`` tells: ``wall_s`` is the shared run's, and with more than one point
    ``meta["shared_simulation"]`` lists the schemes that shared it. ``timeline`` needs a single point.

    With ``simulation.sampling.mode`` other than ``off`` the points run as a sampled simulation
    (:func:`t3sim.system.sampled_run.simulate_sampled` by GEMM waves,
    :func:`t3sim.system.sampled_tables.simulate_tables` by embedding tables). ``probe(model)``: called with the
    built model before it runs (the sampling's detailed runs record their GEMM waves through it).
    """
    exps = list(exps)
    if not exps:
        raise ValueError("simulate_shared() needs at least one point")
    if exps[0].simulation.sampling.mode == "waves":
        from t3sim.system.sampled_run import simulate_sampled

        return simulate_sampled(exps, timeline=timeline)
    if exps[0].simulation.sampling.mode == "tables":
        from t3sim.system.sampled_tables import simulate_tables

        return simulate_tables(exps, timeline=timeline)
    for exp in exps:
        if exp.sweep.grid or exp.sweep.cases:
            raise ValueError("simulate() takes one point; expand the sweep first (t3sim.config.sweep.expand)")
    if timeline and len(exps) > 1:
        raise ValueError("a timeline traces one point; simulate_shared() got several")
    keys = [simulation_key(e) for e in exps]
    if any(k != keys[0] for k in keys[1:]):
        bad = next(i for i, k in enumerate(keys) if k != keys[0])
        why = (f"simulation {keys[bad][0]!r} vs {keys[0][0]!r}" if keys[bad][0] != keys[0][0]
               else "configs that differ apart from scheme.kind, name and description")
        raise ValueError(f"points do not share one simulation: {exps[0].scheme.kind} and {exps[bad].scheme.kind} "
                         f"need different ones ({why})")
    t0 = time.perf_counter()
    schemes = [scheme_for(e.scheme.kind) for e in exps]
    schemes[0].check_runnable()
    for exp, scheme in zip(exps, schemes):
        scheme.check_options(exp.scheme)
        scheme.check_direction(exp.workload)
    try:
        return _simulate_model(exps, schemes, timeline, probe, t0, lookahead=True)
    except LookaheadPastEnd as e:
        # the run ended with memory requests in flight that a lookahead had simulated past its end: the same
        # simulation at the reference pump cadence gives the statistics (tests/memory/test_lookahead.py)
        return _simulate_model(exps, schemes, timeline, probe, t0, lookahead=False, note=str(e))


def _simulate_model(exps, schemes, timeline: bool, probe, t0: float, lookahead: bool,
                    note: Optional[str] = None) -> List[RunResult]:
    """:func:`simulate_shared` after its checks: build the model, run it, collect the results (``lookahead``
    False: no memory lookahead whatever ``simulation.memory_lookahead`` says; ``note``: why, for ``meta``)."""
    collect_earlier_garbage()  # before the model is built, so that it reuses the memory earlier runs' garbage held
    model = SystemModel(exps[0])
    if not lookahead:
        for h in model.hiers.values():
            h.port.lookahead = False
    samples = None
    if timeline:
        from t3sim.system import timeline as tl

        model.trace = True
        samples = tl.start_sampler(model)
    if probe is not None:
        probe(model)
    run = schemes[0].simulate(model)
    raw = run.phases()
    model.network.check_conserved()  # invariant: bytes sent == bytes received on every link
    model_stats = model.stats()
    kernel_stats = run.stats()  # every kernel's launch and end, exposed communication, critical path
    wall_s = round(time.perf_counter() - t0, 3)
    results = []
    for exp, scheme in zip(exps, schemes):
        phases = scheme.compose(raw)
        stats = phases.stats()
        stats.merge("", kernel_stats)
        stats.merge("", model_stats)
        w = exp.workload
        summary = {"scheme": scheme.name, "scheme_label": scheme.label or scheme.name, "scheme_color": scheme.color,
                   "model": w.name, "sublayer": w.label, "tp": w.tp,
                   "mode": exp.simulation.mode, **phases.summary(), **traffic_summary(stats)}
        # the simulating process's peak resident memory so far (MiB; a pool worker's: over the points it ran)
        meta = {"wall_s": wall_s, "host": platform.node(), "python": sys.version.split()[0],
                "peak_rss_MiB": round(peak_rss_MiB(), 1)}
        if note is not None:
            meta["memory_lookahead"] = f"re-run without: {note}"
        if len(exps) > 1:
            meta["shared_simulation"] = sharer_labels(exps)
        trace = tl.build(model, stats, samples) if timeline else None
        results.append(RunResult(exp.name, exp.model_dump(mode="json"), stats, summary, exp.simulation.seed, meta,
                                 trace))
    return results


def traffic_summary(stats) -> Dict[str, float]:
    """summary.csv's DRAM traffic columns (MB, paper Fig. 18 categories) from a run's statistics."""
    out = {}
    for cat in ("gemm", "rs", "ag"):
        for kind in ("read", "write", "update"):
            name = f"gpu0.dram_traffic.{cat}.{kind}_bytes"
            out[f"{cat}_{kind}_MB"] = round(stats.value(name) / 1e6, 6) if name in stats else 0.0
    return out


def run_experiment(path: str | Path, overrides: Iterable[str] = (), out: str | Path = "results",
                   force: bool = False, log=None, *, jobs: int = 1, executor: str = "local",
                   scheduler: Optional[str] = None, fail_fast: bool = False,
                   progress: Optional[Progress] = None) -> List[PointOutcome]:
    """Run every point of an experiment file; outcomes in point order (see :func:`t3sim.exec.run_points`).

    Finished points are reused unless ``force``; the rest run in this process
    (``jobs=1``), on ``jobs`` local processes (0 = one per CPU) or, with
    ``executor="dask"``, on the Dask cluster at ``scheduler``; each result is
    written as soon as it lands. Progress goes to ``progress``, or to the
    stream ``log`` if given, else nowhere. A point that fails comes back as an
    outcome with ``error`` set; the others still run unless ``fail_fast``.
    """
    points = expand(path, overrides)
    if progress is None and log is not None:
        progress = Progress(log)
    return run_points(points, out=out, force=force, jobs=jobs, executor=executor, scheduler=scheduler,
                      fail_fast=fail_fast, progress=progress)
