"""The simulation core and its runners: layers import downwards only, a point is resolved once, and the core
simulates points whole (the sampled modes and the sweep runner call it, never the other way round)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import t3sim.system.core as core
import t3sim.system.model as model
from t3sim.config.sweep import expand
from t3sim.exec.runner import run_points
from tests.conftest import REPO
from tests.system.helpers import exp, tiny_sweep

#: package -> the packages above it, which it must not import
ABOVE = {
    "system": ("exec", "sampling", "validation", "commands", "analysis"),
    "sampling": ("exec", "validation", "commands", "analysis"),
    "validation": ("exec", "sampling", "commands"),
    "exec": ("commands", "analysis", "validation"),
}


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


@pytest.mark.parametrize("package", sorted(ABOVE))
def test_packages_import_only_below_them(package):
    bad = [f"{f.name}: {m}" for f in sorted((REPO / "t3sim" / package).glob("*.py")) for m in _imports(f)
           if any(m == f"t3sim.{up}" or m.startswith(f"t3sim.{up}.") for up in ABOVE[package])]
    assert not bad


def test_core_refuses_a_sampled_point():
    with pytest.raises(ValueError, match="t3sim.exec.dispatch"):
        core.simulate(exp("workload.tokens=4096", "simulation.sampling.mode=waves"))


def test_a_sweep_resolves_each_point_once(tmp_path, monkeypatch):
    """Every point's kernel is made once, where the sweep is planned; the model takes it from the resolved point."""
    path = tmp_path / "tiny.yaml"
    path.write_text(tiny_sweep("tiny-resolve", ["sequential", "ideal_gemm_rs_overlap"]))
    points = expand(path)
    calls = []
    real = core.point_kernel
    monkeypatch.setattr(core, "point_kernel", lambda e: calls.append(e) or real(e))
    monkeypatch.setattr(model, "point_kernel", lambda e: pytest.fail("the model made the kernel again"))
    outcomes = run_points(points, out=tmp_path / "r")
    assert all(o.ok for o in outcomes) and len(calls) == len(points) == 4
