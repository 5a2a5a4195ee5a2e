"""Helpers for whole-system tests: build experiment configs in code and simulate pieces of them."""

from __future__ import annotations

from t3sim.config import load_experiment
from t3sim.system.model import SystemModel

from tests.conftest import REPO

DEFAULT = REPO / "configs/experiments/default.yaml"


def exp(*overrides: str):
    return load_experiment(DEFAULT, list(overrides))


def gemm_only(e):
    """Simulate just the workload's GEMM on GPU 0; returns (GemmRun, model)."""
    m = SystemModel(e)
    done = m.gemm()
    done.callbacks.append(lambda _e: m.engine.finish())
    m.engine.run()
    return done.value[next(iter(done.value))], m
