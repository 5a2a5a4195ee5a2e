"""The simulation core: build one system model from a resolved point and run it.

``resolve(exp)`` turns a point (its sweep expanded) into what it runs: a :class:`Resolved` -- the config, its
scheme and its GEMM kernel (:func:`t3sim.system.kernels.point_kernel`, the one place a config becomes its
kernel); a sampled mode adds its plan (:mod:`t3sim.sampling`).

``simulate(exp)`` runs one point in full detail and returns a :class:`RunResult`;
``simulate_shared(exps)`` runs points that need the same simulation (e.g.
Sequential and Ideal-GEMM-RS-Overlap of one sub-layer) once and returns one
result per point, each identical to its own ``simulate``; ``simulate_resolved``
does the same for points already resolved. ``shared_groups`` groups points by
the simulation they need.

The core runs every point as given: the runners above it (:mod:`t3sim.sampling`'s
detailed runs, :mod:`t3sim.exec`'s sweeps and its choice between the detailed
and the sampled modes) call it, never the other way round. A point with
``simulation.sampling.mode`` other than ``off`` runs through
:func:`t3sim.exec.dispatch.simulate`.
"""

from __future__ import annotations

import platform
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from t3sim.config.experiment import ExperimentConfig
from t3sim.memory.system import LookaheadPastEnd
from t3sim.results.store import RunResult, canonical_json
from t3sim.schemes.runtime import Scheme, scheme_for
from t3sim.sim.engine import collect_earlier_garbage, peak_rss_MiB
from t3sim.system import timeline as tl
from t3sim.system.kernels import point_kernel
from t3sim.system.model import SystemModel
from t3sim.workload.trace import KernelRecord


#: top-level fields that name or describe a point and decide nothing simulated (both ``descriptive`` in
#: :class:`~t3sim.config.experiment.ExperimentConfig`): points differing only in these share a simulation
#: (``t3sim reproduce``: Fig. 19's points are also ``sweep-mca``'s and ``sweep-tracker``'s)
NOT_SIMULATED = ("name", "description")


@dataclass(frozen=True)
class Resolved:
    """What one point runs, resolved once and handed down to whatever runs it (picklable: it crosses to
    worker processes)."""

    exp: ExperimentConfig  #: the point (its sweep expanded)
    scheme: Scheme  #: its ``scheme.kind``
    kernel: KernelRecord  #: the GEMM kernel it runs (:func:`~t3sim.system.kernels.point_kernel`)
    #: how a sampled mode cuts it (:mod:`t3sim.sampling`: a waves ``Plan`` or a tables ``TablePlan``); None: the
    #: point is simulated whole, by this module
    plan: Any = None


def resolve(exp: ExperimentConfig) -> Resolved:
    """``exp`` resolved into its scheme and kernel (no sampling plan: :func:`t3sim.exec.dispatch.resolve` adds
    it). Raises :class:`~t3sim.errors.InputError` for an unknown scheme or a workload without a kernel."""
    return Resolved(exp, scheme_for(exp.scheme.kind), point_kernel(exp))


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


def sharer_labels(configs: Sequence[ExperimentConfig]) -> List[str]:
    """How the points of one shared simulation are named (``meta.shared_simulation``, the progress log): their
    scheme kinds, each as ``experiment:kind`` where the points come from more than one experiment file."""
    one = len({c.name for c in configs}) == 1
    return [c.scheme.kind if one else f"{c.name}:{c.scheme.kind}" for c in configs]


def simulate(exp: ExperimentConfig, timeline: bool = False) -> RunResult:
    """Simulate one resolved experiment point in full detail (its ``sweep`` must be empty).

    ``timeline``: also record a Chrome/Perfetto trace of the run (:mod:`t3sim.system.timeline`) into
    ``result.timeline``; tracing only observes, so the statistics are the same either way.
    """
    point = resolve(exp)
    return simulate_resolved([point], timeline=timeline)[0]


def simulate_shared(exps: Sequence[ExperimentConfig], timeline: bool = False, probe=None) -> List[RunResult]:
    """:func:`simulate_resolved` of ``exps``, each resolved (:func:`resolve`)."""
    return simulate_resolved([resolve(e) for e in exps], timeline=timeline, probe=probe)


def simulate_resolved(points: Sequence[Resolved], timeline: bool = False, probe=None) -> List[RunResult]:
    """Simulate resolved points that share one simulation once; one :class:`RunResult` per point, in order.

    The points must have the same :func:`simulation_key` (the same scheme ``simulation`` key and the same
    config apart from ``scheme.kind``, ``name`` and ``description``), e.g. a ``sequential`` and an
    ``ideal_gemm_rs_overlap`` point of one sub-layer, or one point in two experiment files; otherwise
    ValueError. One :class:`SystemModel` is built (with the first point's kernel) and simulated once; each
    point's scheme then composes the phase times (:attr:`Scheme.compose`), so every result -- ``stats.json``,
    ``summary.csv`` -- is exactly what :func:`simulate` of that point alone produces (the simulation is
    deterministic). Only ``meta`` tells: ``wall_s`` is the shared run's, and with more than one point
    ``meta["shared_simulation"]`` lists the schemes that shared it. ``timeline`` needs a single point.

    Points with ``simulation.sampling.mode`` other than ``off`` are refused (ValueError): the sampled modes
    (:mod:`t3sim.sampling`) call this function for their detailed runs. ``probe(model)``: called with the
    built model before it runs (the sampling's detailed runs record their GEMM waves through it).
    """
    points = list(points)
    if not points:
        raise ValueError("simulate_shared() needs at least one point")
    exps = [r.exp for r in points]
    mode = exps[0].simulation.sampling.mode
    if mode != "off":
        raise ValueError(f"simulation.sampling.mode={mode}: a sampled point runs through "
                         "t3sim.exec.dispatch.simulate (t3sim.sampling); the core simulates points whole")
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
    schemes = [r.scheme for r in points]
    schemes[0].check_runnable()
    for exp, scheme in zip(exps, schemes):
        scheme.check_options(exp.scheme)
        scheme.check_direction(exp.workload)
    try:
        return _simulate_model(points, timeline, probe, t0, lookahead=True)
    except LookaheadPastEnd as e:
        # the run ended with memory requests in flight that a lookahead had simulated past its end: the same
        # simulation at the reference pump cadence gives the statistics (tests/memory/test_lookahead.py)
        return _simulate_model(points, timeline, probe, t0, lookahead=False, note=str(e))


def _simulate_model(points: Sequence[Resolved], timeline: bool, probe, t0: float, lookahead: bool,
                    note: Optional[str] = None) -> List[RunResult]:
    """:func:`simulate_resolved` after its checks: build the model, run it, collect the results (``lookahead``
    False: no memory lookahead whatever ``simulation.memory_lookahead`` says; ``note``: why, for ``meta``)."""
    exps = [r.exp for r in points]
    schemes = [r.scheme for r in points]
    shared = sharer_labels(exps) if len(exps) > 1 else None
    collect_earlier_garbage()  # before the model is built, so that it reuses the memory earlier runs' garbage held
    model = SystemModel(exps[0], kernel=points[0].kernel)
    if not lookahead:
        for h in model.hiers.values():
            h.port.lookahead = False
    samples = None
    if timeline:
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
        if shared is not None:
            meta["shared_simulation"] = shared
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
