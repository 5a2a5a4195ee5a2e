"""Expand an experiment's sweep into validated run points.

A point is the experiment with one assignment of every sweep axis applied as
an override and the ``sweep`` section emptied. ``grid`` axes are crossed;
each ``cases`` entry is crossed with the grid. Points keep the experiment's
name, so all of them land under ``results/<experiment>/``; each gets its own
config hash. Order is deterministic: cases in file order, grid axes in file
order with the last axis varying fastest.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Tuple

from t3sim.config.experiment import ExperimentConfig
from t3sim.config.kinds import expect_kind
from t3sim.config.loader import apply_overrides, build, load_raw, set_path


@dataclass(frozen=True)
class Point:
    """One run of an experiment: its label (the axis assignments), its config and the file it came from."""

    label: str
    config: ExperimentConfig
    source: str = ""


def _assignments(sweep: Dict[str, Any]) -> List[List[Tuple[str, Any]]]:
    grid = sweep.get("grid") or {}
    cases = sweep.get("cases") or [{}]
    axes = list(grid.items())
    combos = list(itertools.product(*[[(k, v) for v in vals] for k, vals in axes])) if axes else [()]
    return [list(case.items()) + list(combo) for case in cases for combo in combos]


def expand(path: str | Path, overrides: Iterable[str] = ()) -> List[Point]:
    """Load an experiment file and return its validated points (one if it has no sweep)."""
    data, prov = load_raw(path)
    expect_kind(data, "experiment", str(path))
    data, prov = apply_overrides(data, prov, overrides)
    base = build(ExperimentConfig, data, prov, str(path))  # validates the sweep section too
    sweep = base.sweep.model_dump()
    points = []
    for assign in _assignments(sweep):
        d = json.loads(json.dumps(data))
        d.pop("sweep", None)
        p = dict(prov)
        for key, value in assign:
            where = prov.get(("sweep",), str(path))
            set_path(d, tuple(key.split(".")), value, f"{where}: sweep {key}")
            p[tuple(key.split("."))] = f"{where}: sweep {key}={value!r}"
        label = ",".join(f"{k}={v}" for k, v in assign) or "base"
        points.append(Point(label, build(ExperimentConfig, d, p, str(path)), str(path)))
    return points
