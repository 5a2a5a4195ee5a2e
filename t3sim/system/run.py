"""Run experiments: the Python API under ``t3sim run``.

``simulate(exp)`` runs one resolved point and returns a :class:`RunResult`;
``run_experiment(path, ...)`` expands an experiment file's sweep, reuses
finished points from the results store, simulates the rest and writes each
as soon as it finishes.
"""

from __future__ import annotations

import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Optional

from t3sim.config.experiment import ExperimentConfig
from t3sim.config.sweep import Point, expand
from t3sim.results.store import ResultStore, RunResult, load_run
from t3sim.schemes import scheme_for
from t3sim.system.model import SystemModel


def simulate(exp: ExperimentConfig) -> RunResult:
    """Simulate one resolved experiment point (its ``sweep`` must be empty)."""
    if exp.sweep.grid or exp.sweep.cases:
        raise ValueError("simulate() takes one point; expand the sweep first (t3sim.config.sweep.expand)")
    t0 = time.perf_counter()
    scheme = scheme_for(exp.scheme.kind)
    model = SystemModel(exp)
    phases = scheme.run(model)
    model.network.check_conserved()  # invariant: bytes sent == bytes received on every link
    stats = phases.stats()
    stats.merge("", model.stats())
    w = exp.workload
    summary = {"scheme": scheme.name, "model": w.model.name, "sublayer": w.sublayer, "tp": w.tp,
               "mode": exp.simulation.mode, **phases.summary()}
    for cat in ("gemm", "rs", "ag"):
        for kind in ("read", "write", "update"):
            name = f"gpu0.dram_traffic.{cat}.{kind}_bytes"
            summary[f"{cat}_{kind}_MB"] = round(stats.value(name) / 1e6, 6) if name in stats else 0.0
    meta = {"wall_s": round(time.perf_counter() - t0, 3), "host": platform.node(), "python": sys.version.split()[0]}
    return RunResult(exp.name, exp.model_dump(mode="json"), stats, summary, exp.simulation.seed, meta)


@dataclass
class PointOutcome:
    point: Point
    result: RunResult
    reused: bool
    path: Path


def run_experiment(path: str | Path, overrides: Iterable[str] = (), out: str | Path = "results",
                   force: bool = False, log=sys.stderr) -> List[PointOutcome]:
    """Run every point of an experiment file; finished points are reused unless ``force``."""
    points = expand(path, overrides)
    store = ResultStore(out)
    outcomes: List[PointOutcome] = []
    for i, p in enumerate(points, 1):
        resolved = p.config.model_dump(mode="json")
        found: Optional[Path] = None if force else store.find(p.config.name, resolved)
        tag = f"[{i}/{len(points)}] {p.label}"
        if found is not None:
            log.write(f"{tag}: already simulated, reusing {found} (use --force to recompute)\n")
            outcomes.append(PointOutcome(p, load_run(found), True, found))
            continue
        log.write(f"{tag}: simulating...\n")
        res = simulate(p.config)
        d = store.write(res)
        log.write(f"{tag}: done in {res.meta['wall_s']:.1f} s -> {d}\n")
        outcomes.append(PointOutcome(p, res, False, d))
    return outcomes
