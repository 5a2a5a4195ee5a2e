"""What runs a point: the simulation core whole, or one of the sampled modes (``simulation.sampling.mode``).

``resolve(exp)`` resolves a point once into what it runs (:class:`~t3sim.system.core.Resolved`: config,
scheme, GEMM kernel and, for a sampled mode, its plan); ``run(points)`` hands resolved points that share one
simulation to the core (:func:`t3sim.system.core.simulate_resolved`) or to the sampled mode
(:mod:`t3sim.sampling`), which runs its detailed runs through the core. ``simulate`` and ``simulate_shared``
are the same for configs: the Python API for a point of any mode.
"""

from __future__ import annotations

import dataclasses
from typing import List, Sequence

from t3sim.config.experiment import ExperimentConfig
from t3sim.results.store import RunResult
from t3sim.sampling import plan as waves_plan
from t3sim.sampling import tables, waves
from t3sim.system import core


def resolve(exp: ExperimentConfig) -> core.Resolved:
    """``exp`` resolved into what it runs (:func:`t3sim.system.core.resolve`), with the sampling plan of its mode.
    Raises :class:`~t3sim.errors.InputError` for a point that cannot be resolved (a workload the mode cannot
    cut is reported before its kernel is made)."""
    mode = exp.simulation.sampling.mode
    if mode == "waves":
        waves_plan.rows_of(exp)  # a workload that cannot be cut: the sampling's error, not its kernel's
        r = core.resolve(exp)
        return dataclasses.replace(r, plan=waves_plan.plan(r))
    if mode == "tables":
        tables.tables_of(exp)
        r = core.resolve(exp)
        return dataclasses.replace(r, plan=tables.plan(r))
    return core.resolve(exp)


def run(points: Sequence[core.Resolved], timeline: bool = False) -> List[RunResult]:
    """Simulate resolved points that share one simulation (:func:`t3sim.system.core.shared_groups`) by their
    mode; one :class:`RunResult` per point, in order."""
    mode = points[0].exp.simulation.sampling.mode if points else "off"
    if mode == "waves":
        return waves.simulate_sampled(points, timeline=timeline)
    if mode == "tables":
        return tables.simulate_tables(points, timeline=timeline)
    return core.simulate_resolved(points, timeline=timeline)


def simulate(exp: ExperimentConfig, timeline: bool = False) -> RunResult:
    """Simulate one point of any ``simulation.sampling.mode`` (:func:`t3sim.system.core.simulate` for ``off``)."""
    point = resolve(exp)
    return run([point], timeline=timeline)[0]


def simulate_shared(exps: Sequence[ExperimentConfig], timeline: bool = False) -> List[RunResult]:
    """Simulate points of any mode that share one simulation once (:func:`t3sim.system.core.simulate_shared`)."""
    points = [resolve(e) for e in exps]
    return run(points, timeline=timeline)
