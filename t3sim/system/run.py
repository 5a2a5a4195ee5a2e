"""Run experiments: the Python API under ``t3sim run``.

``simulate(exp)`` runs one resolved point and returns a :class:`RunResult`;
``run_experiment(path, ...)`` expands an experiment file's sweep and hands
the points to :func:`t3sim.exec.run_points`, which reuses finished points
from the results store, simulates the rest (in this process, on a local
process pool or on a Dask cluster) and writes each as soon as it finishes.
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path
from typing import Iterable, List, Optional

from t3sim.config.experiment import ExperimentConfig
from t3sim.config.sweep import expand
from t3sim.exec.progress import Progress
from t3sim.exec.runner import PointOutcome, run_points  # noqa: F401  (PointOutcome: re-exported)
from t3sim.results.store import RunResult
from t3sim.schemes import scheme_for
from t3sim.system.model import SystemModel


def simulate(exp: ExperimentConfig, timeline: bool = False) -> RunResult:
    """Simulate one resolved experiment point (its ``sweep`` must be empty).

    ``timeline``: also record a Chrome/Perfetto trace of the run (:mod:`t3sim.system.timeline`) into
    ``result.timeline``; tracing only observes, so the statistics are the same either way.
    """
    if exp.sweep.grid or exp.sweep.cases:
        raise ValueError("simulate() takes one point; expand the sweep first (t3sim.config.sweep.expand)")
    t0 = time.perf_counter()
    scheme = scheme_for(exp.scheme.kind)
    model = SystemModel(exp)
    samples = None
    if timeline:
        from t3sim.system import timeline as tl

        model.trace = True
        samples = tl.start_sampler(model)
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
    trace = tl.build(model, stats, samples) if timeline else None
    return RunResult(exp.name, exp.model_dump(mode="json"), stats, summary, exp.simulation.seed, meta, trace)


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
