"""Shared helpers for the scheme tests."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence, Tuple

from t3sim.config import load_experiment
from t3sim.schemes.runtime import scheme_for
from t3sim.schemes.runtime.program import Phases
from t3sim.system.model import SystemModel


def run_experiment(path: Path, base: Sequence[str], overrides: Sequence[str]) -> Tuple[SystemModel, Phases]:
    """Run the scheme of experiment config ``path`` with the overrides ``base`` then ``overrides`` on a fresh
    system model, and check that the network conserved every byte; returns the model and the scheme's phases."""
    m = SystemModel(load_experiment(path, [*base, *overrides]))
    phases = scheme_for(m.exp.scheme.kind).run(m)
    m.network.check_conserved()
    return m, phases
